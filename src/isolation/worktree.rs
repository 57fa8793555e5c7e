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

/// The workspace's folder inside the worktree at `path` (`Path::join("")` would add a
/// trailing slash, and then the root would not compare equal to the path).
fn root_in(path: &Path, prefix: &Path) -> PathBuf {
    if prefix.as_os_str().is_empty() {
        path.to_path_buf()
    } else {
        path.join(prefix)
    }
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
        Self::finish(repo, path, name, branch, base.commit)
    }

    /// Makes a worker's worktree out of a spare: one rename, then a checkout that writes
    /// only the files where the spare and the workspace's current state differ. The
    /// spare is gone either way; on an error, make one with [`Worktree::create`].
    pub fn from_spare(
        repo: &Repo,
        spare: Spare,
        dir: &Path,
        name: &str,
        scratch: &Path,
    ) -> Result<Worktree, IsolationError> {
        let base = snapshot::take(&repo.top, &repo.index, scratch)?;
        let path = dir.join(name);
        let branch = format!("squad/{name}");
        let moved = Git::new(&repo.top).run(&[
            OsStr::new("worktree"),
            OsStr::new("move"),
            spare.path.as_os_str(),
            path.as_os_str(),
        ]);
        if let Err(e) = moved {
            let _ = remove(&repo.top, &spare.path, None);
            return Err(e);
        }
        let checkout = Git::new(&path).run(&[
            "checkout",
            "--quiet",
            "--force",
            "-B",
            &branch,
            &base.commit,
        ]);
        if let Err(e) = checkout {
            let _ = remove(&repo.top, &path, Some(&branch));
            return Err(e);
        }
        Self::finish(repo, path, name, branch, base.commit)
    }

    fn finish(
        repo: &Repo,
        path: PathBuf,
        name: &str,
        branch: String,
        base: String,
    ) -> Result<Worktree, IsolationError> {
        let index = PathBuf::from(Git::new(&path).text(&[
            "rev-parse",
            "--path-format=absolute",
            "--git-path",
            "index",
        ])?);
        let root = root_in(&path, &repo.prefix);
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
            base,
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
            root: root_in(&path, &repo.prefix),
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
        remove(repo_top, &self.path, Some(&self.branch))
    }
}

/// A worktree checked out ahead of need (detached, at HEAD), so that giving a worker its
/// own costs a rename and the few files that differ instead of writing the whole tree.
#[derive(Debug)]
pub struct Spare {
    path: PathBuf,
}

/// Names of spares begin so; worktrees are named by agent ids, which never do.
pub(crate) const SPARE_PREFIX: &str = "spare-";

impl Spare {
    /// Checks out HEAD at `dir/spare-<n>`; `None` before the first commit (nothing to
    /// check out that would save work).
    pub fn create(repo: &Repo, dir: &Path, n: u64) -> Result<Option<Spare>, IsolationError> {
        if Repo::head(&repo.top)?.is_none() {
            return Ok(None);
        }
        let path = dir.join(format!("{SPARE_PREFIX}{n}"));
        Git::new(&repo.top).run(&[
            OsStr::new("worktree"),
            OsStr::new("add"),
            OsStr::new("--quiet"),
            OsStr::new("--detach"),
            path.as_os_str(),
            OsStr::new("HEAD"),
        ])?;
        Ok(Some(Spare { path }))
    }

    /// Removes an unused spare.
    pub fn remove(self, repo_top: &Path) -> Result<(), IsolationError> {
        remove(repo_top, &self.path, None)
    }
}

/// Removes the worktree at `path` and `branch`; what is already gone is not an error.
pub(crate) fn remove(
    repo_top: &Path,
    path: &Path,
    branch: Option<&str>,
) -> Result<(), IsolationError> {
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
    let Some(branch) = branch else {
        return Ok(());
    };
    let ran = git.output(&["branch", "-D", "--quiet", branch], None)?;
    if ran.code != 0 && !ran_says_missing(&ran) {
        return Err(git.failed(&["branch", "-D", "--quiet", branch], &ran));
    }
    Ok(())
}

fn ran_says_missing(ran: &super::git::Ran) -> bool {
    ran.stderr.contains("not found")
}
