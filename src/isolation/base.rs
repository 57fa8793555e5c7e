//! A worker's base: the workspace as its supervisor saw it when the worker was spawned, a
//! snapshot commit (see `snapshot.rs`: a tree from a temporary index, uncommitted and
//! untracked files included). The worker's worktree is made from it and its merge back is
//! a three-way merge from it, so what the worker wrote against what it saw either lands
//! beside its siblings' changes or is named as a conflict.
//!
//! One base serves every worker spawned while the workspace stays as it was. squad counts
//! its own changes to the workspace (a merge, a write by the persona or by a tool there);
//! the user's edits are seen by their files' change times: a walk of the work tree (git's
//! ignore rules, no git process) finds any entry changed after the base was taken. A
//! file's ctime cannot be set back by hand, and a folder's changes when a file in it is
//! made, removed or renamed, so a change shows whatever tool made it. Before a base is
//! taken, squad waits until the newest change is [`CLOCK_SLACK`] old (rarely at all),
//! so every change the base does not hold is newer than the base's time minus that slack.

use super::IsolationError;
use super::repo::Repo;
use super::snapshot::{self, Snapshot};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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
}

/// The session's current base and squad's count of its changes to the workspace.
#[derive(Default)]
pub(crate) struct Bases {
    current: Mutex<Option<Arc<Base>>>,
    generation: AtomicU64,
}

impl Bases {
    /// squad changed the workspace (a merge, a write there): the next spawn gets a new base.
    pub fn changed(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Whether the workspace still is `base`: squad has not changed it since, and no file
    /// or folder of its work tree changed after the base was taken. A walk, no git.
    pub fn still(&self, base: &Base, top: &Path) -> bool {
        base.generation == self.generation.load(Ordering::Acquire)
            && newest_change(top).is_none_or(|t| t <= base.since)
    }

    /// The base for a worker spawned now: the current one while the workspace is still
    /// it, else a new snapshot. Reads the workspace: run it in the merge queue.
    pub fn now(&self, repo: &Repo, scratch: &Path) -> Result<Arc<Base>, IsolationError> {
        let generation = self.generation.load(Ordering::Acquire);
        let newest = newest_change(&repo.top);
        if let Some(base) = crate::sync::lock(&self.current).as_ref()
            && base.generation == generation
            && newest.is_none_or(|t| t <= base.since)
        {
            return Ok(base.clone());
        }
        // Every change seen so far must be older than `since`; a change made from here on
        // carries a time after it (at worst one clock step before the snapshot begins).
        if let Some(wait) = newest
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
        });
        *crate::sync::lock(&self.current) = Some(base.clone());
        Ok(base)
    }
}

/// The newest change time (ctime) of any file or folder of the work tree at `top` that git
/// does not ignore, `.git` left out; `None` when nothing could be read.
fn newest_change(top: &Path) -> Option<SystemTime> {
    let walk = ignore::WalkBuilder::new(top)
        .hidden(false)
        .parents(false)
        .require_git(false)
        .filter_entry(|e| e.file_name() != std::ffi::OsStr::new(".git"))
        .build();
    walk.filter_map(Result::ok)
        .filter_map(|e| e.metadata().ok())
        .map(|m| {
            let nanos = u32::try_from(m.ctime_nsec()).unwrap_or(0);
            UNIX_EPOCH + Duration::new(u64::try_from(m.ctime()).unwrap_or(0), nanos)
        })
        .max()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_after_the_base_shows_and_an_ignored_one_does_not() {
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
        std::fs::write(top.join(".gitignore"), "target/\n").unwrap();
        std::fs::create_dir_all(top.join("src")).unwrap();
        std::fs::write(top.join("src/a.rs"), "a\n").unwrap();
        let repo = Repo::discover(top).unwrap();
        let scratch = tmp.path().join(".git");
        let bases = Bases::default();
        let base = bases.now(&repo, &scratch).unwrap();
        assert!(bases.still(&base, top));
        assert!(Arc::ptr_eq(&base, &bases.now(&repo, &scratch).unwrap()));
        std::fs::create_dir_all(top.join("target")).unwrap();
        std::fs::write(top.join("target/out"), "built\n").unwrap();
        assert!(bases.still(&base, top), "an ignored file is no change");
        std::fs::write(top.join("src/a.rs"), "b\n").unwrap();
        assert!(!bases.still(&base, top));
        let next = bases.now(&repo, &scratch).unwrap();
        assert_ne!(next.snapshot, base.snapshot);
        // A removed file shows through its folder.
        std::thread::sleep(CLOCK_SLACK);
        std::fs::remove_file(top.join("src/a.rs")).unwrap();
        assert!(!bases.still(&next, top));
        let last = bases.now(&repo, &scratch).unwrap();
        assert!(bases.still(&last, top));
        bases.changed();
        assert!(!bases.still(&last, top), "squad's own change");
    }
}
