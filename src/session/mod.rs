//! The session log: every event of a session as JSON lines, one file per session, so a
//! session can be listed, inspected and resumed.

mod listing;
mod log;
mod prompts;
mod replay;
mod store;
mod writer;

pub use listing::{Shown, listing};
pub use log::{SessionLog, read_events};
pub use prompts::{PROMPT_HISTORY_CAP, PromptHistory};
pub use replay::{PendingMail, PendingMessage, ReplayedAgent, ReplayedSession, replay};
pub use store::{SessionMeta, SessionStore, StoreError};
pub use writer::LogWriter;
