//! `/undo` of a worker's merged change, for the runtime: through the merge queue, so it
//! never runs beside a merge, and told in the protocol's words.

use super::error::UnmergeFailed;
use super::merge::conflict_file;
use super::worker::WorkerIsolation;
use crate::isolation::{Conflict, UnmergeOutcome};
use crate::protocol::{ConflictFile, MergeRecord};
use std::path::PathBuf;

impl WorkerIsolation {
    /// Takes the merge `record` back out of the workspace.
    pub async fn unmerge(
        &self,
        record: MergeRecord,
        force: bool,
    ) -> Result<UnmergeOutcome, UnmergeFailed> {
        let worktrees = (self.worktrees.as_ref()).ok_or(UnmergeFailed::Shared)?;
        Ok(worktrees.unmerge(record, force).await?)
    }

    /// The top of the repository merges write in (the workspace's folder or above it).
    pub fn repo_top(&self) -> Option<PathBuf> {
        self.worktrees.as_ref().map(|w| w.repo().top.clone())
    }
}

/// Conflicts as the front ends show them.
pub fn conflict_files(conflicts: &[Conflict]) -> Vec<ConflictFile> {
    conflicts.iter().map(conflict_file).collect()
}
