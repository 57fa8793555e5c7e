//! A clean checkout of a worker's base, where the project's tests are run to learn what
//! already failed before the worker started (see `verify::judge_tests`): a detached
//! worktree beside the workers', made and removed by squad, never any agent's view.

use super::IsolationError;
use super::git::{Git, PARALLEL_CHECKOUT};
use super::repo::Repo;
use super::teardown::remove;
use super::worktree::root_in;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Names of base checkouts begin so; worktrees are named by agent ids, which never do.
pub(crate) const BASE_PREFIX: &str = "base-";

static NEXT: AtomicU64 = AtomicU64::new(0);

/// A checkout of one base commit.
#[derive(Debug)]
pub struct BaseCheckout {
    path: PathBuf,
    /// The workspace's folder inside it, where the test command runs.
    pub root: PathBuf,
}

impl BaseCheckout {
    /// Checks `commit` out, detached, at `dir/base-<n>`. Reads only the repository.
    pub fn create(repo: &Repo, dir: &Path, commit: &str) -> Result<Self, IsolationError> {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("{BASE_PREFIX}{}-{n}", std::process::id()));
        std::fs::create_dir_all(dir).map_err(|source| IsolationError::Io {
            what: format!("creating {}", dir.display()),
            source,
        })?;
        let args = PARALLEL_CHECKOUT.map(OsStr::new).into_iter().chain([
            OsStr::new("worktree"),
            OsStr::new("add"),
            OsStr::new("--quiet"),
            OsStr::new("--detach"),
            path.as_os_str(),
            OsStr::new(commit),
        ]);
        Git::new(&repo.top).run(&args.collect::<Vec<_>>())?;
        let root = root_in(&path, &repo.prefix);
        // The workspace's folder may hold only ignored files, so the commit lacks it.
        if let Err(source) = std::fs::create_dir_all(&root) {
            let _ = remove(&repo.top, &path, None);
            return Err(IsolationError::Io {
                what: format!("creating {}", root.display()),
                source,
            });
        }
        Ok(Self { path, root })
    }

    /// Removes the checkout and whatever its run left in it.
    pub fn remove(self, repo_top: &Path) -> Result<(), IsolationError> {
        remove(repo_top, &self.path, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_checkout_holds_the_commit_and_goes_without_a_trace() {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path().join("repo");
        std::fs::create_dir_all(top.join("app")).unwrap();
        let git = |args: &[&str]| crate::isolation::test_git(&top, args);
        git(&["init", "-q"]);
        std::fs::write(top.join("app/a.txt"), "base\n").unwrap();
        let scratch = top.join(".git");
        let repo = Repo::discover(&top.join("app")).unwrap();
        let base = super::super::snapshot::take(&repo.top, &repo.index, &scratch).unwrap();
        // The workspace moves on; the checkout is of the base.
        std::fs::write(top.join("app/a.txt"), "later\n").unwrap();
        let dir = tmp.path().join("worktrees");
        let checkout = BaseCheckout::create(&repo, &dir, &base.commit).unwrap();
        assert_eq!(checkout.root, checkout.path.join("app"));
        let read = std::fs::read_to_string(checkout.root.join("a.txt")).unwrap();
        assert_eq!(read, "base\n");
        std::fs::write(checkout.root.join("left-by-tests"), "x").unwrap();
        let path = checkout.path.clone();
        checkout.remove(&repo.top).unwrap();
        assert!(!path.exists());
        let list = std::process::Command::new("git")
            .args(["worktree", "list", "--porcelain"])
            .current_dir(&top)
            .output()
            .unwrap();
        assert!(!String::from_utf8_lossy(&list.stdout).contains(BASE_PREFIX));
    }
}
