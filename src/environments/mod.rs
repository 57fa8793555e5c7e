//! Environments (issue 52): a worker's tools run where its work needs: in this process
//! (the default, untouched), in a child process, on another host over the user's `ssh`, or
//! in a container an engine starts. One small protocol ([`protocol`]), served by
//! `squad tool-server` ([`server`]) with the far side's own sandbox, reached by one client
//! ([`client`]) over each transport ([`child`], [`ssh`], [`container`]); [`place`] is the
//! seam where a worker's tool calls go to it. The model calls, keys, approvals, hooks,
//! budgets, verification and merges stay on this side.

pub mod carry;
pub mod check;
pub mod child;
pub mod client;
pub mod container;
pub mod copy_in;
mod copy_over;
mod far_git;
pub mod place;
pub mod protocol;
pub mod refs;
pub mod server;
pub mod ssh;
pub mod sweep;

pub use client::Remote;
pub use place::{Placed, ToolPlace, placed_tools};

use crate::config::{EnvKind, EnvironmentConfig};

/// Why an environment could not be reached or used, naming it.
#[derive(Debug, thiserror::Error)]
#[error("environment '{env}': {reason}")]
pub struct EnvError {
    pub env: String,
    pub reason: String,
}

impl EnvError {
    pub fn new(env: &str, reason: impl Into<String>) -> Self {
        Self {
            env: env.to_string(),
            reason: reason.into(),
        }
    }
}

/// Connects to a tool server in environment `name` as `config` describes it. A `local`
/// environment has none: its workers call their tools in-process.
pub async fn connect(
    name: &str,
    config: &EnvironmentConfig,
    init: &protocol::Init,
) -> Result<Remote, EnvError> {
    match config.kind {
        Some(EnvKind::Ssh) => {
            // squad there: the configured one, on its PATH, or this one copied over.
            let config = copy_over::squad_there(name, config).await?;
            ssh::connect(name, &config, init).await
        }
        Some(EnvKind::Container) => container::connect(name, config, init).await,
        Some(EnvKind::Local) => Err(EnvError::new(
            name,
            "a local environment runs its tools in this process; it has no tool server",
        )),
        None => Err(EnvError::new(name, "no `kind`")),
    }
}
