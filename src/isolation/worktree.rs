//! One writing worker's worktree: created from the workspace's current state on branch
//! `squad/<short agent id>`, outside the workspace, and removed with its branch. Made cold
//! for a first call that names the only files it writes, it is usable at once: those
//! files are written first and the rest by a [`Fill`] behind the call.

use super::IsolationError;
use super::git::{Git, fields, path_of};
use super::repo::Repo;
use super::snapshot::{self, Snapshot};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

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
}

/// Parallel checkout (git's own `checkout.workers`): writing 10,000 files waits on the
/// file system far more than on the CPU (creating a file took ~1 ms on a busy ext4 disk),
/// so many writers at once finish several times sooner, also on two cores (32 beat 16
/// and 64 on 10,000 files here: 0.48 s against 2.1 and 0.6 s, medians of 7 by hand under
/// load). Below 2,000 files the helper processes cost more than they save.
const PARALLEL_CHECKOUT: [&str; 4] = [
    "-c",
    "checkout.workers=32",
    "-c",
    "checkout.thresholdForParallelism=2000",
];

/// The worktree's index, its own git folder and the repository's common one, in one run.
fn git_paths(path: &Path) -> Result<[PathBuf; 3], IsolationError> {
    let args = [
        "rev-parse",
        "--path-format=absolute",
        "--git-path",
        "index",
        "--git-dir",
        "--git-common-dir",
    ];
    let git = Git::new(path);
    let text = git.text(&args)?;
    let mut lines = text.lines().map(PathBuf::from);
    match (lines.next(), lines.next(), lines.next()) {
        (Some(index), Some(git_dir), Some(common)) => Ok([index, git_dir, common]),
        _ => Err(IsolationError::Git {
            command: args.join(" "),
            dir: path.to_path_buf(),
            code: 0,
            stderr: format!("unexpected output: {text}"),
        }),
    }
}

/// Where the base is kept between runs (beside the worktree, so a resumed session can
/// reopen it with [`Worktree::reopen`]).
fn base_file(path: &Path) -> PathBuf {
    path.with_extension("base")
}

/// Beside the worktree while a [`Fill`] writes its files: the paths its worker's first
/// call may write meanwhile (NUL-separated; empty until those files are checked out).
/// Still there at a resume, it says a crash cut the fill short.
fn fill_file(path: &Path) -> PathBuf {
    path.with_extension("filling")
}

/// Writes the fill marker of the worktree at `path` by a rename, so a crash leaves the old
/// list or the new one, never part of one.
fn save_fill(path: &Path, kept: &[String]) -> Result<(), IsolationError> {
    let file = fill_file(path);
    let temp = path.with_extension("filling.new");
    let bytes: Vec<u8> = kept.iter().flat_map(|p| p.bytes().chain([0])).collect();
    std::fs::write(&temp, bytes)
        .and_then(|()| std::fs::rename(&temp, &file))
        .map_err(|source| IsolationError::Io {
            what: format!("writing {}", file.display()),
            source,
        })
}

