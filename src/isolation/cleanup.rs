//! Removing the worktrees of sessions that no longer run (their process ended without
//! cleaning up: a crash, a kill, a closed terminal), when squad starts.

use super::base_checkout::BASE_PREFIX;
use super::fill::finish_fill;
use super::git::Git;
use super::seal::Seal;
use super::session_dir::{is_bookkeeping, read_lock, try_lock, worktrees_dir};
use super::spare::SPARE_PREFIX;
use super::teardown;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How old a session folder without a lock file must be before it counts as abandoned.
const HALF_MADE_AGE: Duration = Duration::from_secs(60);

/// One worktree removed, for the front end to say so.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Removed {
    pub session: String,
    pub path: PathBuf,
    pub branch: String,
    /// What went wrong, when the worktree could not be removed cleanly (its folder is
    /// deleted in any case).
    pub problem: Option<String>,
    /// The worker had changed files (an unmerged change, e.g. after a conflict): they are
    /// committed on its branch, which is kept, so nothing written is lost.
    pub kept: bool,
}

/// Removes every worktree (and its `squad/…` branch) under `<data>/worktrees` whose
/// session no longer runs, and that session's folder. Running sessions, this one
/// included once it has claimed its folder, are left alone.
pub fn remove_stale(data: &Path) -> Vec<Removed> {
    let mut removed = Vec::new();
    let Ok(sessions) = std::fs::read_dir(worktrees_dir(data)) else {
        return removed;
    };
    for entry in sessions.flatten() {
        let dir = entry.path();
        if !dir.is_dir() {
            continue;
        }
        let session = entry.file_name().to_string_lossy().into_owned();
        let (lock, repo) = match read_lock(&dir) {
            Some((file, repo)) => (Some(file), repo),
            // A folder without its lock file is being made right now, or was left
            // half made long ago.
            None if recently_changed(&dir) => continue,
            None => (None, None),
        };
        // Held for the whole clean-up, so a resume of that session cannot start meanwhile.
        if let Some(file) = &lock
            && !try_lock(file)
        {
            continue;
        }
        let mut kept_any = false;
        for wt in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = wt.file_name().to_string_lossy().into_owned();
            if is_bookkeeping(&name) || !wt.path().is_dir() {
                continue;
            }
            // A spare or a base checkout: squad's own, never a worker's.
            let spare = name.starts_with(SPARE_PREFIX) || name.starts_with(BASE_PREFIX);
            let branch = format!("squad/{name}");
            // squad runs git in a worker's worktree only as its seal says, and not at all
            // if the worker changed its git metadata: then it stays, for the user. (A spare
            // was never a worker's: squad runs no git inside it.)
            let sealed = match Seal::load(&wt.path()) {
                _ if spare => None,
                Some(seal) if seal.work_tree == wt.path() => Some(seal.check().map(|()| seal)),
                _ => Some(Err(super::IsolationError::Tampered(format!(
                    "the worktree {} has no record of its git metadata: squad runs no git \
                     there, and its files stay as they are for you to look at",
                    wt.path().display()
                )))),
            };
            let kept = match sealed {
                None => false,
                Some(Ok(seal)) => {
                    // A fill the crash cut short would make every unwritten file a deletion
                    // of the kept change. If it cannot be finished, the change is kept all
                    // the same.
                    if let Err(e) = finish_fill(&seal) {
                        tracing::warn!("stale worktree {}: {e}", wt.path().display());
                    }
                    repo.is_some() && keep_change(&seal, &session)
                }
                Some(Err(e)) => {
                    kept_any = true;
                    removed.push(Removed {
                        session: session.clone(),
                        path: wt.path(),
                        branch,
                        problem: Some(e.to_string()),
                        kept: true,
                    });
                    continue;
                }
            };
            let problem = match &repo {
                Some(top) if top.is_dir() => teardown::remove(
                    top,
                    &wt.path(),
                    (!spare && !kept).then_some(branch.as_str()),
                )
                .err()
                .map(|e| e.to_string()),
                _ => Some("its repository is gone".to_string()),
            };
            if wt.path().exists() {
                let _ = std::fs::remove_dir_all(wt.path());
            }
            if spare {
                // squad's own, held no one's work: not worth telling.
                continue;
            }
            removed.push(Removed {
                session: session.clone(),
                path: wt.path(),
                branch,
                problem,
                kept,
            });
        }
        // A worktree kept for the user keeps its session's folder (and its seal) too.
        if !kept_any {
            let _ = std::fs::remove_dir_all(&dir);
        }
        drop(lock);
    }
    removed.sort_by(|a, b| a.path.cmp(&b.path));
    removed
}

/// Commits what the worker left in its worktree onto its branch; true if the branch then
/// holds a change (committed now, or kept there before because it failed its checks, see
/// `keep.rs`). squad's own identity, no hooks and no signing: it is a record of the
/// worker's files, not the user's commit.
fn keep_change(seal: &Seal, session: &str) -> bool {
    let git = Git::worktree(seal);
    let base = std::fs::read_to_string(super::base::base_file(&seal.work_tree))
        .ok()
        .map(|b| b.trim().to_string());
    let changed = git
        .run(&["status", "--porcelain", "--untracked-files=all"])
        .is_ok_and(|out| !out.is_empty());
    if !changed {
        return super::keep::holds_change(git, base.as_deref());
    }
    let message = super::keep::stale_message(session, base.as_deref());
    git.run(&["add", "-A"]).is_ok()
        && git
            .run(&[
                "-c",
                "user.name=squad",
                "-c",
                "user.email=squad@localhost",
                "-c",
                "commit.gpgsign=false",
                "commit",
                "--quiet",
                "--no-verify",
                "-m",
                &message,
            ])
            .is_ok()
}

fn recently_changed(dir: &Path) -> bool {
    std::fs::metadata(dir)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_none_or(|age| age < HALF_MADE_AGE)
}
