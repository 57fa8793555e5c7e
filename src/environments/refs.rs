//! The refs squad keeps here for placed workers (issue 52 part 3), pruned once no live or
//! resumable worker needs them. A worker's base is kept under `refs/squad/carried/COMMIT`
//! (the name its bundle carries to the far side), the commit naming its session and its
//! root there; what came back of its change under `refs/squad/returned/SESSION/ID`. At
//! start, those of sessions that no longer run on this data dir go, unless the worker's
//! worktree here is still there (kept for the user, or for a `--continue`): a resumed
//! session holds its own lock by then, so all of its refs stay. Refs of an older squad,
//! which name no session, go only when no other session runs and none left a worktree.

use crate::isolation::{Git, session_runs, worktrees_dir};
use std::path::Path;

const CARRIED: &str = "refs/squad/carried/";
const RETURNED: &str = "refs/squad/returned/";
const BASE_SUBJECT: &str = "squad: a placed worker's base";

/// The subject of a worker's base commit: its session and its root there, so the ref that
/// keeps it names its owner (and two workers never share one).
pub fn base_subject(root: &str) -> String {
    match super::container::owner() {
        Some((_, session)) => format!("{BASE_SUBJECT} (session {session}, root {root})"),
        None => format!("{BASE_SUBJECT} (root {root})"),
    }
}

/// The ref keeping what came back of worker `name`'s change.
pub fn returned_ref(name: &str) -> String {
    match super::container::owner() {
        Some((_, session)) => format!("{RETURNED}{session}/{name}"),
        None => format!("{RETURNED}{name}"),
    }
}

/// Whose a ref is: its session and its worker (by short id), where it says.
#[derive(Debug, PartialEq)]
struct Owner {
    session: Option<String>,
    worker: Option<String>,
}

fn owner_of(name: &str, subject: &str) -> Owner {
    if let Some(rest) = name.strip_prefix(RETURNED) {
        return match rest.split_once('/') {
            Some((session, worker)) => Owner {
                session: Some(session.to_string()),
                worker: Some(worker.to_string()),
            },
            None => Owner {
                session: None,
                worker: Some(rest.to_string()),
            },
        };
    }
    let said = subject
        .strip_prefix(BASE_SUBJECT)
        .and_then(|s| s.trim().strip_prefix('('))
        .and_then(|s| s.strip_suffix(')'));
    let (session, root) = match said {
        Some(s) => match s
            .strip_prefix("session ")
            .and_then(|s| s.split_once(", root "))
        {
            Some((session, root)) => (Some(session.to_string()), Some(root)),
            None => (None, s.strip_prefix("root ")),
        },
        None => (None, None),
    };
    let worker = root
        .and_then(|r| Path::new(r).file_name())
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("squad-"))
        .map(str::to_string);
    Owner { session, worker }
}

/// Deletes the placed workers' refs of `repo` that no live or resumable worker needs (see
/// the module's doc); `me`: this session. Returns the refs deleted.
pub fn prune(repo: &Path, data: &Path, me: &str) -> Result<Vec<String>, String> {
    let git = Git::new(repo);
    let listed = git
        .text(&[
            "for-each-ref",
            "--format=%(refname)%00%(contents:subject)",
            CARRIED,
            RETURNED,
        ])
        .map_err(|e| e.to_string())?;
    let sessions = Sessions::read(data, me);
    let gone: Vec<String> = listed
        .lines()
        .filter_map(|line| line.split_once('\0'))
        .filter(|(name, subject)| !sessions.needs(&owner_of(name, subject)))
        .map(|(name, _)| name.to_string())
        .collect();
    if gone.is_empty() {
        return Ok(gone);
    }
    let script: String = gone.iter().map(|r| format!("delete {r}\n")).collect();
    git.run_with_input(&["update-ref", "--stdin"], Some(script.as_bytes()))
        .map_err(|e| e.to_string())?;
    Ok(gone)
}

/// The sessions of a data dir as pruning sees them.
struct Sessions {
    /// Running sessions other than this one.
    others_run: bool,
    /// `(session, worker)` of every worktree left under `<data>/worktrees`.
    worktrees: Vec<(String, String)>,
    data: std::path::PathBuf,
    me: String,
}

impl Sessions {
    fn read(data: &Path, me: &str) -> Self {
        let mut worktrees = Vec::new();
        let mut others_run = false;
        for session in std::fs::read_dir(worktrees_dir(data))
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = session.file_name().to_string_lossy().into_owned();
            if name != me && session_runs(data, &name) {
                others_run = true;
            }
            for wt in std::fs::read_dir(session.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                // A worker's worktree is named by its short id; squad's own folders are not.
                let worker = wt.file_name().to_string_lossy().into_owned();
                let by_id = worker.len() == 8 && worker.chars().all(|c| c.is_ascii_hexdigit());
                if by_id && wt.path().is_dir() {
                    worktrees.push((name.clone(), worker));
                }
            }
        }
        Self {
            others_run,
            worktrees,
            data: data.to_path_buf(),
            me: me.to_string(),
        }
    }

    fn needs(&self, owner: &Owner) -> bool {
        let has_worktree = |worker: &str| self.worktrees.iter().any(|(_, w)| w == worker);
        match (&owner.session, &owner.worker) {
            (Some(s), _) if *s == self.me || session_runs(&self.data, s) => true,
            (Some(_), Some(w)) => has_worktree(w),
            (Some(s), None) => self.worktrees.iter().any(|(ws, _)| ws == s),
            // An older squad's: its owner is unknown.
            (None, Some(w)) => self.others_run || has_worktree(w),
            (None, None) => self.others_run || !self.worktrees.is_empty(),
        }
    }
}

/// [`prune`] at a session's start (after the worktrees of sessions that no longer run
/// were removed), off the runtime's threads; a workspace outside git has none to prune.
pub async fn prune_at_start(repo: &Path, data: Option<&Path>, me: &str) {
    let Some(data) = data else {
        return;
    };
    let (repo, data, me) = (repo.to_path_buf(), data.to_path_buf(), me.to_string());
    let pruned = tokio::task::spawn_blocking(move || prune(&repo, &data, &me)).await;
    match pruned {
        Ok(Ok(gone)) if !gone.is_empty() => {
            tracing::info!("pruned {} refs of placed workers no one needs", gone.len());
        }
        Ok(Err(e)) => tracing::debug!("no pruning of placed workers' refs: {e}"),
        _ => {}
    }
}

#[cfg(test)]
mod tests;
