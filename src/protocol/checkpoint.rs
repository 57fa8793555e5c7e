//! What `/rewind` lists: the user's messages that have a checkpoint, and what changed in
//! the files since each.

use serde::{Deserialize, Serialize};

/// How a file differs now from a checkpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileChangeKind {
    Added,
    Modified,
    Deleted,
}

impl FileChangeKind {
    /// `A`, `M`, `D`, as git prints them.
    pub fn letter(self) -> char {
        match self {
            Self::Added => 'A',
            Self::Modified => 'M',
            Self::Deleted => 'D',
        }
    }
}

/// A file that changed since a checkpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangedFile {
    pub path: String,
    pub kind: FileChangeKind,
}

/// One user message the session can be rewound to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointSummary {
    /// Its number in the session, from 1.
    pub message: u32,
    /// What the user wrote (the first lines).
    pub text: String,
    /// The files changed since, when its files' checkpoint was taken; else why not.
    pub changes: Result<Vec<ChangedFile>, String>,
}
