//! Redoing a worker's change on the workspace's current state after a conflict: the
//! worktree becomes the merge of its change into the workspace, conflict markers and
//! all, and its starting point becomes the workspace's current state, so once the worker
//! has settled the markers its next merge is clean. Only the worktree changes.

use super::IsolationError;
use super::conflicts::Conflict;
use super::git::{Git, join};
use super::merge::{labels, merge_trees};
use super::repo::Repo;
use super::snapshot;
use super::worktree::Worktree;
use std::path::Path;

/// Moves the worker's worktree onto the workspace as it is now. Returns the files left
/// with conflict markers in the worktree (none when the change merged cleanly).
pub fn redo_on_current(
    repo: &Repo,
    wt: &mut Worktree,
    scratch: &Path,
) -> Result<Vec<Conflict>, IsolationError> {
    let (theirs, theirs_index) =
        snapshot::take_with_index(Git::worktree(&wt.seal), &wt.index, scratch)?;
    let m = merge_trees(repo, wt, theirs, scratch)?;
    let conflicts = if m.clean {
        Vec::new()
    } else {
        m.result.conflicts(&repo.top, &labels(wt, &m))?
    };
    // The temporary index describes the worktree's files exactly (fresh from the
    // snapshot), so moving it to the merge result rewrites just the files that differ,
    // and removes the ones the result does not have.
    Git::worktree(&wt.seal)
        .with_index(&theirs_index.path)
        .run(&["read-tree", "--reset", "-u", &m.result.tree])?;
    for c in &conflicts {
        relabel_markers(&join(&wt.path, &c.path), &m, &wt.base);
    }
    // HEAD and index at the workspace's state: the worker's `git diff` shows its change
    // on top of it, markers included.
    Git::worktree(&wt.seal).run(&["reset", "--quiet", &m.ours.commit])?;
    wt.set_base(m.ours.commit.clone())?;
    Ok(conflicts)
}

/// Names the sides of each marker in words (git labels them with the snapshots' ids).
fn relabel_markers(file: &Path, m: &super::merge::Merged, base: &str) {
    let Ok(text) = std::fs::read_to_string(file) else {
        return;
    };
    let sides = [
        ("<<<<<<< ", m.ours.commit.as_str(), "workspace (current)"),
        ("||||||| ", base, "your starting point"),
        (">>>>>>> ", m.theirs.commit.as_str(), "your change"),
    ];
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let relabelled = sides.iter().find_map(|(marker, oid, word)| {
            let rest = line.strip_prefix(marker)?.strip_prefix(oid)?;
            Some(format!("{marker}{word}{rest}"))
        });
        out.push_str(relabelled.as_deref().unwrap_or(line));
    }
    if out != text {
        let _ = std::fs::write(file, out);
    }
}