/// The paths the fill marker of the worktree at `path` lists; `None` without a marker.
fn read_fill(path: &Path) -> Result<Option<Vec<String>>, IsolationError> {
    let file = fill_file(path);
    match std::fs::read(&file) {
        Ok(bytes) => Ok(Some(fields(&bytes).map(path_of).collect())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(IsolationError::Io {
            what: format!("reading {}", file.display()),
            source,
        }),
    }
}

/// `raw`, a path as a tool got it (relative to the workspace's folder, `prefix` below the
/// top), as git names it from the top; `None` where only the disk could tell which file it
/// is (absolute, `..`) or where writing it early could change how the rest is written
/// (`.gitattributes`) or git itself (`.git`).
fn in_tree(prefix: &Path, raw: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for c in prefix.components().chain(Path::new(raw).components()) {
        match c {
            Component::Normal(p) => parts.push(p.to_str()?),
            Component::CurDir => {}
            _ => return None,
        }
    }
    let last = *parts.last()?;
    if last == ".gitattributes" || parts.contains(&".git") {
        return None;
    }
    Some(parts.join("/"))
}

/// `path`'s folders, nearest first (`a/b/c`: `a/b`, `a`).
fn folders_of(path: &str) -> impl Iterator<Item = &str> {
    std::iter::successors(path.rsplit_once('/').map(|(up, _)| up), |p| {
        p.rsplit_once('/').map(|(up, _)| up)
    })
}

/// Mode of a regular file in a git tree (plain or executable); a folder's.
const FILE_MODES: [&str; 2] = ["100644", "100755"];
const FOLDER_MODE: &str = "040000";

/// Whether a first call that writes `paths` (as git names them) may run before the rest of
/// commit `commit` is written, and the ones among them to check out first (those that are
/// files in it). Only when each is a file or absent, below folders or nothing: through a
/// symlink or a submodule the call would write elsewhere than it says, and where the commit
/// has a folder (at the path) or a file (above it) the fill would later overwrite or
/// fail on what the call made.
fn first_checkout(
    dir: &Path,
    commit: &str,
    paths: &[String],
) -> Result<Option<Vec<String>>, IsolationError> {
    let asked: BTreeSet<&str> = paths
        .iter()
        .flat_map(|p| std::iter::once(p.as_str()).chain(folders_of(p)))
        .collect();
    // Without `-r`, ls-tree prints what each asked name is in the commit: a file, link or
    // submodule as itself, a folder it descends into as its children.
    let mut args = vec!["--literal-pathspecs", "ls-tree", "-z", commit, "--"];
    args.extend(asked.iter().copied());
    let out = Git::new(dir).run(&args)?;
    let mut modes: HashMap<String, String> = HashMap::new();
    let mut below: HashSet<String> = HashSet::new();
    for entry in fields(&out) {
        let Some(tab) = entry.iter().position(|b| *b == b'\t') else {
            continue;
        };
        let name = path_of(&entry[tab + 1..]);
        below.extend(folders_of(&name).map(str::to_string));
        let mode = String::from_utf8_lossy(&entry[..tab]);
        let mode = mode.split(' ').next().unwrap_or_default().to_string();
        modes.insert(name, mode);
    }
    let mut tracked = Vec::new();
    for path in paths {
        if below.contains(path) {
            return Ok(None);
        }
        match modes.get(path).map(String::as_str) {
            None => {}
            Some(m) if FILE_MODES.contains(&m) => tracked.push(path.clone()),
            Some(_) => return Ok(None),
        }
        let folders_only =
            folders_of(path).all(|up| modes.get(up).is_none_or(|m| m == FOLDER_MODE));
        if !folders_only {
            return Ok(None);
        }
    }
    Ok(Some(tracked))
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
        Self::create_at(repo, dir, name, &base)
    }

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
        Self::finish(repo, path, name, branch, base.commit.clone())
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
        let made = Self::lazy(repo, path.clone(), name, branch.clone(), base, writes);
        if made.is_err() {
            let _ = remove(&repo.top, &path, Some(&branch));
        }
        made
    }

    /// The rest of [`Worktree::create_lazy_at`] once git made the empty worktree.
    fn lazy(
        repo: &Repo,
        path: PathBuf,
        name: &str,
        branch: String,
        base: &Snapshot,
        writes: &[String],
    ) -> Result<(Worktree, Option<Fill>), IsolationError> {
        // The index of `base`, no file written (`read-tree` measured 16–28 ms on 10,000
        // files here, `reset -q` 37–52 ms: it also looks at every missing file).
        Git::new(&path).run(&["read-tree", &base.commit])?;
        let kept: Option<Vec<String>> = writes.iter().map(|w| in_tree(&repo.prefix, w)).collect();
        let first = match kept.as_deref() {
            Some(paths) if !paths.is_empty() => first_checkout(&path, &base.commit, paths)?,
            _ => None,
        };
        // Before the base file: a worktree a resume finds has its marker if not filled.
        save_fill(&path, &[])?;
        let wt = Self::finish(repo, path.clone(), name, branch, base.commit.clone())?;
        let mut fill = Fill {
            path,
            kept: Vec::new(),
        };
        let (Some(tracked), Some(kept)) = (first, kept) else {
            fill.run()?;
            return Ok((wt, None));
        };
        if !tracked.is_empty() {
            let list: Vec<u8> = tracked.iter().flat_map(|p| p.bytes().chain([0])).collect();
            Git::new(&fill.path).run_with_input(
                &["checkout-index", "--force", "-u", "-z", "--stdin"],
                Some(&list),
            )?;
        }
        // From here a crash keeps what the first call may have written.
        save_fill(&fill.path, &kept)?;
        fill.kept = kept;
        Ok((wt, Some(fill)))
    }

    /// A fill a crash cut short (its marker is still beside the worktree), to run again
    /// before the worktree is used; `Err` when the marker cannot be read.
    pub fn unfinished_fill(&self) -> Result<Option<Fill>, IsolationError> {
        Ok(read_fill(&self.path)?.map(|kept| Fill {
            path: self.path.clone(),
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
        let checkout = Git::new(&path).run(
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
        Self::finish(repo, path, name, branch, base.commit.clone())
    }

    fn finish(
        repo: &Repo,
        path: PathBuf,
        name: &str,
        branch: String,
        base: String,
    ) -> Result<Worktree, IsolationError> {
        let [index, git_dir, common_dir] = git_paths(&path)?;
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
            git_dir,
            common_dir,
        };
        wt.save_base()?;
        Ok(wt)
    }

    /// The worktree `dir/<name>` of an earlier run of this session, if it is still there.
    pub fn reopen(repo: &Repo, dir: &Path, name: &str) -> Option<Worktree> {
        let path = dir.join(name);
        let base = std::fs::read_to_string(base_file(&path)).ok()?;
        let [index, git_dir, common_dir] = git_paths(&path).ok()?;
        Some(Worktree {
            name: name.to_string(),
            root: root_in(&path, &repo.prefix),
            branch: format!("squad/{name}"),
            base: base.trim().to_string(),
            index,
            git_dir,
            common_dir,
            path,
        })
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

    /// Removes the worktree, its files (changed or not) and its branch.
    pub fn remove(&self, repo_top: &Path) -> Result<(), IsolationError> {
        remove(repo_top, &self.path, Some(&self.branch))
    }
}

/// The files of a worktree made by [`Worktree::create_lazy_at`] that its worker's first call
/// does not write, still to be written. Blocking: run it off the async threads.
#[derive(Debug)]
pub struct Fill {
    path: PathBuf,
    kept: Vec<String>,
}

/// Tries of a fill: one more after a failure.
const FILL_TRIES: u32 = 2;

/// How long a fill cut short by a crash waits for the index lock it may have left, in
/// case the killed process's git still runs (a fill of 10,000 files took up to 3.5 s).
const STALE_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(5);
const STALE_LOCK_STEP: std::time::Duration = std::time::Duration::from_millis(50);

impl Fill {
    /// The paths the first call may write (as git names them): never written by the fill.
    pub fn kept(&self) -> &[String] {
        &self.kept
    }

    /// Writes every file of the worktree's index but the kept ones, overwriting what is
    /// there (a crash may have left a file half written), with git's parallel checkout;
    /// then removes the marker. Tried twice. Also what a resume runs after a crash.
    pub fn run(&self) -> Result<(), IsolationError> {
        let mut tries = 0;
        loop {
            tries += 1;
            match self.write_all() {
                Ok(()) => break,
                Err(e) if tries >= FILL_TRIES => return Err(e),
                Err(e) => tracing::warn!("filling {}: {e}; trying again", self.path.display()),
            }
        }
        let file = fill_file(&self.path);
        match std::fs::remove_file(&file) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            // A marker left behind would make a resume write over the worker's later
            // changes: the worktree cannot be trusted.
            Err(source) => Err(IsolationError::Io {
                what: format!("removing {}", file.display()),
                source,
            }),
        }
    }

    /// A fill found unfinished at a resume: first the index lock the killed one may have
    /// left (waited for a while in case its git still runs), then [`Fill::run`].
    pub fn resume(&self) -> Result<(), IsolationError> {
        let lock = Git::new(&self.path).text(&[
            "rev-parse",
            "--path-format=absolute",
            "--git-path",
            "index.lock",
        ])?;
        let lock = PathBuf::from(lock);
        let mut waited = std::time::Duration::ZERO;
        while lock.exists() && waited < STALE_LOCK_WAIT {
            std::thread::sleep(STALE_LOCK_STEP);
            waited += STALE_LOCK_STEP;
        }
        match std::fs::remove_file(&lock) {
            Ok(()) => tracing::warn!("removed a stale {}", lock.display()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(IsolationError::Io {
                    what: format!("removing {}", lock.display()),
                    source,
                });
            }
        }
        self.run()
    }

    fn write_all(&self) -> Result<(), IsolationError> {
        let git = Git::new(&self.path);
        let listed = git.run(&["ls-files", "-z"])?;
        let kept: HashSet<&[u8]> = self.kept.iter().map(|p| p.as_bytes()).collect();
        let list: Vec<u8> = fields(&listed)
            .filter(|p| !kept.contains(p))
            .flat_map(|p| p.iter().copied().chain([0]))
            .collect();
        if list.is_empty() {
            return Ok(());
        }
        // `-f`: a file that is there is not the commit's (only the kept ones may differ,
        // and they are not listed). Without it git also exits 1 for files it skips, so a
        // real failure could not be told apart.
        let args = PARALLEL_CHECKOUT.into_iter().chain([
            "checkout-index",
            "--force",
            "-u",
            "-q",
            "-z",
            "--stdin",
        ]);
        git.run_with_input(&args.collect::<Vec<_>>(), Some(&list))?;
        Ok(())
    }
}

/// Finishes the fill of the worktree at `path` if a crash cut it short (its marker is
/// there), so what is kept of it holds the worker's change and nothing less.
pub(crate) fn finish_fill(path: &Path) -> Result<(), IsolationError> {
    match read_fill(path)? {
        Some(kept) => Fill {
            path: path.to_path_buf(),
            kept,
        }
        .resume(),
        None => Ok(()),
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
    let _ = std::fs::remove_file(fill_file(path));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tools_path_is_named_from_the_top_or_not_at_all() {
        let top = Path::new("");
        assert_eq!(in_tree(top, "src/a.rs").as_deref(), Some("src/a.rs"));
        assert_eq!(
            in_tree(Path::new("ws/sub"), "./a b/c.rs").as_deref(),
            Some("ws/sub/a b/c.rs")
        );
        for refused in [
            "../x",
            "a/../b",
            "/etc/passwd",
            "",
            ".",
            "sub/.gitattributes",
            ".git/config",
        ] {
            assert_eq!(in_tree(top, refused), None, "{refused}");
        }
    }

    #[test]
    fn folders_come_nearest_first() {
        assert_eq!(folders_of("a/b/c").collect::<Vec<_>>(), ["a/b", "a"]);
        assert_eq!(folders_of("c").count(), 0);
    }

    #[test]
    fn the_fill_marker_keeps_any_path_and_none_is_no_marker() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("wt");
        assert_eq!(read_fill(&path).unwrap(), None);
        let kept = vec!["a b.txt".to_string(), "new\nline.rs".to_string()];
        save_fill(&path, &kept).unwrap();
        assert_eq!(read_fill(&path).unwrap(), Some(kept));
        save_fill(&path, &[]).unwrap();
        assert_eq!(read_fill(&path).unwrap(), Some(Vec::new()));
        assert!(!path.with_extension("filling.new").exists());
    }

    #[test]
    fn only_files_and_new_paths_below_folders_may_be_written_before_the_fill() {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path();
        let git = |args: &[&str]| {
            let ok = std::process::Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@localhost"])
                .args(args)
                .current_dir(top)
                .status()
                .unwrap()
                .success();
            assert!(ok, "git {args:?}");
        };
        git(&["init", "-q"]);
        std::fs::create_dir_all(top.join("d")).unwrap();
        for f in ["f", "x.sh", "d/g"] {
            std::fs::write(top.join(f), "x\n").unwrap();
        }
        std::os::unix::fs::symlink("d", top.join("link")).unwrap();
        git(&["add", "-A"]);
        git(&["update-index", "--chmod=+x", "x.sh"]);
        git(&["commit", "-qm", "s"]);
        let check = |paths: &[&str]| {
            let paths: Vec<String> = paths.iter().map(|p| p.to_string()).collect();
            first_checkout(top, "HEAD", &paths).unwrap()
        };
        let files = ["f", "d/g", "x.sh"].map(String::from).to_vec();
        assert_eq!(check(&["f", "d/g", "x.sh"]), Some(files));
        // New files, in new folders too; `?` is no wildcard.
        assert_eq!(
            check(&["new.txt", "d/new/deeper.txt", "d/g?"]),
            Some(vec![])
        );
        // A folder, a symlink, a path through one or below a file: not before the fill.
        for refused in [
            &["d"][..],
            &["link"],
            &["link/g"],
            &["f/below"],
            &["f", "d"],
        ] {
            assert_eq!(check(refused), None, "{refused:?}");
        }
    }
}
