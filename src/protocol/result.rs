use serde::{Deserialize, Serialize};
use std::fmt;

/// Lifecycle of an agent (see DESIGN.md, "Statuses").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentStatus {
    Running,
    /// Blocked on workers or on an approval.
    Waiting,
    /// Has work under way, held before its next model or tool call while the team is
    /// paused.
    Paused,
    /// Turn ended without `return_results` (for the root persona: waiting for the user).
    #[default]
    Inactive,
    Completed,
    Failed,
    Cancelled,
    /// Had work under way when the process ended (read back on resume): rests until the
    /// user continues it.
    Interrupted,
}

impl AgentStatus {
    /// Whether the agent has no work under way (the tree is idle when every agent is).
    pub fn is_idle(self) -> bool {
        !matches!(self, Self::Running | Self::Waiting | Self::Paused)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Waiting => "waiting",
            Self::Inactive => "inactive",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
            Self::Paused => "paused",
            Self::Interrupted => "interrupted",
        }
    }
}

impl fmt::Display for AgentStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The structured result a worker hands back with `return_results`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentResult {
    pub status: ResultStatus,
    pub summary: String,
    #[serde(default)]
    pub artifacts: Vec<Artifact>,
    #[serde(default)]
    pub known_issues: Vec<String>,
    /// Set by squad, never by the worker: how the result fared against the workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification: Option<super::Verdict>,
    /// Set by squad for a worker in its own worktree: whether its change reached the
    /// workspace, or which files conflict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge: Option<super::MergeReport>,
    /// Set by squad when the result is stored (seed 000's `completed_at`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<chrono::DateTime<chrono::Utc>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultStatus {
    Success,
    Failure,
    Partial,
}

impl ResultStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Failure => "failure",
            Self::Partial => "partial",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Artifact {
    pub file_path: String,
    pub description: String,
    pub change_type: ChangeType,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeType {
    Created,
    Modified,
    Deleted,
    Referenced,
}

impl ChangeType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::Modified => "modified",
            Self::Deleted => "deleted",
            Self::Referenced => "referenced",
        }
    }
}
