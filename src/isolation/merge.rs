//! Bringing a worker's change into the workspace: a three-way merge of the worker's
//! worktree (theirs) into the workspace as it is now (ours, the user's uncommitted
//! changes included) from the worker's starting point (base), by `git merge-tree` on
//! snapshot commits. A clean result is written to the workspace's files only (never a
//! commit, never the user's index); a conflict changes nothing and names each file and
//! hunk.

use super::IsolationError;
use super::conflicts::{Conflict, MergeTree};
use super::git::{Git, fields, join, path_of};
use super::line_merge;
use super::repo::Repo;
use super::snapshot::{self, Snapshot, TempIndex};
use super::worktree::Worktree;
pub use crate::protocol::MergeRecord;
use std::path::Path;

/// How often a merge starts again when the workspace changed while it was being merged.
pub(super) const ATTEMPTS: usize = 3;

/// What merging a worker's change did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MergeOutcome {
    /// The worker changed nothing since its starting point.
    Unchanged,
    /// The workspace's files now hold the worker's change; these files were written or
    /// deleted (empty when the workspace already had the same change). `record` is what
    /// taking the change back needs (`unmerge`).
    Merged {
        files: Vec<String>,
        record: MergeRecord,
    },
    /// Nothing in the workspace changed; these files conflict.
    Conflict { conflicts: Vec<Conflict> },
}

/// The three sides of a merge and git's answer.
pub(crate) struct Merged {
    pub ours: Snapshot,
    pub theirs: Snapshot,
    pub result: MergeTree,
    pub clean: bool,
}

/// Three-way merge of the worktree's current state into the workspace's current state.
/// `theirs` is a snapshot of the worktree already taken.
pub(crate) fn merge_trees(
    repo: &Repo,
    wt: &Worktree,
    theirs: Snapshot,
    scratch: &Path,
) -> Result<Merged, IsolationError> {
    let ours = snapshot::take(&repo.top, &repo.index, scratch)?;
    let (clean, result) = merge_tree(&repo.top, &wt.base, &ours.commit, &theirs.commit, scratch)?;
    Ok(Merged {
        ours,
        theirs,
        result,
        clean,
    })
}

/// git's three-way merge of commits `ours` and `theirs` from `base` in the repository at
/// `top`, then the finer line merge for what git left conflicted; true when clean.
pub(super) fn merge_tree(
    top: &Path,
    base: &str,
    ours: &str,
    theirs: &str,
    scratch: &Path,
) -> Result<(bool, MergeTree), IsolationError> {
    let git = Git::new(top);
    let base = format!("--merge-base={base}");
    let args = [
        "-c",
        "merge.conflictStyle=diff3",
        "merge-tree",
        "--write-tree",
        "-z",
        &base,
        ours,
        theirs,
    ];
    let ran = git.output(&args, None)?;
    match (ran.code, MergeTree::parse(&ran.stdout)) {
        (0, Some(r)) => Ok((true, r)),
        (1, Some(mut r)) => {
            settle_finer(top, &mut r, scratch)?;
            Ok((r.is_clean(), r))
        }
        _ => Err(git.failed(&args, &ran)),
    }
}

