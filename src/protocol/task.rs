//! A task of the session's board as events carry it (the board itself is
//! `runtime/board.rs`).

use super::AgentId;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Waiting for dependencies.
    Pending,
    /// Every dependency is done: a worker may take it.
    Ready,
    Running,
    Done,
    Failed,
    /// A dependency failed or was cancelled: it cannot start unless that one is reopened.
    Blocked,
    Cancelled,
}

impl TaskStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Ready => "ready",
            Self::Running => "running",
            Self::Done => "done",
            Self::Failed => "failed",
            Self::Blocked => "blocked",
            Self::Cancelled => "cancelled",
        }
    }

    /// Finished one way or the other.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Done | Self::Failed | Self::Cancelled)
    }

    /// Still to run: the statuses the board works out from dependencies.
    pub fn is_open(self) -> bool {
        matches!(self, Self::Pending | Self::Ready | Self::Blocked)
    }
}

/// A task on the board, as the tools and the front ends see it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Task {
    pub id: String,
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(default)]
    pub depends_on: Vec<String>,
    pub status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee: Option<AgentId>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The worker's result summary, once it finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
}
