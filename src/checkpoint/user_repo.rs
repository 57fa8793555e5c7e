//! Where a workspace is in the user's repository, found once when its store opens: the
//! repository's top and folders, and the workspace's path under the top.

use crate::isolation::Git;
use std::path::{Path, PathBuf};

/// The user's repository around a workspace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct UserRepo {
    pub top: PathBuf,
    /// The object folder (its common dir's, for a linked worktree).
    pub objects: PathBuf,
    pub index: PathBuf,
    /// Its `info/exclude`, whose rules apply to the workspace too.
    pub exclude: PathBuf,
    /// Where the workspace is under the top: `a/b/`, empty at the top.
    pub prefix: String,
}

/// The SHA-1 repository the workspace `work_tree` is in, if any.
pub(super) fn locate(work_tree: &Path) -> Option<UserRepo> {
    let git = Git::new(work_tree);
    let args = [
        "rev-parse",
        "--path-format=absolute",
        "--show-toplevel",
        "--git-common-dir",
        "--git-path",
        "index",
        "--git-path",
        "info/exclude",
        "--show-prefix",
        "--show-object-format",
    ];
    let ran = git.output(&args, None).ok().filter(|r| r.code == 0)?;
    let text = String::from_utf8_lossy(&ran.stdout).into_owned();
    let [top, common, index, exclude, prefix, format] = text.lines().collect::<Vec<_>>()[..] else {
        return None;
    };
    (format == "sha1").then(|| UserRepo {
        top: PathBuf::from(top),
        objects: Path::new(common).join("objects"),
        index: PathBuf::from(index),
        exclude: PathBuf::from(exclude),
        prefix: prefix.to_string(),
    })
}