/// Settles the files git left conflicted in their contents alone whose changes do not
/// really overlap (`line_merge.rs`: git also calls changes that only touch a conflict),
/// unless the file's `merge` attribute names a merge of the user's choosing. The settled
/// files go into a new result tree; the rest stay conflicts as git named them.
fn settle_finer(top: &Path, result: &mut MergeTree, scratch: &Path) -> Result<(), IsolationError> {
    let candidates = result.content_conflicts();
    if candidates.is_empty() {
        return Ok(());
    }
    let git = Git::new(top);
    let mut args = vec!["check-attr", "-z", "merge", "--"];
    args.extend(candidates.iter().map(|c| c.path.as_str()));
    let attrs = git.run(&args)?;
    let attrs: Vec<&[u8]> = fields(&attrs).collect();
    // Records of three fields: path, attribute, value.
    let default_merge = |path: &str| {
        attrs.chunks(3).any(|r| {
            r.len() == 3 && r[0] == path.as_bytes() && (r[2] == b"unspecified" || r[2] == b"set")
        })
    };
    let mut entries = Vec::new();
    let mut settled = Vec::new();
    for c in candidates.iter().filter(|c| default_merge(&c.path)) {
        let [base, ours, theirs] = [&c.oids[0], &c.oids[1], &c.oids[2]]
            .map(|oid| git.run(&["cat-file", "blob", oid.as_str()]));
        let Some(text) = line_merge::merge(&base?, &ours?, &theirs?) else {
            continue;
        };
        let oid = git.run_with_input(
            &["hash-object", "-w", "--no-filters", "--stdin"],
            Some(&text),
        )?;
        let oid = String::from_utf8_lossy(&oid).trim().to_string();
        entries.extend(format!("{} {oid}\t{}\0", c.mode, c.path).into_bytes());
        settled.push(c.path.clone());
    }
    if settled.is_empty() {
        return Ok(());
    }
    let temp = TempIndex::new(scratch);
    let git = git.with_index(&temp.path);
    git.run(&["read-tree", &result.tree])?;
    git.run_with_input(&["update-index", "-z", "--index-info"], Some(&entries))?;
    let tree = git.text(&["write-tree"])?;
    result.settled(tree, &settled);
    Ok(())
}

/// The words conflict messages use instead of the snapshots' object ids.
pub(crate) fn labels<'a>(wt: &'a Worktree, m: &'a Merged) -> [(&'a str, &'a str); 3] {
    [
        (m.ours.commit.as_str(), "the workspace"),
        (m.theirs.commit.as_str(), "the worker's change"),
        (wt.base.as_str(), "the worker's starting point"),
    ]
}

/// Merges the worker's change into the workspace. On a clean merge the worker's starting
/// point moves to what was merged, so a later merge brings only what it did since.
pub fn merge_into_workspace(
    repo: &Repo,
    wt: &mut Worktree,
    scratch: &Path,
) -> Result<MergeOutcome, IsolationError> {
    let theirs = snapshot::take_in(Git::worktree(&wt.seal), &wt.index, scratch)?;
    if tree_of(&repo.top, &wt.base)? == theirs.tree {
        return Ok(MergeOutcome::Unchanged);
    }
    let merged = merge_commit(repo, &wt.base, &theirs.commit, scratch)?;
    if matches!(merged, MergeOutcome::Merged { .. }) {
        // Keep the worktree's own view in step: HEAD and index at what was merged.
        Git::worktree(&wt.seal).run(&["reset", "--quiet", &theirs.commit])?;
        wt.set_base(theirs.commit.clone())?;
    }
    Ok(merged)
}

/// Merges commit `theirs`, measured from `base`, into the workspace as it is now: a
/// worktree's snapshot, or a change kept on its branch (`keep.rs`).
pub(crate) fn merge_commit(
    repo: &Repo,
    base: &str,
    theirs: &str,
    scratch: &Path,
) -> Result<MergeOutcome, IsolationError> {
    for _ in 0..ATTEMPTS {
        let ours = snapshot::take(&repo.top, &repo.index, scratch)?;
        let (clean, result) = merge_tree(&repo.top, base, &ours.commit, theirs, scratch)?;
        if !clean {
            let labels = [
                (ours.commit.as_str(), "the workspace"),
                (theirs, "the worker's change"),
                (base, "the worker's starting point"),
            ];
            let conflicts = result.conflicts(&repo.top, &labels)?;
            return Ok(MergeOutcome::Conflict { conflicts });
        }
        let changes = changes(&repo.top, &ours.commit, &result.tree)?;
        if !unchanged_since(&repo.top, &changes)? {
            // The user (or a shared worker) wrote one of these files meanwhile: merge
            // again against what is there now rather than overwrite it.
            continue;
        }
        apply(&repo.top, &result.tree, &changes, scratch)?;
        let record = record(&repo.top, &ours.commit, &result.tree)?;
        let files = changes.into_iter().map(|c| c.path).collect();
        return Ok(MergeOutcome::Merged { files, record });
    }
    Err(IsolationError::WorkspaceBusy)
}

