//! What can go wrong with an agent squad drives, each with what the agent last wrote on
//! its standard error (the reason is usually there).

use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("the agent's command `{command}` was not found")]
    NotFound { command: String },
    #[error("the agent's command `{command}` could not start: {source}")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
    #[error("the agent ended ({status}) during {during}{}", tail(stderr))]
    Crashed {
        during: &'static str,
        status: String,
        stderr: String,
    },
    #[error(
        "the agent wrote what is not JSON-RPC during {during}: {line:?}{}",
        tail(stderr)
    )]
    Protocol {
        during: &'static str,
        line: String,
        stderr: String,
    },
    #[error("the agent did not answer {during} within {}s{}", after.as_secs(), tail(stderr))]
    Timeout {
        during: &'static str,
        after: Duration,
        stderr: String,
    },
    #[error("the agent refused {during}: {message}")]
    Refused {
        during: &'static str,
        message: String,
    },
}

impl ClientError {
    /// The agent's standard error as it ended, where the fault has one.
    pub fn stderr(&self) -> Option<&str> {
        match self {
            Self::Crashed { stderr, .. }
            | Self::Protocol { stderr, .. }
            | Self::Timeout { stderr, .. } => Some(stderr),
            _ => None,
        }
    }
}

fn tail(stderr: &str) -> String {
    let stderr = stderr.trim();
    if stderr.is_empty() {
        String::new()
    } else {
        format!("; its stderr ends: {stderr}")
    }
}
