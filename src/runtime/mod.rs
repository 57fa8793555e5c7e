//! The headless core. A session owns the agent tree, the active persona, the approval gate
//! and the event log; each agent runs in its own tokio task. Front ends reach it only
//! through [`SessionHandle`]: `Op`s in, `Event`s out.

mod agent;
pub mod agent_tools;
pub mod approval;
mod events;
mod memory;
mod registry;
mod session;
mod shared;
mod turn;

pub use events::EventSink;
pub use registry::{AgentEntry, AgentStats};
pub use session::{RuntimeError, SessionOptions, start_session};
pub use shared::Shared;
pub use turn::clip;

use crate::protocol::{AgentId, ApprovalPolicy, Event, Op};
use std::path::PathBuf;
use tokio::sync::mpsc;

/// What a front end holds: a way to send `Op`s and the stream of `Event`s.
pub struct SessionHandle {
    pub ops: mpsc::UnboundedSender<Op>,
    pub events: mpsc::UnboundedReceiver<Event>,
    pub info: SessionInfo,
}

#[derive(Clone, Debug)]
pub struct SessionInfo {
    pub session_id: String,
    pub workspace: PathBuf,
    pub model: String,
    pub approval: ApprovalPolicy,
    /// The active persona when the session started (or resumed).
    pub role: String,
    pub root_agent: AgentId,
    /// Where the session log is written, if anywhere.
    pub log_path: Option<PathBuf>,
}
