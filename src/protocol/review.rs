//! `/review` and `squad review`: what is reviewed, and the findings that come back. Shared
//! by the core (which runs the reviewers and checks their findings) and the front ends
//! (which list them), so the one vocabulary lives here.

use serde::{Deserialize, Serialize};
use std::fmt;

/// What a review looks at.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ReviewTarget {
    /// Staged, unstaged and untracked changes against `HEAD` (the workspace's files).
    #[default]
    Uncommitted,
    /// `HEAD` against where it left `branch` (`git merge-base BRANCH HEAD`).
    Base { branch: String },
    /// One commit against its parent.
    Commit { sha: String },
}

impl fmt::Display for ReviewTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Uncommitted => f.write_str("the uncommitted changes"),
            Self::Base { branch } => write!(f, "HEAD against {branch}"),
            Self::Commit { sha } => write!(f, "commit {sha}"),
        }
    }
}

/// How much a finding matters, most first (the order findings are listed in).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewSeverity {
    High,
    Medium,
    Low,
}

impl ReviewSeverity {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::High => "high",
            Self::Medium => "medium",
            Self::Low => "low",
        }
    }
}

/// One problem a reviewer found, at a place in a file of the reviewed revision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewFinding {
    /// Relative to the workspace root.
    pub file: String,
    /// 1-based.
    pub line: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u32>,
    pub severity: ReviewSeverity,
    /// The reviewers' focuses that found it (`correctness`, `tests`, `security`, `rules`):
    /// one after de-duplication may name several.
    pub focus: Vec<String>,
    pub title: String,
    #[serde(default)]
    pub body: String,
    /// The code the finding is about, as the reviewer copied it from the file: what squad
    /// checks the finding against before showing it.
    #[serde(default)]
    pub quote: String,
}

impl ReviewFinding {
    /// The last line the finding covers.
    pub fn last_line(&self) -> u32 {
        self.end_line.unwrap_or(self.line).max(self.line)
    }

    /// `file:line` or `file:line-end`.
    pub fn place(&self) -> String {
        match self.end_line.filter(|e| *e > self.line) {
            Some(end) => format!("{}:{}-{end}", self.file, self.line),
            None => format!("{}:{}", self.file, self.line),
        }
    }
}

/// A finding squad did not show, and why (its file or lines do not exist, its quoted code
/// is not there, or it was malformed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DroppedFinding {
    #[serde(flatten)]
    pub finding: ReviewFinding,
    pub reason: String,
}
