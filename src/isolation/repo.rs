//! The git repository a workspace lives in, found once per session.

use super::IsolationError;
use super::git::{Git, parse_version};
use std::path::{Path, PathBuf};

/// `git merge-tree --write-tree` (2.38) with `--merge-base` (2.40).
pub const MIN_GIT: (u32, u32) = (2, 40);

/// A workspace inside a git work tree.
#[derive(Clone, Debug)]
pub struct Repo {
    /// The top of the work tree (the workspace itself, or a folder above it).
    pub top: PathBuf,
    /// Where the workspace sits below `top` (empty when it is the top); a worker's root
    /// is the same folder inside its worktree.
    pub prefix: PathBuf,
    /// The work tree's index file: copied, never written, by snapshots.
    pub index: PathBuf,
    /// The repository's shared git folder (objects, refs, config): every worktree's
    /// `GIT_COMMON_DIR`.
    pub common_dir: PathBuf,
}

/// Why a workspace cannot use worktrees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NoRepo {
    /// Not inside a git work tree (or a bare repository).
    NotARepository,
    /// git is not installed or cannot run.
    NoGit(String),
    /// The installed git is older than [`MIN_GIT`].
    GitTooOld(String),
}

impl std::fmt::Display for NoRepo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoRepo::NotARepository => write!(f, "the workspace is not in a git work tree"),
            NoRepo::NoGit(e) => write!(f, "git cannot run ({e})"),
            NoRepo::GitTooOld(v) => write!(
                f,
                "{v} is too old for worktree isolation (it needs git {}.{} or newer)",
                MIN_GIT.0, MIN_GIT.1
            ),
        }
    }
}

impl Repo {
    /// The repository holding `workspace`, or why workers must share it instead.
    pub fn discover(workspace: &Path) -> Result<Repo, NoRepo> {
        let git = Git::new(workspace);
        let version = git
            .text(&["version"])
            .map_err(|e| NoRepo::NoGit(e.to_string()))?;
        match parse_version(&version) {
            Some(v) if v >= MIN_GIT => {}
            _ => return Err(NoRepo::GitTooOld(version)),
        }
        let out = git
            .output(
                &[
                    "rev-parse",
                    "--path-format=absolute",
                    "--show-toplevel",
                    "--git-path",
                    "index",
                    "--git-common-dir",
                    "--path-format=relative",
                    "--show-prefix",
                ],
                None,
            )
            .map_err(|e| NoRepo::NoGit(e.to_string()))?;
        if out.code != 0 {
            return Err(NoRepo::NotARepository);
        }
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let mut lines = text.lines();
        let (Some(top), Some(index), Some(common)) = (lines.next(), lines.next(), lines.next())
        else {
            return Err(NoRepo::NotARepository);
        };
        let prefix = lines.next().unwrap_or("").trim_end_matches('/');
        Ok(Repo {
            top: PathBuf::from(top),
            prefix: PathBuf::from(prefix),
            index: PathBuf::from(index),
            common_dir: PathBuf::from(common),
        })
    }

    /// The commit HEAD points at, or `None` before the first commit.
    pub(crate) fn head(git: Git<'_>) -> Result<Option<String>, IsolationError> {
        let args = ["rev-parse", "-q", "--verify", "HEAD^{commit}"];
        let ran = git.output(&args, None)?;
        match ran.code {
            0 => Ok(Some(
                String::from_utf8_lossy(&ran.stdout).trim().to_string(),
            )),
            1 => Ok(None),
            _ => Err(git.failed(&args, &ran)),
        }
    }
}
