//! What is reviewed, read from git: the change as a diff for the reviewers, and the files
//! at the reviewed revision for checking their findings. Only reading git commands run,
//! with `GIT_OPTIONAL_LOCKS=0` so not even the index's stat cache is written: a review
//! changes nothing. Paths are the workspace's (`--relative`), which may be a folder of a
//! larger repository.

use super::ReviewError;
use crate::protocol::ReviewTarget;
use std::path::{Component, Path, PathBuf};

/// Git's empty tree: the base of a repository without a commit yet.
const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/// Most of the diff given to a reviewer; a longer one is cut (and says so).
pub const MAX_DIFF_BYTES: usize = 150_000;

/// A change ready for review.
#[derive(Clone, Debug)]
pub struct Reviewed {
    pub target: ReviewTarget,
    pub diff: String,
    /// Where the findings' files are read: the workspace (`None`) or a commit.
    pub rev: Option<String>,
    pub root: PathBuf,
}

impl Reviewed {
    /// The text of `path` at the reviewed revision; `None` when it is not there (or the
    /// path leaves the workspace).
    pub async fn read(&self, path: &str) -> Option<String> {
        let path = clean_path(path)?;
        match &self.rev {
            None => read_inside(&self.root, &path).await,
            Some(rev) => {
                // `./`: relative to the workspace, which may be below the repository's top.
                let spec = format!("{rev}:./{}", path.to_string_lossy());
                git(&self.root, &["show", &spec]).await.ok()
            }
        }
    }
}

/// Reads the change `target` names in the repository at `root`.
pub async fn load(root: &Path, target: &ReviewTarget) -> Result<Reviewed, ReviewError> {
    git(root, &["rev-parse", "--git-dir"])
        .await
        .map_err(|_| ReviewError::NotARepository(root.to_path_buf()))?;
    let (diff, rev) = match target {
        ReviewTarget::Uncommitted => (uncommitted(root).await?, None),
        ReviewTarget::Base { branch } => {
            not_an_option(branch)?;
            let base = git(root, &["merge-base", branch, "HEAD"])
                .await
                .map_err(|e| ReviewError::Revision(branch.clone(), e))?;
            let head = resolve(root, "HEAD").await?;
            let args = [
                "diff",
                "--no-color",
                "--no-ext-diff",
                "--relative",
                base.trim(),
                &head,
            ];
            let diff = git(root, &args).await.map_err(ReviewError::Git)?;
            (diff, Some(head))
        }
        ReviewTarget::Commit { sha } => {
            not_an_option(sha)?;
            let rev = resolve(root, sha).await?;
            let show = [
                "show",
                "--no-color",
                "--no-ext-diff",
                "--relative",
                "--format=medium",
                &rev,
            ];
            (git(root, &show).await.map_err(ReviewError::Git)?, Some(rev))
        }
    };
    Ok(Reviewed {
        target: target.clone(),
        diff,
        rev,
        root: root.to_path_buf(),
    })
}

/// Staged and unstaged changes against `HEAD`, then each untracked file in full.
async fn uncommitted(root: &Path) -> Result<String, ReviewError> {
    let base = match git(root, &["rev-parse", "--verify", "--quiet", "HEAD"]).await {
        Ok(head) => head.trim().to_string(),
        Err(_) => EMPTY_TREE.to_string(),
    };
    let mut diff = git(
        root,
        &["diff", "--no-color", "--no-ext-diff", "--relative", &base],
    )
    .await
    .map_err(ReviewError::Git)?;
    let untracked = git(root, &["ls-files", "--others", "--exclude-standard", "-z"])
        .await
        .map_err(ReviewError::Git)?;
    for path in untracked.split('\0').filter(|p| !p.is_empty()) {
        let Some(text) = read_inside(root, Path::new(path)).await else {
            continue; // binary, unreadable or a link out of the workspace: nothing to quote
        };
        diff.push_str(&new_file(path, &text));
    }
    Ok(diff)
}

