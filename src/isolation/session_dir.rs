//! A session's folder of worktrees, `<data>/worktrees/<session id>/`, and the lock that
//! says the session still runs: `lock` inside it, held with `flock` for the life of the
//! process. The kernel drops the lock when the process ends however it ends, so a folder
//! whose lock can be taken belongs to a session that no longer runs (a pid alone could
//! have been reused). The file also names the pid and the repository, for people and for
//! the clean-up.

use super::IsolationError;
pub(crate) use crate::sync::try_lock;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

const LOCK: &str = "lock";
/// Temporary index files, beside the worktrees (same file system as the data dir).
const SCRATCH: &str = ".scratch";

/// `<data>/worktrees`.
pub fn worktrees_dir(data: &Path) -> PathBuf {
    data.join("worktrees")
}

/// The folder of a running session; its lock is held while this lives.
#[derive(Debug)]
pub struct SessionDir {
    pub dir: PathBuf,
    pub scratch: PathBuf,
    _lock: File,
}

impl SessionDir {
    /// Creates (or, for a resumed session, reuses) the session's folder and takes its lock.
    pub fn claim(data: &Path, session: &str, repo_top: &Path) -> Result<Self, IsolationError> {
        let dir = worktrees_dir(data).join(session);
        let scratch = dir.join(SCRATCH);
        let io = |what: String| move |source| IsolationError::Io { what, source };
        std::fs::create_dir_all(&scratch).map_err(io(format!("creating {}", scratch.display())))?;
        let path = dir.join(LOCK);
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io(format!("opening {}", path.display())))?;
        if !try_lock(&file) {
            return Err(IsolationError::SessionRunning(session.to_string()));
        }
        file.set_len(0)
            .and_then(|_| {
                write!(
                    file,
                    "pid={}\nrepo={}\n",
                    std::process::id(),
                    repo_top.display()
                )
            })
            .map_err(io(format!("writing {}", path.display())))?;
        Ok(SessionDir {
            dir,
            scratch,
            _lock: file,
        })
    }
}

/// The lock file of a session folder, and the repository it names.
pub(crate) fn read_lock(dir: &Path) -> Option<(File, Option<PathBuf>)> {
    let path = dir.join(LOCK);
    let file = OpenOptions::new().read(true).write(true).open(&path).ok()?;
    let repo = std::fs::read_to_string(&path).ok().and_then(|text| {
        text.lines()
            .find_map(|l| l.strip_prefix("repo=").map(PathBuf::from))
    });
    Some((file, repo))
}

/// Whether session `session` of the data dir `data` still runs: its folder's lock is held
/// (a session that never made its folder, or whose folder is gone, does not run).
pub fn session_runs(data: &Path, session: &str) -> bool {
    match read_lock(&worktrees_dir(data).join(session)) {
        Some((file, _)) => !try_lock(&file),
        None => false,
    }
}

/// Whether `name` in a session folder is squad's own file rather than a worktree.
pub(crate) fn is_bookkeeping(name: &str) -> bool {
    name == LOCK || name == SCRATCH || name.ends_with(".base")
}
