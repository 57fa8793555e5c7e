//! A new store in a git workspace starts from what the user's git already has, so its
//! first checkpoint costs what changed rather than a copy of the repository (issue 49):
//!
//! - the user's objects are an alternate of the store's (`objects/info/alternates`): a file
//!   whose content git already has is not stored again;
//! - the user's index entries of the workspace are the store's first index, with their
//!   stat data, so `git add` hashes only the files whose stat data differ (modified ones)
//!   and the untracked ones. For a workspace in a subfolder of the repository (a monorepo's
//!   package) the entries under it, their paths made relative to it. The store's index
//!   keeps the time of the user's: git's racy-clean check compares entries with it.
//!   An entry whose blob is not the file's own bytes (line endings, LFS) is left out to be
//!   hashed (`trust`), since the store keeps bytes as they are.
//!
//! Read only: the user's repository is never written (git may refresh the time of an object
//! it finds there, as its own commands do, which keeps it from `git gc --prune` longer).
//! Only a SHA-1 repository lends, and only an index whose entries are all in its file (not
//! a split or a sparse one). A checkpoint refers to the user's objects, so
//! `git gc --prune=now` in the repository after a commit was dropped may take content an
//! old checkpoint needs; a restore then fails with git's "unable to read" and changes
//! nothing it could not read.

use super::index_file::{self, Entry};
use super::store::CheckpointStore;
use super::user_repo::UserRepo;
use super::{CheckpointError, io, trust};
use std::path::{Path, PathBuf};

/// What a store took from the user's index.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Lent {
    /// Entries taken with their stat data: not hashed unless their file changed.
    pub taken: usize,
    /// Entries of the workspace left to be hashed: conflicted, virtual, or converted.
    pub left: usize,
}

impl CheckpointStore {
    /// Before the store's first checkpoint (it has no index yet): borrow what the user's
    /// repository has. Best effort: whatever fails leaves the store as if outside git.
    pub(super) fn borrow(&self) -> Option<Lent> {
        let user = self.user()?;
        let info = self.git_dir().join("objects/info");
        let line = format!("{}\n", user.objects.display());
        std::fs::create_dir_all(&info)
            .and_then(|()| std::fs::write(info.join("alternates"), line))
            .ok()?;
        match self.take_index(user) {
            Ok(lent) => {
                tracing::debug!(?lent, "checkpoints: the user's index borrowed");
                Some(lent)
            }
            Err(e) => {
                tracing::debug!("checkpoints: the user's index not borrowed: {e}");
                let _ = std::fs::remove_file(self.git_dir().join("index"));
                None
            }
        }
    }

    /// The user's entries under the workspace as the store's index, with the time of the
    /// user's index file.
    fn take_index(&self, user: &UserRepo) -> Result<Lent, CheckpointError> {
        let what = format!("reading {}", user.index.display());
        let bytes = std::fs::read(&user.index).map_err(io(what.clone()))?;
        let modified = std::fs::metadata(&user.index)
            .and_then(|m| m.modified())
            .map_err(io(what.clone()))?;
        let entries = index_file::read(&bytes).map_err(|e| CheckpointError::Io {
            what,
            source: std::io::Error::other(format!("{e:?}")),
        })?;
        let prefix = user.prefix.as_bytes();
        let ours: Vec<&Entry> = entries
            .iter()
            .filter(|e| e.path.starts_with(prefix) && e.path.len() > prefix.len())
            .collect();
        let usable: Vec<&Entry> = ours
            .iter()
            .copied()
            .filter(|e| e.stage() == 0 && !e.virtual_only)
            .collect();
        let attributes = self.attributes_may_apply(user, &entries);
        let raw = trust::raw(&user.top, &usable, attributes);
        let kept: Vec<Entry> = usable
            .iter()
            .zip(raw)
            .filter(|(_, raw)| *raw)
            .map(|(e, _)| e.renamed(&e.path[prefix.len()..]))
            .collect();
        let mine = self.git_dir().join("index");
        let tmp = self.git_dir().join("index.borrowed");
        std::fs::write(&tmp, index_file::write(&kept))
            .and_then(|()| {
                let file = std::fs::File::options().write(true).open(&tmp)?;
                file.set_modified(modified)
            })
            .and_then(|()| std::fs::rename(&tmp, &mine))
            .map_err(io(format!("writing {}", mine.display())))?;
        Ok(Lent {
            taken: kept.len(),
            left: ours.len() - kept.len(),
        })
    }

    /// Whether an attributes file may say how the user's git converts files: one in the
    /// repository, the user's `info/attributes`, the user's own or the system's (one the
    /// configuration names is asked by `trust`).
    fn attributes_may_apply(&self, user: &UserRepo, entries: &[Entry]) -> bool {
        let in_repo = entries
            .iter()
            .any(|e| e.path == b".gitattributes" || e.path.ends_with(b"/.gitattributes"));
        let info = user.exclude.with_file_name("attributes");
        let xdg = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".config")))
            .map(|c| c.join("git/attributes"));
        in_repo
            || [Some(info), xdg, Some(PathBuf::from("/etc/gitattributes"))]
                .into_iter()
                .flatten()
                .any(|p| p.is_file())
    }
}
