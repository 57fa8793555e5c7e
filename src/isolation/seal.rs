//! What squad wrote for a worktree's git metadata, recorded when it made the worktree,
//! and the check that it is still so before any git of squad's runs there.
//!
//! A worker's sandbox may write its worktree (the `.git` pointer file included) and its
//! git folder `.git/worktrees/<name>` (so that `git commit` works). git finds a worktree's
//! repository through exactly those files: the `.git` file names the git folder, its
//! `commondir` the shared one (config, hooks, objects), and with `extensions.worktreeConfig`
//! its `config.worktree` is read as configuration. A worker that points them elsewhere
//! would have squad's git, which runs with the user's rights outside any sandbox, read a
//! configuration the worker wrote (hooks, fsmonitor, filters, diff drivers). So squad
//! names the git folders itself on every run (`git.rs`), and refuses to run git at all on
//! a worktree whose metadata is not what it recorded ([`Seal::check`]).

use super::IsolationError;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// A worktree's git folders and what its worker-writable metadata held when squad made
/// it. Kept beside the worktree (`<name>.seal`, in the session's folder, which no worker
/// may write), so a resumed session or the clean-up of an ended one trusts it, not the
/// worktree's own files.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seal {
    /// The top of the work tree.
    pub work_tree: PathBuf,
    /// The worktree's own git folder (`<common>/worktrees/<name>`).
    pub git_dir: PathBuf,
    /// The repository's shared git folder.
    pub common_dir: PathBuf,
    /// The branch HEAD must name (`refs/heads/squad/<name>`); a detached HEAD is allowed.
    pub branch_ref: String,
    /// SHA-256 of each watched file as squad left it, `None` when it was absent.
    files: Vec<(String, Option<String>)>,
}

/// The files of a worktree's metadata a worker could change to redirect git: the
/// pointer, its git folder's link to the shared one (and back), and the configuration
/// git may read from its git folder.
fn watched(work_tree: &Path, git_dir: &Path) -> [(String, PathBuf); 5] {
    [
        (".git".into(), work_tree.join(".git")),
        ("commondir".into(), git_dir.join("commondir")),
        ("gitdir".into(), git_dir.join("gitdir")),
        ("config.worktree".into(), git_dir.join("config.worktree")),
        ("config".into(), git_dir.join("config")),
    ]
}

/// The hash of a regular file, `None` when absent; a symlink or a folder is an answer of
/// its own (`Some("not a file")`), never followed.
fn fingerprint(file: &Path) -> Result<Option<String>, std::io::Error> {
    match std::fs::symlink_metadata(file) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
        Ok(meta) if !meta.is_file() => Ok(Some("not a file".into())),
        Ok(_) => {
            let bytes = std::fs::read(file)?;
            Ok(Some(format!("{:x}", Sha256::digest(&bytes))))
        }
    }
}

/// Where a seal is kept: beside the worktree at `path`.
pub(crate) fn seal_file(path: &Path) -> PathBuf {
    path.with_extension("seal")
}

impl Seal {
    /// Records the worktree at `work_tree` right after git made it: its git folder as its
    /// `.git` file names it (git just wrote it; no worker has run there yet), which must
    /// lie in `common_dir/worktrees`.
    pub(crate) fn take(
        work_tree: &Path,
        common_dir: &Path,
        branch: Option<&str>,
    ) -> Result<Seal, IsolationError> {
        let pointer = work_tree.join(".git");
        let text = std::fs::read_to_string(&pointer).map_err(|source| IsolationError::Io {
            what: format!("reading {}", pointer.display()),
            source,
        })?;
        let named = text.trim().strip_prefix("gitdir:").map(str::trim);
        let git_dir = named
            .map(|d| work_tree.join(d))
            .and_then(|d| d.canonicalize().ok());
        let worktrees = common_dir.join("worktrees").canonicalize().ok();
        let git_dir = match (git_dir, worktrees) {
            (Some(d), Some(w)) if d.parent() == Some(w.as_path()) => d,
            _ => {
                return Err(IsolationError::Tampered(format!(
                    "{} does not name a git folder in {}",
                    pointer.display(),
                    common_dir.join("worktrees").display()
                )));
            }
        };
        let mut seal = Seal {
            work_tree: work_tree.to_path_buf(),
            git_dir,
            common_dir: common_dir.to_path_buf(),
            branch_ref: branch.map_or_else(String::new, |b| format!("refs/heads/{b}")),
            files: Vec::new(),
        };
        seal.files = seal.fingerprints()?;
        Ok(seal)
    }

    fn fingerprints(&self) -> Result<Vec<(String, Option<String>)>, IsolationError> {
        watched(&self.work_tree, &self.git_dir)
            .into_iter()
            .map(|(name, file)| {
                fingerprint(&file)
                    .map(|f| (name, f))
                    .map_err(|source| IsolationError::Io {
                        what: format!("reading {}", file.display()),
                        source,
                    })
            })
            .collect()
    }

