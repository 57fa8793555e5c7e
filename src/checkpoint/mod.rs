//! Checkpoints of the workspace's files, so the user can take back what squad did
//! (`/rewind`, `squad exec --rewind N`). They live in a shadow git repository under
//! squad's data dir, one per workspace (`<data>/checkpoints/<hash of its path>`), driven
//! with `GIT_DIR`/`GIT_WORK_TREE` (`isolation::Git::shadow`): the workspace's
//! `.gitignore` files apply, but the user's `.git` (index, refs, stash) is never touched,
//! and a workspace outside any repository is checkpointed the same way.
//!
//! In a git workspace (its top or a subfolder) a new store borrows the user's objects and
//! index entries (`borrow`, `index_file`, `trust`, `ignores`), so a checkpoint costs what
//! changed, not a copy of the repository; files are kept as their bytes are, whatever the
//! user's git converts (line endings, LFS), so a rewind is exact; outside git each
//! checkpoint stores only the files that differ from the last one (git's own index and
//! objects). A file a checkpoint cannot read is left out and told once (`unreadable`).
//! Stores no session used for a while go (`prune`), never one a session holds (`live`).
//!
//! A restore never silently overwrites the user's work: a file that differs from the
//! checkpoint and is not what squad last wrote there (`written`) is a conflict, returned
//! to the caller to ask about; nothing is written unless the caller forces it. Every
//! restore first checkpoints the present, so a rewind can itself be taken back.

mod borrow;
mod ignores;
mod index_file;
mod live;
mod prune;
mod restore;
mod rewind;
mod store;
mod trust;
mod unreadable;
mod user_repo;
mod written;

#[cfg(test)]
mod borrow_tests;
#[cfg(test)]
mod cost_tests;
#[cfg(test)]
mod tests;

pub use live::Live;
pub use prune::{Keep, Pruned, PrunedStore, prune, pruned_text};
pub use restore::Restored;
pub use rewind::{
    Point, RewindError, RewindWhat, Rewound, history_before, points, rewind, rewind_events,
};
pub use store::{Change, ChangeKind, CheckpointStore};

use crate::isolation::IsolationError;
use serde::{Deserialize, Serialize};

/// A checkpoint: the id of its commit in the shadow repository.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CheckpointId(pub String);

impl std::fmt::Display for CheckpointId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error(transparent)]
    Git(#[from] IsolationError),
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    #[error("no checkpoint {0} in this workspace's checkpoints")]
    Unknown(String),
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> CheckpointError {
    let what = what.into();
    move |source| CheckpointError::Io { what, source }
}
