//! One writing worker's worktree: created from the workspace's current state on branch
//! `squad/<short agent id>`, outside the workspace, and removed with its branch.

use super::IsolationError;
use super::git::Git;
use super::repo::Repo;
use super::snapshot;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// A worker's own checkout and the commit its change is measured from.
#[derive(Clone, Debug)]
pub struct Worktree {
    /// The agent's short id; names the folder and the branch.
    pub name: String,
    /// The top of the worktree.
    pub path: PathBuf,
    /// Where the worker's tools are confined: the workspace's folder inside the worktree.
    pub root: PathBuf,
    /// `squad/<name>`.
    pub branch: String,
    /// The worker's starting point: the workspace as the worker last saw it (when created,
    /// after a merge, or after a redo). Its change is the worktree against this commit.
    pub base: String,
    /// The worktree's own index file (snapshots copy it).
    pub index: PathBuf,
}

/// Where the base is kept between runs (beside the worktree, so a resumed session can
/// reopen it with [`Worktree::reopen`]).
fn base_file(path: &Path) -> PathBuf {
    path.with_extension("base")
}

impl Worktree {
    /// Creates the worktree `dir/<name>` at a snapshot of the workspace, uncommitted and
    /// untracked changes included. The user's HEAD, index and files are not touched.
    /// `scratch` holds temporary index files.
    pub fn create(
        repo: &Repo,
        dir: &Path,
        name: &str,
        scratch: &Path,
    ) -> Result<Worktree, IsolationError> {
        let base = snapshot::take(&repo.top, &repo.index, scratch)?;
        let path = dir.join(name);
        let branch = format!("squad/{name}");
        std::fs::create_dir_all(dir).map_err(|source| IsolationError::Io {
            what: format!("creating {}", dir.display()),
            source,
        })?;
        Git::new(&repo.top).run(&[
            OsStr::new("worktree"),
            OsStr::new("add"),
            OsStr::new("--quiet"),
            OsStr::new("-B"),
            OsStr::new(&branch),
            path.as_os_str(),
            OsStr::new(&base.commit),
        ])?;
        let index = PathBuf::from(Git::new(&path).text(&[
            "rev-parse",
            "--path-format=absolute",
            "--git-path",
            "index",
        ])?);
        let root = path.join(&repo.prefix);
        // The workspace's folder may hold only ignored files, so the snapshot lacks it.
        std::fs::create_dir_all(&root).map_err(|source| IsolationError::Io {
            what: format!("creating {}", root.display()),
            source,
        })?;
        let wt = Worktree {
            name: name.to_string(),
            path,
            root,
            branch,
            base: base.commit,
            index,
        };
        wt.save_base()?;
        Ok(wt)
    }

    /// The worktree `dir/<name>` of an earlier run of this session, if it is still there.
    pub fn reopen(repo: &Repo, dir: &Path, name: &str) -> Option<Worktree> {
        let path = dir.join(name);
        let base = std::fs::read_to_string(base_file(&path)).ok()?;
        let index = Git::new(&path)
            .text(&["rev-parse", "--path-format=absolute", "--git-path", "index"])
            .ok()?;
        Some(Worktree {
            name: name.to_string(),
            root: path.join(&repo.prefix),
            branch: format!("squad/{name}"),
            base: base.trim().to_string(),
            index: PathBuf::from(index),
            path,
        })
    }

    /// Moves the starting point to `commit` (after a merge or a redo).
    pub(crate) fn set_base(&mut self, commit: String) -> Result<(), IsolationError> {
        self.base = commit;
        self.save_base()
    }

    fn save_base(&self) -> Result<(), IsolationError> {
        let file = base_file(&self.path);
        std::fs::write(&file, format!("{}\n", self.base)).map_err(|source| IsolationError::Io {
            what: format!("writing {}", file.display()),
            source,
        })
    }

    /// Removes the worktree, its files (changed or not) and its branch.
    pub fn remove(&self, repo_top: &Path) -> Result<(), IsolationError> {
        remove(repo_top, &self.path, &self.branch)
    }
}

/// Removes the worktree at `path` and `branch`; what is already gone is not an error.
pub(crate) fn remove(repo_top: &Path, path: &Path, branch: &str) -> Result<(), IsolationError> {
    let git = Git::new(repo_top);
    let args = [
        OsStr::new("worktree"),
        OsStr::new("remove"),
        OsStr::new("--force"),
        OsStr::new("--force"),
        path.as_os_str(),
    ];
    let ran = git.output(&args, None)?;
    if ran.code != 0 {
        // Not a worktree git knows (any more): delete the folder, forget stale entries.
        if path.exists() {
            std::fs::remove_dir_all(path).map_err(|source| IsolationError::Io {
                what: format!("removing {}", path.display()),
                source,
            })?;
        }
        git.output(&["worktree", "prune"], None)?;
    }
    let _ = std::fs::remove_file(base_file(path));
    let ran = git.output(&["branch", "-D", "--quiet", branch], None)?;
    if ran.code != 0 && !ran_says_missing(&ran) {
        return Err(git.failed(&["branch", "-D", "--quiet", branch], &ran));
    }
    Ok(())
}

fn ran_says_missing(ran: &super::git::Ran) -> bool {
    ran.stderr.contains("not found")
}
