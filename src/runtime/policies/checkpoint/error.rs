//! Why a checkpoint, the list of checkpoints or a rewind could not be had, and why the
//! session's log could not be read back. Each is told the user where it happened: a
//! checkpoint's in its `checkpoint_taken`, the others as an `error` on the persona.

use crate::checkpoint::{CheckpointError, RewindError};
use std::path::PathBuf;
use std::sync::Arc;

/// The store could not be opened, or a checkpoint not taken. Cloned: the store's opening
/// is kept for the session, failure included.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CheckpointFailed {
    #[error(transparent)]
    Store(Arc<CheckpointError>),
    /// The blocking task doing it did not finish (its panic or cancellation, as tokio says).
    #[error("{0}")]
    Task(String),
}

impl From<tokio::task::JoinError> for CheckpointFailed {
    fn from(e: tokio::task::JoinError) -> Self {
        Self::Task(e.to_string())
    }
}

impl From<CheckpointError> for CheckpointFailed {
    fn from(e: CheckpointError) -> Self {
        Self::Store(Arc::new(e))
    }
}

/// The session's log could not be read back.
#[derive(Debug, thiserror::Error)]
#[error("cannot read the session log {}: {source}", path.display())]
pub struct LogUnread {
    pub path: PathBuf,
    pub source: std::io::Error,
}

/// Why `/rewind` or its list did nothing.
#[derive(Debug, thiserror::Error)]
pub enum RewindFailed {
    #[error(
        "this session keeps no checkpoints (it has no data dir), so there is nothing to rewind"
    )]
    NoCheckpoints,
    #[error("this session keeps no log to rewind")]
    NoLog,
    #[error(transparent)]
    Checkpoint(#[from] CheckpointFailed),
    #[error(transparent)]
    Log(#[from] LogUnread),
    #[error("cannot compare the workspace with its checkpoints: {0}")]
    Compare(CheckpointError),
    #[error(transparent)]
    Rewind(#[from] RewindError),
    #[error("the team did not stop within {0}s; nothing was rewound, try again")]
    NotStopped(u64),
}

impl From<tokio::task::JoinError> for RewindFailed {
    fn from(e: tokio::task::JoinError) -> Self {
        Self::Checkpoint(e.into())
    }
}
