//! Taking down a worktree squad checked out, a worker's or a spare: git's entry for it,
//! its folder, the files squad keeps beside it (base, fill, seal) and its branch.

use super::IsolationError;
use super::base::base_file;
use super::fill::fill_file;
use super::git::{Git, Ran};
use super::seal::seal_file;
use std::ffi::OsStr;
use std::path::Path;

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
    let _ = std::fs::remove_file(seal_file(path));
    let Some(branch) = branch else {
        return Ok(());
    };
    let ran = git.output(&["branch", "-D", "--quiet", branch], None)?;
    if ran.code != 0 && !ran_says_missing(&ran) {
        return Err(git.failed(&["branch", "-D", "--quiet", branch], &ran));
    }
    Ok(())
}

fn ran_says_missing(ran: &Ran) -> bool {
    ran.stderr.contains("not found")
}
