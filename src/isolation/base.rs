//! A worker's base: the workspace as its supervisor saw it when the worker was spawned, a
//! snapshot commit (see `snapshot.rs`: a tree from a temporary index, uncommitted and
//! untracked files included). The worker's worktree is made from it and its merge back is
//! a three-way merge from it, so what the worker wrote against what it saw either lands
//! beside its siblings' changes or is named as a conflict.
//!
//! One base serves every worker spawned while the workspace stays as it was. squad counts
//! its own changes to the workspace (a merge, a write by the persona or by a tool there);
//! the user's edits show in a walk of the work tree (git's ignore rules, no git process):
//! a file whose change time (ctime, which cannot be set back by hand) is after the base
//! was taken, or a different set of files (one removed, a folder renamed). Before a base
//! is taken, squad waits until the newest change is [`CLOCK_SLACK`] old (rarely at all),
//! so every change the base does not hold is newer than the base's time.

use super::IsolationError;
use super::repo::Repo;
use super::snapshot::{self, Snapshot};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// More than the file system's timestamp step (the kernel's coarse clock, a tick of 1–10
/// ms): a change made after a base was taken may carry a time up to one step before it.
const CLOCK_SLACK: Duration = Duration::from_millis(20);

/// One base, shared by the workers spawned while the workspace did not change.
#[derive(Debug)]
pub struct Base {
    pub snapshot: Snapshot,
    /// squad's count of its own changes to the workspace when the base was taken.
    generation: u64,
    /// Every change the base does not hold carries a later time than this.
    since: SystemTime,
    /// The work tree's files when the base was taken (how many, and their paths).
    files: Files,
}

/// The session's current base and squad's count of its changes to the workspace.
#[derive(Default)]
pub(crate) struct Bases {
    current: Mutex<Option<Arc<Base>>>,
    /// When the last look at the workspace for [`Bases::now`] began: the spawns that asked
    /// before it share its answer (200 spawns of one answer walk the tree once or twice,
    /// not 200 times).
    looked: Mutex<Option<Instant>>,
    generation: AtomicU64,
}

impl Bases {
    /// squad changed the workspace (a merge, a write there): the next spawn gets a new base.
    pub fn changed(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Whether the workspace still is `base`: squad has not changed it since, and no file
    /// of its work tree changed, came or went after the base was taken. A walk, no git.
    pub fn still(&self, base: &Base, top: &Path) -> bool {
        base.generation == self.generation.load(Ordering::Acquire) && Look::at(top).holds(base)
    }

    /// The base for a worker spawned at `asked`: the current one while the workspace is
    /// still it, else a new snapshot. Reads the workspace: run it in the merge queue.
    pub fn now(
        &self,
        repo: &Repo,
        scratch: &Path,
        asked: Instant,
    ) -> Result<Arc<Base>, IsolationError> {
        let generation = self.generation.load(Ordering::Acquire);
        let current = crate::sync::lock(&self.current)
            .clone()
            .filter(|b| b.generation == generation);
        let looked = *crate::sync::lock(&self.looked);
        if let Some(base) = &current
            && looked.is_some_and(|l| l >= asked)
        {
            return Ok(base.clone());
        }
        *crate::sync::lock(&self.looked) = Some(Instant::now());
        let look = Look::at(&repo.top);
        if let Some(base) = current
            && look.holds(&base)
        {
            return Ok(base);
        }
        // Every change seen must be older than `since`: one made from here on carries a
        // later time (at worst one clock step before it is made). A file changed, made or
        // removed while this waits is in the snapshot, which comes after; at worst its count
        // makes the next look call the workspace changed, which costs a snapshot, no more.
        if let Some(wait) = look
            .newest
            .map(|t| t + CLOCK_SLACK)
            .and_then(|t| t.duration_since(SystemTime::now()).ok())
        {
            std::thread::sleep(wait.min(CLOCK_SLACK));
        }
        let since = SystemTime::now() - CLOCK_SLACK;
        let snapshot = snapshot::take(&repo.top, &repo.index, scratch)?;
        let base = Arc::new(Base {
            snapshot,
            generation,
            since,
            files: look.files,
        });
        *crate::sync::lock(&self.current) = Some(base.clone());
        Ok(base)
    }
}

/// Which files a work tree holds: how many, and their paths hashed together (in any
/// order), so a file removed, or a folder renamed (its files keep their times), shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Files {
    count: usize,
    paths: u64,
}

