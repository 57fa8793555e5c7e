//! A commit of a work tree exactly as it is on disk (tracked changes, staged or not, and
//! untracked files git does not ignore) made without touching that work tree's HEAD or
//! index: a copy of its index is updated instead (`GIT_INDEX_FILE`), so the stat data
//! already there spares git re-reading unchanged files.

use super::IsolationError;
use super::git::Git;
use super::repo::Repo;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A snapshot: the commit and its tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    pub commit: String,
    pub tree: String,
}

/// A temporary index file, removed when dropped.
pub(crate) struct TempIndex {
    pub path: PathBuf,
}

static NEXT: AtomicU64 = AtomicU64::new(0);

impl TempIndex {
    /// A fresh name in `scratch` (which must exist), unique in this process.
    pub fn new(scratch: &Path) -> Self {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        Self {
            path: scratch.join(format!("index-{}-{n}", std::process::id())),
        }
    }

    /// A copy of `index` (an absent index, as before the first `git add`, is an empty one),
    /// with its modification time: git trusts an entry's stat data only when the file is
    /// older than the index, so a copy stamped "now" would hide a file rewritten to the
    /// same size within the clock step in which the index was written (a worker's edit
    /// right after its worktree was filled was missed so, and its merge dropped it).
    pub fn copy_of(index: &Path, scratch: &Path) -> Result<Self, IsolationError> {
        let temp = Self::new(scratch);
        let io = |source| IsolationError::Io {
            what: format!("copying the index {}", index.display()),
            source,
        };
        match std::fs::copy(index, &temp.path) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(temp),
            Err(source) => return Err(io(source)),
        }
        let modified = std::fs::metadata(index)
            .and_then(|m| m.modified())
            .map_err(io)?;
        std::fs::File::options()
            .write(true)
            .open(&temp.path)
            .and_then(|f| f.set_modified(modified))
            .map_err(io)?;
        Ok(temp)
    }
}

impl Drop for TempIndex {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Commits the work tree `git` runs in (whose index is `index`) as it is now, with HEAD
/// as parent when there is one. The temporary index is returned too: it describes the work
/// tree with fresh stat data, which [`crate::isolation`]'s redo reuses.
pub(crate) fn take_with_index(
    at: Git<'_>,
    index: &Path,
    scratch: &Path,
) -> Result<(Snapshot, TempIndex), IsolationError> {
    let temp = TempIndex::copy_of(index, scratch)?;
    let git = at.with_index(&temp.path);
    git.run(&["add", "--all", "--", "."])?;
    let tree = git.text(&["write-tree"])?;
    let mut args = vec!["commit-tree".to_string(), tree.clone()];
    if let Some(head) = Repo::head(at)? {
        args.push("-p".into());
        args.push(head);
    }
    args.extend(["-m".into(), "squad snapshot".into()]);
    let commit = at.text(&args)?;
    Ok((Snapshot { commit, tree }, temp))
}

/// [`take_with_index`] without the index.
pub(crate) fn take_in(
    at: Git<'_>,
    index: &Path,
    scratch: &Path,
) -> Result<Snapshot, IsolationError> {
    take_with_index(at, index, scratch).map(|(s, _)| s)
}

/// A snapshot of the user's work tree at `top` (the workspace's repository).
pub fn take(top: &Path, index: &Path, scratch: &Path) -> Result<Snapshot, IsolationError> {
    take_in(Git::new(top), index, scratch)
}
