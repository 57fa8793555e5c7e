//! The text of a worker's change, for a reviewer to read: a unified diff of each changed
//! file that git tracks, and new or untracked files in full. Outside a git repository
//! (or for files git does not know) the files are shown as they are now.

use crate::isolation::Seal;
use std::collections::BTreeSet;
use std::path::Path;

/// How much of the change a reviewer gets; the rest it can read with its tools.
const MAX_BYTES: usize = 48 * 1024;

/// The change to `paths` (relative to `root`) as text, at most [`MAX_BYTES`]. Differences
/// are against the last commit, so they include edits the user had not committed yet.
/// `seal`: `root` is in a worker's worktree, and git runs there only as squad made it
/// (`isolation::Seal`).
pub async fn change_text(root: &Path, paths: &BTreeSet<String>, seal: Option<&Seal>) -> String {
    if paths.is_empty() {
        return "(no files changed)".to_string();
    }
    let mut out = String::new();
    for path in paths {
        if out.len() >= MAX_BYTES {
            out.push_str(&format!(
                "\n… cut at {} KB; read the other changed files with read_file\n",
                MAX_BYTES / 1024
            ));
            break;
        }
        let part = match git_diff(root, path, seal).await {
            Some(d) if !d.trim().is_empty() => d,
            _ => whole_file(root, path).await,
        };
        out.push_str(&part);
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    if out.len() > MAX_BYTES {
        let mut cut = MAX_BYTES;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
        out.push_str("\n… (cut)\n");
    }
    out
}

/// `git diff HEAD -- path` through squad's one git runner, or `None` outside a
/// repository, before the first commit, or when git cannot run.
async fn git_diff(root: &Path, path: &str, seal: Option<&Seal>) -> Option<String> {
    let (root, path, seal) = (root.to_path_buf(), path.to_string(), seal.cloned());
    tokio::task::spawn_blocking(move || crate::isolation::diff_head(&root, seal.as_ref(), &path))
        .await
        .ok()?
}

/// A file git shows no diff for: new (untracked), deleted, or outside a repository.
async fn whole_file(root: &Path, path: &str) -> String {
    match tokio::fs::read(root.join(path)).await {
        Ok(bytes) if bytes.contains(&0) => format!("=== {path} (binary, {} bytes)\n", bytes.len()),
        Ok(bytes) => format!(
            "=== {path} (new or untracked; its content now)\n{}",
            String::from_utf8_lossy(&bytes)
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => format!("=== {path} (deleted)\n"),
        Err(e) => format!("=== {path} (cannot read it: {e})\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command as Std;

    fn git(dir: &Path, args: &[&str]) {
        let ok = Std::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }

    #[tokio::test]
    async fn tracked_files_diff_and_new_files_show_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        git(root, &["init", "-q"]);
        std::fs::write(root.join("a.txt"), "one\ntwo\n").unwrap();
        std::fs::write(root.join("gone.txt"), "bye\n").unwrap();
        git(root, &["add", "."]);
        git(root, &["commit", "-qm", "start"]);
        std::fs::write(root.join("a.txt"), "one\nTWO\n").unwrap();
        std::fs::write(root.join("new.txt"), "fresh\n").unwrap();
        std::fs::remove_file(root.join("gone.txt")).unwrap();
        let paths: BTreeSet<String> = ["a.txt", "new.txt", "gone.txt"].map(String::from).into();
        let text = change_text(root, &paths, None).await;
        assert!(text.contains("-two\n+TWO"), "{text}");
        assert!(text.contains("=== new.txt (new or untracked"), "{text}");
        assert!(text.contains("fresh"), "{text}");
        assert!(
            text.contains("-bye"),
            "a deleted tracked file diffs: {text}"
        );
    }

    #[tokio::test]
    async fn outside_git_files_show_as_they_are_and_big_changes_are_cut() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::write(root.join("big.txt"), "x".repeat(100_000)).unwrap();
        let paths: BTreeSet<String> = ["big.txt", "missing.txt"].map(String::from).into();
        let text = change_text(root, &paths, None).await;
        assert!(text.len() < MAX_BYTES + 200, "{}", text.len());
        assert!(
            text.contains("(cut)") || text.contains("cut at"),
            "notes the cut"
        );
        assert_eq!(
            change_text(root, &BTreeSet::new(), None).await,
            "(no files changed)"
        );
    }
}