/// One walk of a work tree: its files that git does not ignore (`.git` left out).
struct Look {
    /// The newest change time (ctime) among them.
    newest: Option<SystemTime>,
    files: Files,
}

impl Look {
    /// Folders' own times are left out: making an ignored file (a build's output, an
    /// editor's swap file) changes its folder's, and would call every such moment a change.
    fn at(top: &Path) -> Look {
        use std::hash::{BuildHasher, Hasher};
        let hashing =
            std::hash::BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default();
        let walk = ignore::WalkBuilder::new(top)
            .hidden(false)
            .parents(false)
            .require_git(false)
            .filter_entry(|e| e.file_name() != std::ffi::OsStr::new(".git"))
            .build();
        let mut look = Look {
            newest: None,
            files: Files { count: 0, paths: 0 },
        };
        for entry in walk.filter_map(Result::ok) {
            if entry.file_type().is_none_or(|t| t.is_dir()) {
                continue;
            }
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            let nanos = u32::try_from(meta.ctime_nsec()).unwrap_or(0);
            let ctime = UNIX_EPOCH + Duration::new(u64::try_from(meta.ctime()).unwrap_or(0), nanos);
            look.newest = look.newest.max(Some(ctime));
            let mut h = hashing.build_hasher();
            h.write(entry.path().as_os_str().as_encoded_bytes());
            look.files.count += 1;
            look.files.paths ^= h.finish();
        }
        look
    }

    /// Whether the work tree still is `base`.
    fn holds(&self, base: &Base) -> bool {
        self.files == base.files && self.newest.is_none_or(|t| t <= base.since)
    }
}

/// Where the base is kept between runs (beside the worktree, so a resumed session can
/// reopen it with `Worktree::reopen`).
pub(crate) fn base_file(path: &Path) -> PathBuf {
    path.with_extension("base")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_after_the_base_shows_and_an_ignored_one_does_not() {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path();
        let git = |args: &[&str]| crate::isolation::test_git(top, args);
        git(&["init", "-q"]);
        std::fs::write(top.join(".gitignore"), "target/\n").unwrap();
        std::fs::create_dir_all(top.join("src")).unwrap();
        std::fs::write(top.join("src/a.rs"), "a\n").unwrap();
        let repo = Repo::discover(top).unwrap();
        let scratch = tmp.path().join(".git");
        let bases = Bases::default();
        let base = bases.now(&repo, &scratch, Instant::now()).unwrap();
        assert!(bases.still(&base, top));
        assert!(Arc::ptr_eq(
            &base,
            &bases.now(&repo, &scratch, Instant::now()).unwrap()
        ));
        std::fs::create_dir_all(top.join("target")).unwrap();
        std::fs::write(top.join("target/out"), "built\n").unwrap();
        assert!(bases.still(&base, top), "an ignored file is no change");
        std::fs::write(top.join("src/a.rs"), "b\n").unwrap();
        assert!(!bases.still(&base, top));
        let next = bases.now(&repo, &scratch, Instant::now()).unwrap();
        assert_ne!(next.snapshot, base.snapshot);
        // A removed file, a renamed folder (its files keep their times) show too.
        std::thread::sleep(CLOCK_SLACK);
        std::fs::write(top.join("src/b.rs"), "b\n").unwrap();
        let next = bases.now(&repo, &scratch, Instant::now()).unwrap();
        std::fs::rename(top.join("src"), top.join("lib")).unwrap();
        assert!(!bases.still(&next, top));
        let next = bases.now(&repo, &scratch, Instant::now()).unwrap();
        std::fs::remove_file(top.join("lib/a.rs")).unwrap();
        assert!(!bases.still(&next, top));
        let last = bases.now(&repo, &scratch, Instant::now()).unwrap();
        assert!(bases.still(&last, top));
        bases.changed();
        assert!(!bases.still(&last, top), "squad's own change");
    }
}
