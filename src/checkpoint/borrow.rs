//! A new store in a git workspace starts from what the user's git already has, so its
//! first checkpoint costs what changed rather than a copy of the repository (issue 49):
//!
//! - the user's objects are an alternate of the store's (`objects/info/alternates`): a file
//!   whose content git already has is not stored again;
//! - the user's index is the store's first index, so `git add` hashes only the files whose
//!   stat data differ from it (modified ones) and the untracked ones. The copy keeps the
//!   original's mtime: git's racy-clean check compares entries with the index file's time.
//!
//! Read only: the user's repository is never written (git may refresh the time of an object
//! it finds there, as its own commands do, which keeps it from `git gc --prune` longer).
//! The index is borrowed only where its blobs are what the store would hash itself: the
//! workspace is the repository's top, the repository is SHA-1, and no filter (LFS) nor
//! `core.autocrlf` turns the files into other blobs; else only the objects are shared.
//! A checkpoint refers to the user's objects, so `git gc --prune=now` in the repository
//! after a commit was dropped may take content an old checkpoint needs; a restore then
//! fails with git's "unable to read" and changes nothing it could not read.

use super::store::CheckpointStore;
use super::{CheckpointError, io};
use crate::isolation::Git;
use std::path::{Path, PathBuf};

/// What the store may borrow from the user's repository.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Borrowed {
    /// The user's object folder (its common dir's, for a linked worktree).
    pub objects: PathBuf,
    /// The user's index, when its blobs are what the store would hash.
    pub index: Option<PathBuf>,
}

/// The user's repository at `work_tree`, when it has anything to lend.
pub(super) fn borrowable(work_tree: &Path) -> Option<Borrowed> {
    let git = Git::new(work_tree);
    let args = [
        "rev-parse",
        "--path-format=absolute",
        "--show-toplevel",
        "--git-common-dir",
        "--git-path",
        "index",
        "--show-object-format",
    ];
    let ran = git.output(&args, None).ok().filter(|r| r.code == 0)?;
    let text = String::from_utf8_lossy(&ran.stdout).into_owned();
    let [top, common, index, format] = text.lines().collect::<Vec<_>>()[..] else {
        return None;
    };
    if format != "sha1" {
        return None;
    }
    let objects = Path::new(common).join("objects");
    let at_top = Path::new(top).canonicalize().ok().as_deref() == Some(work_tree);
    let index = Path::new(index);
    let same_blobs = at_top && index.is_file() && !split(index) && !converts(&git);
    Some(Borrowed {
        objects,
        index: same_blobs.then(|| index.to_path_buf()),
    })
}

/// A split index keeps most entries in a `sharedindex.*` file beside it: not copied.
fn split(index: &Path) -> bool {
    let Some(dir) = index.parent().and_then(|d| std::fs::read_dir(d).ok()) else {
        return true;
    };
    dir.flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with("sharedindex."))
}

/// Whether the user's git turns files into other blobs than a plain hash would (a clean
/// filter such as LFS's, or line-ending conversion): the store has no such configuration.
fn converts(git: &Git<'_>) -> bool {
    let args = ["config", "--get-regexp", r"^filter\.|^core\.autocrlf$"];
    match git.output(&args, None) {
        Ok(ran) if ran.code == 1 => false,
        Ok(ran) if ran.code == 0 => String::from_utf8_lossy(&ran.stdout).lines().any(|l| {
            let (key, value) = l.split_once(' ').unwrap_or((l, ""));
            key != "core.autocrlf" || !value.eq_ignore_ascii_case("false")
        }),
        _ => true,
    }
}

impl CheckpointStore {
    /// Before the store's first checkpoint (it has no index yet): borrow what the user's
    /// repository has. Best effort: whatever fails leaves the store as if outside git.
    pub(super) fn borrow(&self) {
        let Some(lent) = borrowable(self.work_tree()) else {
            return;
        };
        let info = self.git_dir().join("objects/info");
        let line = format!("{}\n", lent.objects.display());
        if std::fs::create_dir_all(&info)
            .and_then(|()| std::fs::write(info.join("alternates"), line))
            .is_err()
        {
            return;
        }
        if let Some(index) = lent.index
            && self.copy_index(&index).is_err()
        {
            let _ = std::fs::remove_file(self.git_dir().join("index"));
        }
    }

    /// The user's index as the store's, with its mtime; then no entry "assumed unchanged"
    /// (the store must see every change, whatever the user told their git to overlook).
    fn copy_index(&self, index: &Path) -> Result<(), CheckpointError> {
        let mine = self.git_dir().join("index");
        let tmp = self.git_dir().join("index.borrowed");
        std::fs::copy(index, &tmp)
            .and_then(|_| std::fs::metadata(index)?.modified())
            .and_then(|modified| {
                let file = std::fs::File::options().write(true).open(&tmp)?;
                file.set_modified(modified)
            })
            .and_then(|()| std::fs::rename(&tmp, &mine))
            .map_err(io(format!("copying {}", index.display())))?;
        let listed = self.git().run(&["ls-files", "-v", "-z"])?;
        let assumed: Vec<u8> = crate::isolation::fields(&listed)
            .filter(|f| f.first().is_some_and(u8::is_ascii_lowercase))
            .flat_map(|f| f.get(2..).unwrap_or_default().iter().copied().chain([0]))
            .collect();
        if !assumed.is_empty() {
            let args = ["update-index", "--no-assume-unchanged", "-z", "--stdin"];
            self.git().run_with_input(&args, Some(&assumed))?;
        }
        Ok(())
    }
}
