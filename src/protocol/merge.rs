//! A writing worker's change as the front ends and its supervisor see it: its size, and
//! what bringing it into the workspace did (merged, or which files and hunks conflict).

use serde::{Deserialize, Serialize};
use std::fmt;

/// The size of a worker's change against its starting point (`+12 −3` in the tree).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffStat {
    pub files: u64,
    pub added: u64,
    pub removed: u64,
}

impl DiffStat {
    pub fn is_empty(&self) -> bool {
        self.files == 0
    }

    /// `+12 −3`.
    pub fn label(&self) -> String {
        format!("+{} \u{2212}{}", self.added, self.removed)
    }
}

/// Lines of one side of a conflict, numbered from 1; `count` 0 is the place before line
/// `start` where the other side's lines would go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineRange {
    pub start: u64,
    pub count: u64,
}

impl fmt::Display for LineRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.count {
            0 => write!(f, "nothing (before line {})", self.start),
            1 => write!(f, "line {}", self.start),
            n => write!(f, "lines {}\u{2013}{}", self.start, self.start + n - 1),
        }
    }
}

/// One conflicting region: what the workspace has there, and what the worker wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConflictHunk {
    pub workspace: LineRange,
    pub worker: LineRange,
}

/// One file a merge could not settle.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConflictFile {
    /// Relative to the top of the repository.
    pub path: String,
    /// git's word for it: `contents`, `modify/delete`, `add/add`, `binary`, …
    pub kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hunks: Vec<ConflictHunk>,
}

impl fmt::Display for ConflictFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.path, self.kind)?;
        for (i, h) in self.hunks.iter().enumerate() {
            let sep = if i == 0 { ": " } else { "; " };
            write!(f, "{sep}workspace {} vs worker {}", h.workspace, h.worker)?;
        }
        if self.hunks.is_empty() && !self.message.is_empty() {
            write!(f, ": {}", self.message)?;
        }
        Ok(())
    }
}

/// A merge as it was made: the workspace just before (a snapshot commit) and just after
/// (a commit of the result on top of it). Taking the change back is the three-way merge of
/// `before` into the workspace as it is then, from `after`: what the user or other workers
/// changed since stays.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergeRecord {
    pub before: String,
    pub after: String,
}

/// How an `error` answering `Op::MergeWorker` starts: the merge was refused.
pub const MERGE_REFUSED: &str = "merge:";

/// Where a worker's change stands, as the tree shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MergeState {
    /// Changed in its worktree, not (yet) in the workspace.
    Pending,
    Merged,
    Conflict,
    /// Merged, then taken back out by the user (`/undo`).
    Undone,
    /// Not merged because the worker ended without a result that passed its checks: kept
    /// on its branch `squad/<short id>` until the user merges it on purpose (`/merge`).
    FailedChecks,
}

impl MergeState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Merged => "merged",
            Self::Conflict => "conflict",
            Self::Undone => "undone",
            Self::FailedChecks => "unmerged (failed checks)",
        }
    }

    /// A change that is not in the workspace.
    pub fn unmerged(self) -> bool {
        matches!(self, Self::Pending | Self::Conflict | Self::FailedChecks)
    }
}

/// What became of an isolated worker's change when its result went up, as its supervisor
/// reads it with the result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergeReport {
    pub state: MergeState,
    /// The workspace files the merge wrote or deleted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// Each conflicting file and hunk (`a.txt (contents): workspace line 3 vs worker
    /// line 3`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<String>,
    /// What the supervisor can do next.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// What the front ends say about worktrees of ended sessions removed at start.
pub fn stale_worktrees_message(n: usize, kept_branches: &[String]) -> String {
    let what = if n == 1 { "worktree" } else { "worktrees" };
    let mut text = format!("removed {n} {what} of ended sessions");
    if !kept_branches.is_empty() {
        text.push_str(&format!(
            "; unmerged changes are kept on {} (`git diff HEAD {}` shows one, `git branch -D` drops it)",
            kept_branches.join(", "),
            kept_branches[0]
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conflict_names_its_file_kind_and_hunks() {
        let c = ConflictFile {
            path: "a.txt".into(),
            kind: "contents".into(),
            message: String::new(),
            hunks: vec![
                ConflictHunk {
                    workspace: LineRange { start: 3, count: 1 },
                    worker: LineRange { start: 3, count: 2 },
                },
                ConflictHunk {
                    workspace: LineRange { start: 9, count: 0 },
                    worker: LineRange {
                        start: 10,
                        count: 1,
                    },
                },
            ],
        };
        assert_eq!(
            c.to_string(),
            "a.txt (contents): workspace line 3 vs worker lines 3\u{2013}4; \
             workspace nothing (before line 9) vs worker line 10"
        );
        let d = ConflictFile {
            path: "gone.txt".into(),
            kind: "modify/delete".into(),
            message: "deleted by the workspace".into(),
            hunks: Vec::new(),
        };
        assert_eq!(
            d.to_string(),
            "gone.txt (modify/delete): deleted by the workspace"
        );
        assert_eq!(
            DiffStat {
                files: 2,
                added: 12,
                removed: 3
            }
            .label(),
            "+12 \u{2212}3"
        );
    }
}