/// The commit of the merge's result on top of the workspace's snapshot before it.
fn record(top: &Path, before: &str, tree: &str) -> Result<MergeRecord, IsolationError> {
    let args = [
        "commit-tree",
        tree,
        "-p",
        before,
        "-m",
        "squad: a worker's change merged",
    ];
    let after = Git::new(top).text(&args)?;
    Ok(MergeRecord {
        before: before.to_string(),
        after,
    })
}

/// The tree of a commit.
pub(crate) fn tree_of(dir: &Path, commit: &str) -> Result<String, IsolationError> {
    Git::new(dir).text(&["rev-parse", &format!("{commit}^{{tree}}")])
}

/// One path the merge changes in the workspace.
#[derive(Clone, Debug)]
pub(crate) struct Change {
    old_mode: String,
    old_oid: String,
    new_mode: String,
    pub path: String,
}

const GITLINK: &str = "160000";
const SYMLINK: &str = "120000";
const ABSENT: &str = "000000";

/// What differs between the workspace's snapshot and the merge result. Submodule
/// pointers are left out: squad does not move the user's submodules.
pub(super) fn changes(top: &Path, from: &str, to: &str) -> Result<Vec<Change>, IsolationError> {
    let out = Git::new(top).run(&[
        "diff-tree",
        "-r",
        "-z",
        "--raw",
        "--no-ext-diff",
        "--no-textconv",
        "--no-renames",
        from,
        to,
    ])?;
    let mut it = fields(&out);
    let mut list = Vec::new();
    while let (Some(meta), Some(path)) = (it.next(), it.next()) {
        let meta = String::from_utf8_lossy(meta.strip_prefix(b":").unwrap_or(meta)).into_owned();
        let parts: Vec<&str> = meta.split(' ').collect();
        if parts.len() < 4 {
            continue;
        }
        if parts[0] == GITLINK || parts[1] == GITLINK {
            continue;
        }
        list.push(Change {
            old_mode: parts[0].to_string(),
            new_mode: parts[1].to_string(),
            old_oid: parts[2].to_string(),
            path: path_of(path),
        });
    }
    Ok(list)
}

/// Whether every file about to be written is still as the workspace's snapshot had it.
pub(super) fn unchanged_since(top: &Path, changes: &[Change]) -> Result<bool, IsolationError> {
    let mut regular = Vec::new();
    for c in changes {
        let file = join(top, &c.path);
        let present = std::fs::symlink_metadata(&file).ok();
        match (c.old_mode.as_str(), present) {
            (ABSENT, Some(_)) => return Ok(false),
            (ABSENT, None) => {}
            (_, None) => return Ok(false),
            // Symlinks, and names hash-object's line-based input cannot carry, are
            // written without this check.
            (SYMLINK, Some(_)) => {}
            _ if c.path.contains('\n') => {}
            (_, Some(meta)) if !meta.is_file() => return Ok(false),
            (_, Some(_)) => regular.push(c),
        }
    }
    if regular.is_empty() {
        return Ok(true);
    }
    let input: Vec<u8> = regular
        .iter()
        .flat_map(|c| c.path.bytes().chain(std::iter::once(b'\n')))
        .collect();
    let out = Git::new(top).run_with_input(&["hash-object", "--stdin-paths"], Some(&input))?;
    let now = String::from_utf8_lossy(&out);
    Ok(now.lines().zip(&regular).all(|(oid, c)| oid == c.old_oid))
}

/// Writes the merge result's version of each changed path into the work tree: deletions
/// first (a file may give way to a folder), then every new or changed file, through a
/// temporary index so the user's stays as it was.
pub(super) fn apply(
    top: &Path,
    tree: &str,
    changes: &[Change],
    scratch: &Path,
) -> Result<(), IsolationError> {
    for c in changes.iter().filter(|c| c.new_mode == ABSENT) {
        let file = join(top, &c.path);
        match std::fs::remove_file(&file) {
            Ok(()) => remove_empty_parents(top, &file),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(IsolationError::Io {
                    what: format!("deleting {}", file.display()),
                    source,
                });
            }
        }
    }
    let written: Vec<u8> = changes
        .iter()
        .filter(|c| c.new_mode != ABSENT)
        .flat_map(|c| c.path.bytes().chain(std::iter::once(0)))
        .collect();
    if written.is_empty() {
        return Ok(());
    }
    let temp = TempIndex::new(scratch);
    let git = Git::new(top).with_index(&temp.path);
    git.run(&["read-tree", tree])?;
    git.run_with_input(
        &["checkout-index", "--force", "-z", "--stdin"],
        Some(&written),
    )?;
    Ok(())
}

