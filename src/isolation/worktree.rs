//! One writing worker's worktree: created from its base on branch `squad/<short agent id>`,
//! outside the workspace, and removed with its branch. Made cold for a first call that
//! names the only files it writes, it is usable at once: those files are written first
//! (`first_write.rs` says which may be) and the rest by a [`Fill`] behind the call
//! (`fill.rs`); made from a [`Spare`] (`spare.rs`), it costs the files that differ.

use super::IsolationError;
use super::base::base_file;
use super::fill::{Fill, read_fill, save_fill};
use super::first_write::{first_checkout, in_tree};
use super::git::{Git, PARALLEL_CHECKOUT};
use super::repo::Repo;
use super::seal::Seal;
use super::snapshot::{self, Snapshot};
use super::spare::Spare;
use super::teardown::remove;
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
    /// Its git metadata: its own folder in the repository (`.git/worktrees/<name>`: HEAD,
    /// index, logs) and the repository's shared one (objects, refs).
    pub git_dir: PathBuf,
    pub common_dir: PathBuf,
    /// Its git folders and metadata as squad made them: every git run here names them
    /// and checks them first (see `seal.rs`).
    pub seal: Seal,
}

/// The workspace's folder inside the worktree at `path` (`Path::join("")` would add a
/// trailing slash, and then the root would not compare equal to the path).
pub(super) fn root_in(path: &Path, prefix: &Path) -> PathBuf {
    if prefix.as_os_str().is_empty() {
        path.to_path_buf()
    } else {
        path.join(prefix)
    }
}

impl Worktree {
    /// Creates the worktree `dir/<name>` at `base`, a snapshot already taken (workers that
    /// start together share one). Runs beside other creations: nothing here reads the
    /// workspace, and git's own locks are waited for (see `git.rs`).
    pub fn create_at(
        repo: &Repo,
        dir: &Path,
        name: &str,
        base: &Snapshot,
    ) -> Result<Worktree, IsolationError> {
        let path = dir.join(name);
        let branch = format!("squad/{name}");
        std::fs::create_dir_all(dir).map_err(|source| IsolationError::Io {
            what: format!("creating {}", dir.display()),
            source,
        })?;
        let args = PARALLEL_CHECKOUT.map(OsStr::new).into_iter().chain([
            OsStr::new("worktree"),
            OsStr::new("add"),
            OsStr::new("--quiet"),
            OsStr::new("-B"),
            OsStr::new(&branch),
            path.as_os_str(),
            OsStr::new(&base.commit),
        ]);
        Git::new(&repo.top).run(&args.collect::<Vec<_>>())?;
        let seal = Seal::take(&path, &repo.common_dir, Some(&branch))?;
        Self::finish(repo, seal, name, branch, base.commit.clone())
    }

    /// [`Worktree::create_lazy_at`] at a snapshot of the workspace taken now.
    pub fn create_lazy(
        repo: &Repo,
        dir: &Path,
        name: &str,
        scratch: &Path,
        writes: &[String],
    ) -> Result<(Worktree, Option<Fill>), IsolationError> {
        let base = snapshot::take(&repo.top, &repo.index, scratch)?;
        Self::create_lazy_at(repo, dir, name, &base, writes)
    }

