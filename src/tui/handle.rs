//! The front-end API of the runtime, as the TUI sees it.
//!
//! These mirror `runtime::SessionHandle` / `runtime::SessionInfo` field for field so the
//! TUI can be built and tested before the runtime lands; once it does, this file becomes
//! `pub use crate::runtime::{SessionHandle, SessionInfo};`.

use crate::protocol::{AgentId, ApprovalPolicy, Event, Op};
use std::path::PathBuf;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

pub struct SessionHandle {
    pub ops: UnboundedSender<Op>,
    pub events: UnboundedReceiver<Event>,
    pub info: SessionInfo,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SessionInfo {
    pub session_id: String,
    pub workspace: PathBuf,
    pub model: String,
    pub approval: ApprovalPolicy,
    /// The active persona at start.
    pub role: String,
    pub root_agent: AgentId,
}