/// Removes the folders a deletion left empty, up to (not including) `top`, as git does.
fn remove_empty_parents(top: &Path, file: &Path) {
    let mut dir = file.parent();
    while let Some(d) = dir {
        if d == top || !d.starts_with(top) || std::fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_git_calls_a_conflict_is_settled_unless_the_user_chose_the_merge() {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path();
        let git = |args: &[&str]| crate::isolation::test_git(top, args);
        let commit = |text: &str, name: &str| {
            std::fs::write(top.join("hello.txt"), text).unwrap();
            git(&["add", "-A"]);
            git(&["commit", "-qm", name]);
            Git::new(top).text(&["rev-parse", "HEAD"]).unwrap()
        };
        git(&["init", "-q"]);
        let base = commit("marker-4242: hello world\n", "base");
        let ours = commit("marker-4242: hello A\n", "ours");
        git(&["reset", "-q", "--hard", &base]);
        let theirs = commit("marker-4242: hello world\nB-LINE-9\n", "theirs");
        let scratch = top.join(".git");
        let (clean, r) = merge_tree(top, &base, &ours, &theirs, &scratch).unwrap();
        assert!(clean);
        let merged = Git::new(top)
            .run(&["cat-file", "blob", &format!("{}:hello.txt", r.tree)])
            .unwrap();
        assert_eq!(merged, b"marker-4242: hello A\nB-LINE-9\n");
        // The same line changed on both sides stays git's conflict.
        let other = commit("marker-4242: hello B\n", "other");
        let (clean, r) = merge_tree(top, &base, &ours, &other, &scratch).unwrap();
        assert!(!clean);
        assert_eq!(r.content_conflicts().len(), 1);
        // A file whose merge the user chose (`-merge`: keep ours, call it a conflict).
        std::fs::write(top.join(".git/info/attributes"), "hello.txt -merge\n").unwrap();
        let (clean, _) = merge_tree(top, &base, &ours, &theirs, &scratch).unwrap();
        assert!(!clean);
    }

    #[test]
    fn a_file_written_after_the_snapshot_stops_the_merge_from_overwriting_it() {
        let tmp = tempfile::tempdir().unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let ok = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(tmp.path())
            .status()
            .unwrap()
            .success();
        assert!(ok);
        let repo = Repo::discover(tmp.path()).unwrap();
        let top = repo.top.clone();
        std::fs::write(top.join("f.txt"), "one\n").unwrap();
        let before = snapshot::take(&top, &repo.index, scratch.path()).unwrap();
        std::fs::write(top.join("f.txt"), "two\n").unwrap();
        std::fs::write(top.join("new.txt"), "new\n").unwrap();
        let after = snapshot::take(&top, &repo.index, scratch.path()).unwrap();
        let list = changes(&top, &before.commit, &after.tree).unwrap();
        let paths: Vec<&str> = list.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(paths, ["f.txt", "new.txt"]);

        // The workspace as the snapshot had it: safe to write.
        std::fs::write(top.join("f.txt"), "one\n").unwrap();
        std::fs::remove_file(top.join("new.txt")).unwrap();
        assert!(unchanged_since(&top, &list).unwrap());
        // Someone edited a file the merge would write...
        std::fs::write(top.join("f.txt"), "edited meanwhile\n").unwrap();
        assert!(!unchanged_since(&top, &list).unwrap());
        // ...or created one it would add.
        std::fs::write(top.join("f.txt"), "one\n").unwrap();
        std::fs::write(top.join("new.txt"), "someone else's\n").unwrap();
        assert!(!unchanged_since(&top, &list).unwrap());
    }
}
