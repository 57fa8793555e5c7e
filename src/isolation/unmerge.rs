//! Taking one merged worker change back out of the workspace (`/undo` on the worker): the
//! three-way merge of the workspace as it was before the merge (theirs) into the workspace
//! as it is now (ours), from the workspace just after the merge (base). What the user or
//! other workers changed since stays; where they changed the very lines the worker's change
//! brought, that is a conflict, and nothing is written unless the user says to (`force`:
//! those files go back to what they were before the merge).

use super::IsolationError;
use super::conflicts::Conflict;
use super::git::Git;
use super::merge::{ATTEMPTS, MergeRecord, apply, changes, merge_tree, unchanged_since};
use super::repo::Repo;
use super::snapshot::{self, TempIndex};
use std::path::Path;

/// What taking a merged change back did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UnmergeOutcome {
    /// These files were written or deleted.
    Undone { files: Vec<String> },
    /// The workspace no longer holds anything of the change.
    Unchanged,
    /// Nothing was written: these files were changed since the merge where the change is.
    Conflict { conflicts: Vec<Conflict> },
}

/// Takes the merge `record` back out of the workspace of `repo`.
pub fn unmerge(
    repo: &Repo,
    record: &MergeRecord,
    scratch: &Path,
    force: bool,
) -> Result<UnmergeOutcome, IsolationError> {
    for _ in 0..ATTEMPTS {
        let now = snapshot::take(&repo.top, &repo.index, scratch)?;
        let (clean, mut result) = merge_tree(
            &repo.top,
            &record.after,
            &now.commit,
            &record.before,
            scratch,
        )?;
        if !clean {
            let labels = [
                (now.commit.as_str(), "the workspace"),
                (record.before.as_str(), "the workspace before the merge"),
                (record.after.as_str(), "the merged change"),
            ];
            let conflicts = result.conflicts(&repo.top, &labels)?;
            if !force {
                return Ok(UnmergeOutcome::Conflict { conflicts });
            }
            let paths: Vec<String> = conflicts.into_iter().map(|c| c.path).collect();
            result.tree = as_before(&repo.top, &result.tree, &record.before, &paths, scratch)?;
        }
        let changes = changes(&repo.top, &now.commit, &result.tree)?;
        if changes.is_empty() {
            return Ok(UnmergeOutcome::Unchanged);
        }
        if !unchanged_since(&repo.top, &changes)? {
            continue;
        }
        apply(&repo.top, &result.tree, &changes, scratch)?;
        let files = changes.into_iter().map(|c| c.path).collect();
        return Ok(UnmergeOutcome::Undone { files });
    }
    Err(IsolationError::WorkspaceBusy)
}

/// `tree` with each of `paths` as the commit `before` had it (absent there: removed).
fn as_before(
    top: &Path,
    tree: &str,
    before: &str,
    paths: &[String],
    scratch: &Path,
) -> Result<String, IsolationError> {
    let git = Git::new(top);
    let mut entries = Vec::new();
    for path in paths {
        let listed = git.run(&["ls-tree", "-z", before, "--", path])?;
        let line = String::from_utf8_lossy(&listed);
        let line = line.trim_end_matches('\0');
        match line.split_once('\t') {
            Some((meta, _)) => {
                let mut words = meta.split(' ');
                let (mode, oid) = (words.next().unwrap_or(""), words.nth(1).unwrap_or(""));
                entries.extend(format!("{mode} {oid}\t{path}\0").into_bytes());
            }
            None => entries.extend(format!("0 {}\t{path}\0", "0".repeat(40)).into_bytes()),
        }
    }
    let temp = TempIndex::new(scratch);
    let git = git.with_index(&temp.path);
    git.run(&["read-tree", tree])?;
    git.run_with_input(&["update-index", "-z", "--index-info"], Some(&entries))?;
    git.text(&["write-tree"])
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::isolation::test_git;

    /// A repository with `a.txt` committed, and the record of a "merge" that changed it
    /// from `before` to `after` (made the way a worker's merge makes one).
    fn merged(top: &Path, before: &str, after: &str) -> (Repo, MergeRecord) {
        test_git(top, &["init", "-q"]);
        std::fs::write(top.join("a.txt"), before).unwrap();
        test_git(top, &["add", "-A"]);
        test_git(top, &["commit", "-qm", "base"]);
        let repo = Repo::discover(top).unwrap();
        let scratch = top.join(".git");
        let snap = snapshot::take(&repo.top, &repo.index, &scratch).unwrap();
        std::fs::write(top.join("a.txt"), after).unwrap();
        std::fs::write(top.join("new.txt"), "made by the worker\n").unwrap();
        let done = snapshot::take(&repo.top, &repo.index, &scratch).unwrap();
        let args = ["commit-tree", &done.tree, "-p", &snap.commit, "-m", "m"];
        let after = Git::new(top).text(&args).unwrap();
        let record = MergeRecord {
            before: snap.commit,
            after,
        };
        (repo, record)
    }

    const BEFORE: &str = "one\ntwo\nthree\nfour\nfive\nsix\nseven\n";
    const AFTER: &str = "one\ntwo\nTHREE by the worker\nfour\nfive\nsix\nseven\n";

    #[test]
    fn the_change_goes_and_the_users_later_edit_elsewhere_stays() {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path().canonicalize().unwrap();
        let (repo, record) = merged(&top, BEFORE, AFTER);
        // The user edits another line of the same file after the merge.
        let users = AFTER.replace("seven", "seven, the user's");
        std::fs::write(top.join("a.txt"), &users).unwrap();
        let done = unmerge(&repo, &record, &top.join(".git"), false).unwrap();
        let UnmergeOutcome::Undone { mut files } = done else {
            panic!("{done:?}")
        };
        files.sort();
        assert_eq!(files, ["a.txt", "new.txt"]);
        let text = std::fs::read_to_string(top.join("a.txt")).unwrap();
        assert_eq!(text, BEFORE.replace("seven", "seven, the user's"));
        assert!(!top.join("new.txt").exists());
        // Once undone, there is nothing left to undo.
        let again = unmerge(&repo, &record, &top.join(".git"), false).unwrap();
        assert_eq!(again, UnmergeOutcome::Unchanged);
    }

    #[test]
    fn a_user_edit_of_the_merged_lines_is_asked_about_and_kept_unless_forced() {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path().canonicalize().unwrap();
        let (repo, record) = merged(&top, BEFORE, AFTER);
        let users = AFTER.replace("THREE by the worker", "THREE, fixed by the user");
        std::fs::write(top.join("a.txt"), &users).unwrap();
        let asked = unmerge(&repo, &record, &top.join(".git"), false).unwrap();
        let UnmergeOutcome::Conflict { conflicts } = asked else {
            panic!("{asked:?}")
        };
        assert_eq!(conflicts.len(), 1);
        assert_eq!(conflicts[0].path, "a.txt");
        // Nothing written: the user's edit and the worker's new file are both there.
        assert_eq!(std::fs::read_to_string(top.join("a.txt")).unwrap(), users);
        assert!(top.join("new.txt").exists());
        // Forced: the file goes back to what it was before the merge.
        let forced = unmerge(&repo, &record, &top.join(".git"), true).unwrap();
        assert!(
            matches!(forced, UnmergeOutcome::Undone { .. }),
            "{forced:?}"
        );
        assert_eq!(std::fs::read_to_string(top.join("a.txt")).unwrap(), BEFORE);
        assert!(!top.join("new.txt").exists());
    }
}
