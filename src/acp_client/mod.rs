//! squad as an ACP *client* (issue 53): it starts another agent (any command speaking the
//! Agent Client Protocol over stdio: `squad acp`, `opencode acp`, an adapter for Claude
//! Code or Codex), opens a session whose cwd is a folder squad gives it (a worker's
//! worktree, later), sends prompts, and hears its updates as [`AgentUpdate`]s. It answers
//! the agent's requests: files read and written only inside that folder, permissions put
//! to squad through a callback ([`Permissions`]). Faults (command not found, a crash, a
//! line that is not JSON-RPC, no answer in time) are [`ClientError`]s that carry the end of
//! the agent's standard error. The runtime's agent workers (`runtime/agent_worker`) drive
//! it.
//!
//! One job per module: `process` (the child and its stderr), `wire` (the lines, checked),
//! `connection` (the crate's client and its handlers), `files`, `permission`, `updates`,
//! `error`, `client` (the calls, each raced against the faults).

mod client;
mod connection;
mod error;
mod files;
mod permission;
mod process;
mod updates;
mod wire;

pub use agent_client_protocol::v1::schema::StopReason;
pub use client::{AcpClient, ClientOptions};
pub use error::ClientError;
pub use permission::{Decision, PermissionAsk, Permissions};
pub use updates::{AgentUpdate, FileDiff, ToolDetail};

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// How to start an agent: a role's `agent = { command, args, env, cwd }`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentCommand {
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    /// Added to squad's own environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Where the process runs (the session's folder when not given).
    #[serde(default)]
    pub cwd: Option<PathBuf>,
}
