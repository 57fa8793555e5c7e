//! Writing the rest of a worktree behind its worker's first call (`Worktree::create_lazy_at`
//! made it with that call's files only): the [`Fill`], and its marker beside the worktree,
//! which says after a crash that the fill was cut short and which paths it must not write.

use super::IsolationError;
use super::git::{Git, PARALLEL_CHECKOUT, fields, path_of};
use super::seal::Seal;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Beside the worktree while a [`Fill`] writes its files: the paths its worker's first
/// call may write meanwhile (NUL-separated; empty until those files are checked out).
/// Still there at a resume, it says a crash cut the fill short.
pub(crate) fn fill_file(path: &Path) -> PathBuf {
    path.with_extension("filling")
}

/// Writes the fill marker of the worktree at `path` by a rename, so a crash leaves the old
/// list or the new one, never part of one.
pub(crate) fn save_fill(path: &Path, kept: &[String]) -> Result<(), IsolationError> {
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
pub(crate) fn read_fill(path: &Path) -> Result<Option<Vec<String>>, IsolationError> {
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

/// The files of a worktree made by [`Worktree::create_lazy_at`] that its worker's first call
/// does not write, still to be written. Blocking: run it off the async threads.
#[derive(Debug)]
pub struct Fill {
    /// The worktree's folders, checked before each git run there.
    pub(crate) seal: Seal,
    pub(crate) kept: Vec<String>,
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
                Err(e @ IsolationError::Tampered(_)) => return Err(e),
                Err(e) => tracing::warn!(
                    "filling {}: {e}; trying again",
                    self.seal.work_tree.display()
                ),
            }
        }
        let file = fill_file(&self.seal.work_tree);
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
        self.seal.check()?;
        let lock = self.seal.git_dir.join("index.lock");
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
        let git = Git::worktree(&self.seal);
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

/// Finishes the fill of the worktree sealed by `seal` if a crash cut it short (its marker
/// is there), so what is kept of it holds the worker's change and nothing less.
pub(crate) fn finish_fill(seal: &Seal) -> Result<(), IsolationError> {
    match read_fill(&seal.work_tree)? {
        Some(kept) => Fill {
            seal: seal.clone(),
            kept,
        }
        .resume(),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