    /// Creates the worktree `dir/<name>` at `base` for a first call that writes only
    /// `writes` (paths as its tool got them), without waiting for the rest of the tree:
    /// writing 10,000 files takes 0.2–3 s on a busy disk, the worker's next model call
    /// about as long. Those of `writes` that `base` has are checked out now; the returned
    /// [`Fill`] writes the others (run it beside the call; nothing else may use the
    /// worktree until it is done). `None` when the call may not run early (see
    /// `first_checkout`): then the whole tree is written before this returns.
    pub fn create_lazy_at(
        repo: &Repo,
        dir: &Path,
        name: &str,
        base: &Snapshot,
        writes: &[String],
    ) -> Result<(Worktree, Option<Fill>), IsolationError> {
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
            OsStr::new("--no-checkout"),
            OsStr::new("-B"),
            OsStr::new(&branch),
            path.as_os_str(),
            OsStr::new(&base.commit),
        ])?;
        let made = Seal::take(&path, &repo.common_dir, Some(&branch))
            .and_then(|seal| Self::lazy(repo, seal, name, branch.clone(), base, writes));
        if made.is_err() {
            let _ = remove(&repo.top, &path, Some(&branch));
        }
        made
    }

    /// The rest of [`Worktree::create_lazy_at`] once git made the empty worktree.
    fn lazy(
        repo: &Repo,
        seal: Seal,
        name: &str,
        branch: String,
        base: &Snapshot,
        writes: &[String],
    ) -> Result<(Worktree, Option<Fill>), IsolationError> {
        let path = seal.work_tree.clone();
        // The index of `base`, no file written (`read-tree` measured 16–28 ms on 10,000
        // files here, `reset -q` 37–52 ms: it also looks at every missing file).
        Git::worktree(&seal).run(&["read-tree", &base.commit])?;
        let kept: Option<Vec<String>> = writes.iter().map(|w| in_tree(&repo.prefix, w)).collect();
        let first = match kept.as_deref() {
            Some(paths) if !paths.is_empty() => {
                first_checkout(Git::worktree(&seal), &base.commit, paths)?
            }
            _ => None,
        };
        // Before the base file: a worktree a resume finds has its marker if not filled.
        save_fill(&path, &[])?;
        let wt = Self::finish(repo, seal.clone(), name, branch, base.commit.clone())?;
        let mut fill = Fill {
            seal,
            kept: Vec::new(),
        };
        let (Some(tracked), Some(kept)) = (first, kept) else {
            fill.run()?;
            return Ok((wt, None));
        };
        if !tracked.is_empty() {
            let list: Vec<u8> = tracked.iter().flat_map(|p| p.bytes().chain([0])).collect();
            Git::worktree(&fill.seal).run_with_input(
                &["checkout-index", "--force", "-u", "-z", "--stdin"],
                Some(&list),
            )?;
        }
        // From here a crash keeps what the first call may have written.
        save_fill(&fill.seal.work_tree, &kept)?;
        fill.kept = kept;
        Ok((wt, Some(fill)))
    }

    /// A fill a crash cut short (its marker is still beside the worktree), to run again
    /// before the worktree is used; `Err` when the marker cannot be read.
    pub fn unfinished_fill(&self) -> Result<Option<Fill>, IsolationError> {
        Ok(read_fill(&self.path)?.map(|kept| Fill {
            seal: self.seal.clone(),
            kept,
        }))
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
        Self::from_spare_at(repo, spare, dir, name, &base)
    }

    /// [`Worktree::from_spare`] at `base`, a snapshot already taken.
    pub fn from_spare_at(
        repo: &Repo,
        spare: Spare,
        dir: &Path,
        name: &str,
        base: &Snapshot,
    ) -> Result<Worktree, IsolationError> {
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
        // git just moved it (its `.git` file and `gitdir` rewritten); no worker had it.
        let seal = match Seal::take(&path, &repo.common_dir, Some(&branch)) {
            Ok(seal) => seal,
            Err(e) => {
                let _ = remove(&repo.top, &path, None);
                return Err(e);
            }
        };
        let checkout = Git::worktree(&seal).run(
            &PARALLEL_CHECKOUT
                .into_iter()
                .chain([
                    "checkout",
                    "--quiet",
                    "--force",
                    "-B",
                    &branch,
                    &base.commit,
                ])
                .collect::<Vec<_>>(),
        );
        if let Err(e) = checkout {
            let _ = remove(&repo.top, &path, Some(&branch));
            return Err(e);
        }
        // `checkout -B` made HEAD name the branch: the seal's HEAD rule allows it.
        Self::finish(repo, seal, name, branch, base.commit.clone())
    }

    fn finish(
        repo: &Repo,
        seal: Seal,
        name: &str,
        branch: String,
        base: String,
    ) -> Result<Worktree, IsolationError> {
        seal.save()?;
        let path = seal.work_tree.clone();
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
            index: seal.index(),
            git_dir: seal.git_dir.clone(),
            common_dir: seal.common_dir.clone(),
            seal,
        };
        wt.save_base()?;
        Ok(wt)
    }

    /// The worktree `dir/<name>` of an earlier run of this session, if it is still there,
    /// with the seal squad kept beside it (the worktree's own files are not asked).
    pub fn reopen(repo: &Repo, dir: &Path, name: &str) -> Option<Worktree> {
        let path = dir.join(name);
        let base = std::fs::read_to_string(base_file(&path)).ok()?;
        let seal = Seal::load(&path).filter(|s| s.work_tree == path)?;
        Some(Worktree {
            name: name.to_string(),
            root: root_in(&path, &repo.prefix),
            branch: format!("squad/{name}"),
            base: base.trim().to_string(),
            index: seal.index(),
            git_dir: seal.git_dir.clone(),
            common_dir: seal.common_dir.clone(),
            seal,
            path,
        })
    }

    /// Takes down the worktree `dir/<name>` a crash left half made: git made its folder
    /// (and maybe its seal) but its base file, written last, is missing. No call ran in
    /// it (a call runs once its worktree is made), so nothing of the worker's is lost.
    /// Nothing to do when there is no such folder, or it was made whole.
    pub fn discard_unmade(repo: &Repo, dir: &Path, name: &str) -> Result<(), IsolationError> {
        let path = dir.join(name);
        if !path.is_dir() || base_file(&path).exists() {
            return Ok(());
        }
        remove(&repo.top, &path, Some(&format!("squad/{name}")))
    }

    /// What git writes when the worker commits in its worktree, for its sandbox: the
    /// worktree's own git folder, the shared object store, and the folders of squad's
    /// branch refs and their logs (a ref is replaced by a rename inside its folder, so the
    /// folder, not the one file, must be writable). Only folders that exist.
    pub fn git_writable(&self) -> Vec<PathBuf> {
        let mut ref_dir = PathBuf::from("refs/heads");
        ref_dir.extend(self.branch.split('/').filter(|p| !p.is_empty()));
        ref_dir.pop();
        [
            self.git_dir.clone(),
            self.common_dir.join("objects"),
            self.common_dir.join(&ref_dir),
            self.common_dir.join("logs").join(&ref_dir),
        ]
        .into_iter()
        .filter(|p| p.is_dir())
        .collect()
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

    /// Removes the worktree, its files (changed or not) and its branch; a worktree whose
    /// git metadata a worker changed is kept as it is, for the user to look at.
    pub fn remove(&self, repo_top: &Path) -> Result<(), IsolationError> {
        self.seal.check()?;
        remove(repo_top, &self.path, Some(&self.branch))
    }

    /// Removes the worktree and its files but keeps its branch, which holds the worker's
    /// change (see `keep.rs`).
    pub fn remove_keeping_branch(&self, repo_top: &Path) -> Result<(), IsolationError> {
        self.seal.check()?;
        remove(repo_top, &self.path, None)
    }
}
