//! A worker's change that did not pass its checks, kept unmerged on its branch
//! `squad/<short id>`: committed there (squad's identity, no hook) with the commit it is
//! measured from named in the message (`Squad-Base: <commit>`), so it survives the
//! worktree and the session, and merges later only when the user asks (`merge_kept`).

use super::IsolationError;
use super::git::Git;
use super::merge::{MergeOutcome, merge_commit};
use super::repo::Repo;
use super::snapshot;
use super::worktree::Worktree;
use std::path::Path;

/// The trailer that names a kept change's starting point.
const BASE_TRAILER: &str = "Squad-Base:";

/// The message of a kept change's commit.
fn message(name: &str, why: &str, base: &str) -> String {
    format!(
        "squad: unmerged change of worker {name}\n\n{}\n\n{BASE_TRAILER} {base}\n",
        why.trim()
    )
}

/// Commits the worktree's files, as they are, onto its branch: HEAD and index move to
/// that commit, no file is touched. False when the worker changed nothing since its
/// starting point; a branch that already holds exactly these files gets no new commit.
pub(crate) fn keep_in_worktree(
    wt: &Worktree,
    scratch: &Path,
    why: &str,
) -> Result<bool, IsolationError> {
    let git = Git::worktree(&wt.seal);
    let now = snapshot::take_in(git, &wt.index, scratch)?;
    let tree = |rev: &str| git.text(&["rev-parse", &format!("{rev}^{{tree}}")]);
    if tree(&wt.base)? == now.tree {
        return Ok(false);
    }
    if tree("HEAD")? == now.tree && base_of(git, "HEAD")?.as_deref() == Some(wt.base.as_str()) {
        return Ok(true);
    }
    let text = message(&wt.name, why, &wt.base);
    let commit = git.text(&["commit-tree", &now.tree, "-p", "HEAD", "-m", &text])?;
    git.run(&["reset", "--quiet", &commit])?;
    Ok(true)
}

/// The starting point a kept commit names, if it is one.
fn base_of(git: Git<'_>, commit: &str) -> Result<Option<String>, IsolationError> {
    let text = git.text(&["log", "-1", "--format=%B", commit, "--"])?;
    Ok(text
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix(BASE_TRAILER))
        .map(|b| b.trim().to_string()))
}

/// The change kept on `branch` in the repository at `top`: its tip and the commit it is
/// measured from (the one its message names, else the tip's parent). `None` when there
/// is no such branch.
pub(crate) fn kept(top: &Path, branch: &str) -> Result<Option<(String, String)>, IsolationError> {
    let git = Git::new(top);
    let tip = git.output(
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("refs/heads/{branch}^{{commit}}"),
        ],
        None,
    )?;
    if tip.code != 0 {
        return Ok(None);
    }
    let tip = String::from_utf8_lossy(&tip.stdout).trim().to_string();
    let base = match base_of(git, &tip)? {
        Some(base) => base,
        None => git.text(&["rev-parse", &format!("{tip}^")])?,
    };
    Ok(Some((tip, base)))
}

/// Merges the change kept on `branch` into the workspace (the user asked for it). On a
/// clean merge the branch goes: the change is in the workspace, and the merge's record
/// takes it back out (`/undo`). `None` when there is no such branch.
pub(crate) fn merge_kept(
    repo: &Repo,
    branch: &str,
    scratch: &Path,
) -> Result<Option<MergeOutcome>, IsolationError> {
    let Some((tip, base)) = kept(&repo.top, branch)? else {
        return Ok(None);
    };
    let git = Git::new(&repo.top);
    let tree = |rev: &str| git.text(&["rev-parse", &format!("{rev}^{{tree}}")]);
    let outcome = if tree(&base)? == tree(&tip)? {
        MergeOutcome::Unchanged
    } else {
        merge_commit(repo, &base, &tip, scratch)?
    };
    if matches!(
        outcome,
        MergeOutcome::Merged { .. } | MergeOutcome::Unchanged
    ) {
        git.run(&["branch", "-D", "--quiet", branch])?;
    }
    Ok(Some(outcome))
}

/// Whether the worktree at `path` (starting point `base`) holds a change on its branch
/// or in its files, for the clean-up of an ended session: then its branch is kept.
pub(crate) fn holds_change(git: Git<'_>, base: Option<&str>) -> bool {
    let Some(base) = base else {
        return false;
    };
    let tree = |rev: &str| git.text(&["rev-parse", &format!("{rev}^{{tree}}")]);
    matches!((tree("HEAD"), tree(base)), (Ok(head), Ok(base)) if head != base)
}

/// The kept message for a change an ended session left (see `cleanup.rs`).
pub(crate) fn stale_message(session: &str, base: Option<&str>) -> String {
    let why = format!("Left by session {session}, which ended before the change was merged.");
    match base {
        Some(base) => message("of an ended session", &why, base),
        None => format!("squad: unmerged change of a worker of session {session}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_commit_names_its_starting_point_and_it_is_read_back() {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path();
        let git = |args: &[&str]| crate::isolation::test_git(top, args);
        git(&["init", "-q"]);
        std::fs::write(top.join("a.txt"), "one\n").unwrap();
        git(&["add", "-A"]);
        git(&["commit", "-qm", "start"]);
        let start = Git::new(top).text(&["rev-parse", "HEAD"]).unwrap();
        git(&["checkout", "-q", "-b", "squad/abc"]);
        std::fs::write(top.join("a.txt"), "two\n").unwrap();
        git(&["add", "-A"]);
        git(&["commit", "-qm", &message("abc", "its tests failed", &start)]);
        let tip = Git::new(top).text(&["rev-parse", "HEAD"]).unwrap();
        assert_eq!(kept(top, "squad/abc").unwrap(), Some((tip, start)));
        assert_eq!(kept(top, "squad/none").unwrap(), None);
    }
}
