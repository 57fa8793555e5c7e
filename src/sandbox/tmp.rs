//! A command's private temp dir, and the sweep of those a crashed squad left behind.
//!
//! Each dir is removed when its command ends; a squad killed mid-command (SIGKILL, a power
//! cut) cannot, and its dirs would pile up in the system's temp folder. So each name says
//! whose it is (`squad-sandbox-<pid namespace>-<pid>-…`), and the first command of every
//! squad process removes the dirs of squad processes of its own pid namespace that no
//! longer run. The namespace is part of the name because a pid means nothing outside its
//! namespace: a container sharing the temp folder would otherwise see a live squad's dir as
//! dead.

use std::path::{Path, PathBuf};
use std::sync::Once;

const PREFIX: &str = "squad-sandbox-";

/// A new private dir in the system's temp folder, named for this process; the first call
/// of the process sweeps that folder first.
pub(super) fn private_dir() -> std::io::Result<tempfile::TempDir> {
    static SWEPT: Once = Once::new();
    let root = std::env::temp_dir();
    SWEPT.call_once(|| {
        let removed = sweep(&root, namespace(), &running);
        if !removed.is_empty() {
            tracing::info!(
                count = removed.len(),
                "removed the temp dirs of squad processes that no longer run"
            );
        }
    });
    tempfile::Builder::new()
        .prefix(&format!("{PREFIX}{}-{}-", namespace(), std::process::id()))
        .tempdir_in(root)
}

/// Removes the dirs in `root` made by processes of namespace `ns` that are not `running`;
/// the paths it removed. Errors (another user's dir, a race with its owner) are skipped.
pub(super) fn sweep(root: &Path, ns: u64, running: &dyn Fn(u32) -> bool) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let own = std::process::id();
    entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| match owner(&e.file_name().to_string_lossy()) {
            Some((dir_ns, pid)) => dir_ns == ns && pid != own && !running(pid),
            None => false,
        })
        .map(|e| e.path())
        .filter(|p| std::fs::remove_dir_all(p).is_ok())
        .collect()
}

/// The namespace and pid a dir's name holds; `None` for any other name (a dir of an older
/// squad, which named neither, is left alone).
fn owner(name: &str) -> Option<(u64, u32)> {
    let mut parts = name.strip_prefix(PREFIX)?.splitn(3, '-');
    let ns = parts.next()?.parse().ok()?;
    let pid = parts.next()?.parse().ok()?;
    parts.next()?;
    Some((ns, pid))
}

/// This process's pid namespace (the inode of `/proc/self/ns/pid`); 0 where there is none.
fn namespace() -> u64 {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata("/proc/self/ns/pid").map_or(0, |m| m.ino())
    }
    #[cfg(not(target_os = "linux"))]
    {
        0
    }
}

/// Whether a process with this pid exists (ours or another user's).
fn running(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists; nothing is sent.
    let alive = unsafe { libc::kill(pid, 0) } == 0;
    alive || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
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
    fn only_the_dirs_of_dead_processes_of_this_namespace_go() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        let dead = dir(r, "squad-sandbox-7-4242-abc");
        let live = dir(r, "squad-sandbox-7-4343-abc");
        let other_ns = dir(r, "squad-sandbox-8-4242-abc");
        let older_squad = dir(r, "squad-sandbox-Xy12ab");
        let not_ours = dir(r, "something-7-4242-abc");
        let own = dir(r, &format!("squad-sandbox-7-{}-abc", std::process::id()));
        let removed = sweep(r, 7, &|pid| pid == 4343);
        assert_eq!(removed, vec![dead.clone()]);
        assert!(!dead.exists());
        for kept in [live, other_ns, older_squad, not_ours, own] {
            assert!(kept.exists(), "{} was removed", kept.display());
        }
    }

    #[test]
    fn a_missing_temp_folder_sweeps_nothing() {
        let root = tempfile::tempdir().unwrap();
        assert!(sweep(&root.path().join("gone"), 7, &|_| false).is_empty());
    }

    #[test]
    fn this_process_runs_and_a_pid_beyond_the_kernels_range_does_not() {
        assert!(running(std::process::id()));
        assert!(!running(u32::MAX));
        // pid 1 belongs to another user in most setups: EPERM still means it runs.
        assert!(running(1));
    }

    #[test]
    fn a_private_dir_is_named_for_its_process() {
        let d = private_dir().unwrap();
        let name = d.path().file_name().unwrap().to_string_lossy().to_string();
        assert_eq!(owner(&name), Some((namespace(), std::process::id())));
    }
}
