//! Locking that survives a panic elsewhere, and the file lock that says a process still
//! runs.

use std::sync::{Mutex, MutexGuard};

/// Locks `m` even if a thread panicked while holding it: what it guards is plain data
/// left in a consistent state between statements, and one failed task must not take the
/// session down with it.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Takes the exclusive lock on `file` without waiting; false when another open file
/// (in this process or another) holds it. The kernel drops it when its holder ends
/// however it ends, so a lock that can be taken says its owner no longer runs (a pid
/// could have been reused).
pub fn try_lock(file: &std::fs::File) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: flock(2) on a file descriptor we own and keep open; no memory involved.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// Takes a shared lock on `file` without waiting: any number of holders at once, none
/// while another holds [`try_lock`]'s exclusive one. Says "in use" to whoever wants it alone.
pub fn try_lock_shared(file: &std::fs::File) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: as in `try_lock`.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) == 0 }
}