/// The text of the workspace's file `rel`, confined as every tool path is
/// (`Workspace::resolve`): a symlink to a file outside (`~/.ssh/id_rsa`) is not read, so its
/// content never reaches a reviewer's model.
async fn read_inside(root: &Path, rel: &Path) -> Option<String> {
    let file = (crate::workspace::Workspace::new(root).ok()?)
        .resolve(&rel.to_string_lossy())
        .ok()?;
    tokio::fs::read_to_string(file).await.ok()
}

/// An untracked file as a diff that adds it.
fn new_file(path: &str, text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = format!(
        "diff --git a/{path} b/{path}\nnew file (untracked)\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{} @@\n",
        lines.len()
    );
    for line in lines {
        out.push('+');
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// A revision the user typed is never taken for one of git's options.
fn not_an_option(rev: &str) -> Result<(), ReviewError> {
    match rev.starts_with('-') || rev.trim().is_empty() {
        true => Err(ReviewError::Revision(rev.into(), "not a revision".into())),
        false => Ok(()),
    }
}

/// `rev` as a full commit id, or why not.
async fn resolve(root: &Path, rev: &str) -> Result<String, ReviewError> {
    let spec = format!("{rev}^{{commit}}");
    git(root, &["rev-parse", "--verify", "--quiet", &spec])
        .await
        .map(|s| s.trim().to_string())
        .map_err(|e| ReviewError::Revision(rev.to_string(), e))
}

/// A relative path inside the workspace (a reviewer's `a/`/`b/` diff prefix dropped), or
/// `None` for one that is absolute or climbs out.
pub fn clean_path(path: &str) -> Option<PathBuf> {
    let path = path.trim();
    let path = path
        .strip_prefix("b/")
        .or_else(|| path.strip_prefix("a/"))
        .unwrap_or(path);
    let path = Path::new(path);
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            _ => return None,
        }
    }
    (!out.as_os_str().is_empty()).then_some(out)
}

/// Runs a reading git command in `root`; its stdout, or its stderr as the error.
async fn git(root: &Path, args: &[&str]) -> Result<String, String> {
    let out = tokio::process::Command::new("git")
        .arg("-c")
        .arg("core.quotepath=off")
        .args(args)
        .current_dir(root)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_workspace() {
        assert_eq!(clean_path("b/src/a.rs"), Some(PathBuf::from("src/a.rs")));
        assert_eq!(clean_path("./src/a.rs"), Some(PathBuf::from("src/a.rs")));
        assert_eq!(clean_path("../etc/passwd"), None);
        assert_eq!(clean_path("/etc/passwd"), None);
        assert_eq!(clean_path("src/../../x"), None);
        assert_eq!(clean_path(""), None);
    }

    #[tokio::test]
    async fn a_link_out_of_the_workspace_is_neither_sent_nor_read() {
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("id_rsa");
        std::fs::write(&secret, "PRIVATE KEY 4242\n").unwrap();
        let ws = tempfile::tempdir().unwrap();
        let root = ws.path();
        let ok = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(root)
            .status()
            .unwrap()
            .success();
        assert!(ok);
        std::os::unix::fs::symlink(&secret, root.join("key")).unwrap();
        std::fs::write(root.join("mine.txt"), "inside\n").unwrap();
        let diff = uncommitted(root).await.unwrap();
        assert!(!diff.contains("PRIVATE KEY"), "{diff}");
        assert!(diff.contains("+inside"), "{diff}");
        let reviewed = Reviewed {
            target: ReviewTarget::default(),
            diff,
            rev: None,
            root: root.to_path_buf(),
        };
        assert_eq!(reviewed.read("key").await, None);
        assert_eq!(reviewed.read("mine.txt").await.as_deref(), Some("inside\n"));
    }

    #[test]
    fn an_untracked_file_is_a_diff_adding_it() {
        let d = new_file("n.txt", "a\nb\n");
        assert!(d.contains("+++ b/n.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n"));
    }
}
