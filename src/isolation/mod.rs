//! Keeping writing workers out of each other's way. In a git repository each writing
//! worker gets its own worktree (`worktree`), made from its base (`base`: the workspace
//! as it was when the worker was spawned, a `snapshot`), and its change comes back through a three-way merge (`merge`,
//! `conflicts`) one worker at a time (`queue`), or is redone on the current state after a
//! conflict (`redo`), or kept unmerged on its branch when it did not pass its checks
//! (`keep`, merged later only on the user's word); `worktrees` ties these to agents for the runtime. Outside a
//! repository workers share the workspace under file leases (`leases`). Worktrees live
//! under squad's data dir (`session_dir`), and those of sessions that no longer run are
//! removed at start (`cleanup`).
//!
//! squad drives the `git` CLI (`git`) rather than a library: worktrees and
//! `merge-tree --write-tree` (git's own merge machinery) are the CLI's, the user's
//! configuration, filters and attributes apply exactly as in their own git, and tests
//! can check the result with the same commands a user would type. Every git command is
//! built in one place (`git`), and in a worker's worktree it names the worktree's folders
//! itself and runs only while the metadata a worker could change is as squad made it
//! (`seal`).

mod base;
mod base_checkout;
mod cleanup;
mod conflicts;
mod diff;
mod fill;
mod first_write;
mod git;
mod keep;
mod leases;
mod line_merge;
mod merge;
mod queue;
mod redo;
mod repo;
mod seal;
mod session_dir;
mod snapshot;
mod spare;
mod teardown;
mod unmerge;
mod worktree;
mod worktrees;

/// Runs git in `top` for a unit test, with an identity of its own; fails the test if git does.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) fn test_git(top: &std::path::Path, args: &[&str]) {
    let ok = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@localhost"])
        .args(args)
        .current_dir(top)
        .status()
        .unwrap()
        .success();
    assert!(ok, "git {args:?}");
}

pub use base::Base;
pub use base_checkout::BaseCheckout;
pub use cleanup::{Removed, remove_stale};
pub use conflicts::{Conflict, Hunk, LineSpan};
pub use diff::{
    ChangeKind, DiffSummary, FileChange, diff_head, summary as diff_summary,
    summary_of as diff_summary_of, text as diff_text,
};
pub use fill::Fill;
pub(crate) use git::{Git, fields, path_of};
pub use leases::{Holder, LeaseError, Leases};
pub use merge::{MergeOutcome, MergeRecord, merge_into_workspace};
pub use queue::{MergeQueue, QueueError};
pub use redo::redo_on_current;
pub use repo::{MIN_GIT, NoRepo, Repo};
pub use seal::Seal;
pub use session_dir::{SessionDir, session_runs, worktrees_dir};
pub use snapshot::{Snapshot, take as take_snapshot};
pub use spare::Spare;
pub use unmerge::{UnmergeOutcome, unmerge};
pub use worktree::Worktree;
pub use worktrees::Worktrees;

use crate::config::IsolationMode;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Debug, thiserror::Error)]
pub enum IsolationError {
    #[error("`git {command}` failed in {} (exit {code}): {stderr}", dir.display())]
    Git {
        command: String,
        dir: PathBuf,
        code: i32,
        stderr: String,
    },
    #[error("cannot run git: {0}")]
    GitMissing(std::io::Error),
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    #[error("session {0} is already running in another squad process")]
    SessionRunning(String),
    #[error("agent {0} has no worktree")]
    NoWorktree(String),
    #[error(
        "the workspace kept changing while the merge was being written; nothing was merged, try again"
    )]
    WorkspaceBusy,
    #[error("refused: {0}")]
    Tampered(String),
    #[error("the worktree's files could not all be written: {0}")]
    Unwritten(String),
    #[error("the git job stopped before it finished: {0}")]
    Stopped(String),
}

impl From<QueueError> for IsolationError {
    fn from(e: QueueError) -> Self {
        IsolationError::Stopped(e.to_string())
    }
}

/// How a session's workers write.
pub enum Isolation {
    /// Each writing worker in its own worktree.
    Worktrees(Arc<Worktrees>),
    /// Workers share the workspace under file leases; `why` says why when worktrees were
    /// asked for but cannot be used.
    Shared {
        leases: Arc<Leases>,
        why: Option<String>,
    },
}

/// What starting isolation for a session found.
pub struct Started {
    pub isolation: Isolation,
    /// Worktrees of sessions that no longer run, removed just now.
    pub removed: Vec<Removed>,
}

/// Sets up isolation for session `session` on `workspace`: worktrees when `mode` asks for
/// them and the workspace is in a git repository (and git is new enough), shared with
/// leases otherwise. Also removes the worktrees of sessions that no longer run.
pub fn start(mode: IsolationMode, workspace: &Path, data: &Path, session: &str) -> Started {
    let shared = |why: Option<String>| Isolation::Shared {
        leases: Arc::new(Leases::new()),
        why,
    };
    let isolation = match mode {
        IsolationMode::Shared => shared(None),
        IsolationMode::Worktree => match Repo::discover(workspace) {
            Err(e) => shared(Some(e.to_string())),
            Ok(repo) => match Worktrees::open(repo, data, session) {
                Ok(w) => Isolation::Worktrees(Arc::new(w)),
                Err(e) => shared(Some(e.to_string())),
            },
        },
    };
    // After claiming this session's folder, so a resumed session keeps its worktrees.
    let removed = remove_stale(data);
    Started { isolation, removed }
}