    /// The worktree's index file.
    pub fn index(&self) -> PathBuf {
        self.git_dir.join("index")
    }

    /// Whether the metadata is still what squad recorded; else what changed, as the
    /// reason a result is refused.
    pub fn check(&self) -> Result<(), IsolationError> {
        let tampered = |what: String| {
            Err(IsolationError::Tampered(format!(
                "{what} in the worktree {} is not what squad wrote: squad runs no git there, \
                 and its files stay as they are for you to look at (not with git: the \
                 worker may have armed it to run its own programs)",
                self.work_tree.display()
            )))
        };
        match std::fs::symlink_metadata(&self.git_dir) {
            Ok(meta) if meta.is_dir() => {}
            _ => return tampered(format!("its git folder {}", self.git_dir.display())),
        }
        let now = match self.fingerprints() {
            Ok(now) => now,
            Err(e) => return tampered(e.to_string()),
        };
        for ((name, was), (_, is)) in self.files.iter().zip(&now) {
            if was != is {
                let how = match (was, is) {
                    (None, Some(_)) => "was added",
                    (Some(_), None) => "was removed",
                    _ => "was changed",
                };
                return tampered(format!("`{name}` {how}"));
            }
        }
        let head = std::fs::read_to_string(self.git_dir.join("HEAD")).unwrap_or_default();
        let head = head.trim();
        let detached = !head.is_empty() && head.chars().all(|c| c.is_ascii_hexdigit());
        let own = head.strip_prefix("ref:").map(str::trim) == Some(self.branch_ref.as_str());
        if !(detached || own) {
            return tampered(format!("HEAD (`{head}`)"));
        }
        Ok(())
    }

    /// Keeps the seal beside the worktree.
    pub(crate) fn save(&self) -> Result<(), IsolationError> {
        let file = seal_file(&self.work_tree);
        let io = |source| IsolationError::Io {
            what: format!("writing {}", file.display()),
            source,
        };
        let text = serde_json::to_string(self).map_err(|e| io(std::io::Error::other(e)))?;
        let temp = file.with_extension("seal.new");
        std::fs::write(&temp, text)
            .and_then(|()| std::fs::rename(&temp, &file))
            .map_err(io)
    }

    /// The seal kept beside the worktree at `path`; `None` when there is none (a worktree
    /// squad did not finish making, or one made before seals: not trusted either way).
    pub(crate) fn load(path: &Path) -> Option<Seal> {
        let text = std::fs::read_to_string(seal_file(path)).ok()?;
        serde_json::from_str(&text).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_pointer_commondir_or_worktree_config_or_head_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path().join("repo");
        std::fs::create_dir_all(&top).unwrap();
        let git = |args: &[&str]| crate::isolation::test_git(&top, args);
        git(&["init", "-q"]);
        git(&["commit", "-q", "--allow-empty", "-m", "start"]);
        let wt = tmp.path().join("wt");
        git(&[
            "worktree",
            "add",
            "-q",
            "-b",
            "squad/wt",
            wt.to_str().unwrap(),
        ]);
        let common = top.join(".git");
        let seal = Seal::take(&wt, &common, Some("squad/wt")).unwrap();
        seal.check().unwrap();
        seal.save().unwrap();
        assert_eq!(Seal::load(&wt).unwrap(), seal);

        let commondir = seal.git_dir.join("commondir");
        let kept = std::fs::read(&commondir).unwrap();
        std::fs::write(&commondir, "/elsewhere\n").unwrap();
        let e = seal.check().unwrap_err().to_string();
        assert!(e.contains("`commondir` was changed"), "{e}");
        std::fs::write(&commondir, &kept).unwrap();

        std::fs::write(seal.git_dir.join("config.worktree"), "[core]\n").unwrap();
        let e = seal.check().unwrap_err().to_string();
        assert!(e.contains("`config.worktree` was added"), "{e}");
        std::fs::remove_file(seal.git_dir.join("config.worktree")).unwrap();

        let pointer = wt.join(".git");
        let kept = std::fs::read(&pointer).unwrap();
        std::fs::remove_file(&pointer).unwrap();
        std::fs::create_dir(&pointer).unwrap();
        let e = seal.check().unwrap_err().to_string();
        assert!(e.contains("`.git` was changed"), "{e}");
        std::fs::remove_dir(&pointer).unwrap();
        std::fs::write(&pointer, kept).unwrap();

        std::fs::write(seal.git_dir.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        let e = seal.check().unwrap_err().to_string();
        assert!(e.contains("HEAD"), "{e}");
        std::fs::write(seal.git_dir.join("HEAD"), "ref: refs/heads/squad/wt\n").unwrap();
        git(&["-C", wt.to_str().unwrap(), "checkout", "-q", "--detach"]);
        seal.check().unwrap();
    }
}
