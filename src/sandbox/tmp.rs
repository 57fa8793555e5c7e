//! A command's private temp dir, and the sweep of those a crashed squad left behind.
//!
//! Each dir is removed when its command ends; a squad killed mid-command (SIGKILL, a power
//! cut) cannot, and its dirs would pile up in the system's temp folder. So each dir holds
//! a lock file that squad keeps locked while the dir is in use, the way a session's
//! worktree folder says its session runs (`isolation::session_dir`): the kernel drops the
//! lock when squad ends however it ends, so a dir whose lock can be taken is a dead squad's.
//! The first command of every squad process removes those. The file is opened close-on-exec:
//! the command never holds it.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Once;

const PREFIX: &str = "squad-sandbox-";
/// The lock, in the dir itself, so it goes with the dir.
const LOCK: &str = ".squad-lock";

/// A command's temp dir, locked for as long as this lives.
pub(super) struct PrivateDir {
    dir: tempfile::TempDir,
    _lock: File,
}

impl PrivateDir {
    pub(super) fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// A new private dir in the system's temp folder; the first call of the process sweeps
/// that folder first.
pub(super) fn private_dir() -> std::io::Result<PrivateDir> {
    static SWEPT: Once = Once::new();
    let root = std::env::temp_dir();
    SWEPT.call_once(|| {
        let removed = sweep(&root);
        if !removed.is_empty() {
            tracing::info!(
                count = removed.len(),
                "removed the temp dirs of squad processes that no longer run"
            );
        }
    });
    let dir = tempfile::Builder::new().prefix(PREFIX).tempdir_in(root)?;
    let lock = hold(dir.path())?;
    Ok(PrivateDir { dir, _lock: lock })
}

/// Locks the dir's lock file under a name the sweep never opens, then gives it its name:
/// a sweep never finds a lock file that nobody holds yet.
fn hold(dir: &Path) -> std::io::Result<File> {
    let fresh = dir.join(".squad-lock.new");
    let file = File::create(&fresh)?;
    if !crate::sync::try_lock(&file) {
        return Err(std::io::Error::other("cannot lock a new temp dir"));
    }
    std::fs::rename(fresh, dir.join(LOCK))?;
    Ok(file)
}

/// Removes the dirs in `root` whose lock nobody holds; the paths it removed. A dir with no
/// lock file (an older squad's, or one whose command removed it) is left alone, and so is
/// anything it cannot remove (another user's).
pub(super) fn sweep(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(PREFIX))
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .filter(|p| File::open(p.join(LOCK)).is_ok_and(|f| crate::sync::try_lock(&f)))
        .filter(|p| std::fs::remove_dir_all(p).is_ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(root: &Path, name: &str) -> PathBuf {
        let p = root.join(name);
        std::fs::create_dir(&p).unwrap();
        std::fs::write(p.join("left.txt"), "x").unwrap();
        p
    }

    #[test]
    fn only_the_dirs_whose_lock_nobody_holds_go() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        let dead = dir(r, "squad-sandbox-dead");
        drop(hold(&dead).unwrap());
        let live = dir(r, "squad-sandbox-live");
        let _held = hold(&live).unwrap();
        let older_squad = dir(r, "squad-sandbox-nolock");
        let not_ours = dir(r, "something-else");
        drop(hold(&not_ours).unwrap());
        assert_eq!(sweep(r), vec![dead.clone()]);
        assert!(!dead.exists());
        for kept in [live, older_squad, not_ours] {
            assert!(kept.exists(), "{} was removed", kept.display());
        }
    }

    #[test]
    fn a_missing_temp_folder_sweeps_nothing() {
        let root = tempfile::tempdir().unwrap();
        assert!(sweep(&root.path().join("gone")).is_empty());
    }

    #[test]
    fn a_private_dir_is_locked_while_it_lives_and_gone_after() {
        let d = private_dir().unwrap();
        let path = d.path().to_path_buf();
        let lock = File::open(path.join(LOCK)).unwrap();
        assert!(!crate::sync::try_lock(&lock), "held by the dir");
        drop(d);
        assert!(!path.exists());
    }
}
