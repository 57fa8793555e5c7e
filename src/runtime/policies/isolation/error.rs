//! Why a user's request on a worker's change did nothing: a merge on purpose (`/merge`), an
//! undo of a merge (`/undo`). Each is told the user as an `error` event.

use crate::isolation::IsolationError;
use crate::runtime::policies::checkpoint::error::LogUnread;

/// Why a merge could not be taken back out of the workspace.
#[derive(Debug, thiserror::Error)]
pub enum UnmergeFailed {
    #[error("this session's workers write in the workspace itself: there is no merge to undo")]
    Shared,
    #[error("could not undo the merge: {0}")]
    Git(#[from] IsolationError),
}

/// Why `/undo` of a worker's merge did nothing.
#[derive(Debug, thiserror::Error)]
pub enum UndoFailed {
    #[error("this session keeps no log, so it knows no merge to undo")]
    NoLog,
    #[error(transparent)]
    Log(#[from] LogUnread),
    #[error("worker {0} has no merged change to undo (none, or it was undone)")]
    NoMerge(String),
    #[error("nothing of worker {0}'s merged change is left in the workspace: nothing to undo")]
    NothingLeft(String),
    #[error(transparent)]
    Unmerge(#[from] UnmergeFailed),
}

/// Why `/merge` of a worker's change did nothing.
#[derive(Debug, thiserror::Error)]
pub enum MergeRefused {
    #[error("this session's workers write in the workspace itself: there is no change to merge")]
    Shared,
    #[error("could not merge {branch}: {source}")]
    Git {
        branch: String,
        source: IsolationError,
    },
    #[error("worker {short} has no unmerged change (no worktree, no branch {branch})")]
    NoChange { short: String, branch: String },
    #[error("worker {0}'s change is already in the workspace: nothing to merge")]
    AlreadyIn(String),
    #[error("worker {0} is at work: wait until its turn ends (or stop it), then merge")]
    AtWork(String),
    /// `unmerged`: the workers whose change is not in the workspace, as a sentence.
    #[error("name the worker to merge. {unmerged}")]
    Unnamed { unmerged: String },
    #[error("no worker `{name}` in this session. {unmerged}")]
    NoSuch { name: String, unmerged: String },
    #[error("`{name}` names {count} workers ({listed}): give its id")]
    Ambiguous {
        name: String,
        count: usize,
        listed: String,
    },
}
