//! The front-end API of the runtime, as the TUI sees it.

pub use crate::runtime::{SessionHandle, SessionInfo};
