//! A worktree checked out ahead of need, so giving a worker its own costs a rename and the
//! files that differ from HEAD instead of writing the whole tree (`Worktrees::warm`).

use super::IsolationError;
use super::git::{Git, PARALLEL_CHECKOUT};
use super::repo::Repo;
use super::teardown::remove;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// A worktree checked out ahead of need (detached, at HEAD), so that giving a worker its
/// own costs a rename and the few files that differ instead of writing the whole tree.
#[derive(Debug)]
pub struct Spare {
    pub(crate) path: PathBuf,
}

/// Names of spares begin so; worktrees are named by agent ids, which never do.
pub(crate) const SPARE_PREFIX: &str = "spare-";

impl Spare {
    /// Checks out HEAD at `dir/spare-<n>`; `None` before the first commit (nothing to
    /// check out that would save work).
    pub fn create(repo: &Repo, dir: &Path, n: u64) -> Result<Option<Spare>, IsolationError> {
        if Repo::head(Git::new(&repo.top))?.is_none() {
            return Ok(None);
        }
        let path = dir.join(format!("{SPARE_PREFIX}{n}"));
        let args = PARALLEL_CHECKOUT.map(OsStr::new).into_iter().chain([
            OsStr::new("worktree"),
            OsStr::new("add"),
            OsStr::new("--quiet"),
            OsStr::new("--detach"),
            path.as_os_str(),
            OsStr::new("HEAD"),
        ]);
        Git::new(&repo.top).run(&args.collect::<Vec<_>>())?;
        Ok(Some(Spare { path }))
    }

    /// Removes an unused spare.
    pub fn remove(self, repo_top: &Path) -> Result<(), IsolationError> {
        remove(repo_top, &self.path, None)
    }
}
