//! What a front end holds of a session ([`SessionHandle`]: `Op`s in, `Event`s out, and
//! what the session is, [`SessionInfo`]) and what it starts one from ([`SessionOptions`]).

use crate::config::Config;
use crate::model::ModelClient;
use crate::protocol::{AgentId, ApprovalPolicy, Event, Op};
use crate::roles::RoleSet;
use crate::session::SessionStore;
use crate::tools::ToolRegistry;
use std::path::PathBuf;
use std::sync::Arc;
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
    /// The last `seq` read back from the log of a resumed session (0 for a new one):
    /// events up to it are history, not news.
    pub replayed_seq: u64,
    /// Prompts typed in earlier sessions (oldest first), for Up/Down recall.
    pub prompts: Vec<String>,
}

pub struct SessionOptions {
    pub config: Config,
    pub roles: RoleSet,
    pub workspace: PathBuf,
    /// Starting persona; on resume, `None` keeps the persona the session had.
    pub role: Option<String>,
    pub approval: ApprovalPolicy,
    /// Whether a front end can answer approval requests.
    pub can_ask: bool,
    pub model: Arc<dyn ModelClient>,
    /// The coding tools; the agent tools are the runtime's own.
    pub tools: ToolRegistry,
    /// Where logs go; `None` keeps no log (and cannot resume).
    pub store: Option<SessionStore>,
    /// `last` or a session id.
    pub resume: Option<String>,
    /// On resume, send the old events to the front end first (the TUI redraws from them).
    pub replay_to_frontend: bool,
    /// Problems found while setting up (e.g. no API key) shown as the session's first errors.
    pub warnings: Vec<String>,
    /// Facts of the setup worth one line (the local server squad found), shown as the
    /// session's first notices.
    pub notices: Vec<String>,
    /// The user's editor, when the front end lives in one (ACP's `fs/*`).
    pub editor: Option<Arc<dyn crate::tools::EditorFiles>>,
}
