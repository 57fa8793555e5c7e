//! What the workspace looked like: every file's size and modification time, so "what did
//! this worker change" is measured on disk, not taken from its words. Sizes and mtimes
//! (no hashing) keep a 10,000-file snapshot at a few tens of milliseconds (`cargo bench
//! --bench verify`); a rewrite with identical content counts as a change, which errs on
//! the side of checking more.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::time::SystemTime;

/// One file's identity for change detection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    pub len: u64,
    pub modified: Option<SystemTime>,
}

impl Stamp {
    /// A file that was there, as no file now is: what changed or went since is told
    /// changed, whatever it is now.
    pub const OTHER: Stamp = Stamp {
        len: u64::MAX,
        modified: None,
    };

    /// The stamp of the file at `path`, `None` when there is no file there.
    pub fn of(path: &Path) -> Option<Self> {
        let meta = std::fs::metadata(path).ok()?;
        meta.is_file().then(|| Self {
            len: meta.len(),
            modified: meta.modified().ok(),
        })
    }
}

/// The files under a workspace root (paths relative, with `/`), as `.gitignore` sees them:
/// ignored files and `.git/` are left out, hidden files are in.
#[derive(Debug, Default)]
pub struct Snapshot {
    files: HashMap<String, Stamp>,
}

/// Files that differ between two snapshots.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Changes {
    pub created: BTreeSet<String>,
    pub modified: BTreeSet<String>,
    pub deleted: BTreeSet<String>,
}

impl Changes {
    pub fn is_empty(&self) -> bool {
        self.created.is_empty() && self.modified.is_empty() && self.deleted.is_empty()
    }

    /// Only the changes of `paths`.
    pub fn within(&self, paths: &BTreeSet<String>) -> Changes {
        let keep = |set: &BTreeSet<String>| set.intersection(paths).cloned().collect();
        Changes {
            created: keep(&self.created),
            modified: keep(&self.modified),
            deleted: keep(&self.deleted),
        }
    }

    /// Every changed path, sorted.
    pub fn paths(&self) -> BTreeSet<String> {
        self.created
            .iter()
            .chain(&self.modified)
            .chain(&self.deleted)
            .cloned()
            .collect()
    }
}

impl Snapshot {
    /// Walks `root`. Unreadable entries are skipped: a snapshot is evidence, not a backup.
    pub fn take(root: &Path) -> Self {
        let walker = ignore::WalkBuilder::new(root)
            .hidden(false)
            .require_git(false)
            .filter_entry(|e| e.file_name() != ".git")
            .build();
        let mut files = HashMap::new();
        for entry in walker.flatten() {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let Ok(meta) = entry.metadata() else { continue };
            let Ok(rel) = entry.path().strip_prefix(root) else {
                continue;
            };
            files.insert(
                relative(rel),
                Stamp {
                    len: meta.len(),
                    modified: meta.modified().ok(),
                },
            );
        }
        Self { files }
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    pub fn get(&self, rel: &str) -> Option<Stamp> {
        self.files.get(rel).copied()
    }

    /// This snapshot as it was before `before` happened: each path's stamp then (`None`:
    /// no file). A worker resumed after a crash, whose snapshot went with the process,
    /// keeps the change it had made (its worktree against its base) as its own.
    pub fn as_before(&self, before: impl IntoIterator<Item = (String, Option<Stamp>)>) -> Self {
        let mut files = self.files.clone();
        for (path, stamp) in before {
            match stamp {
                Some(stamp) => files.insert(path, stamp),
                None => files.remove(&path),
            };
        }
        Self { files }
    }

    /// What changed from `self` (earlier) to `now`.
    pub fn changes_to(&self, now: &Snapshot) -> Changes {
        let mut changes = Changes::default();
        for (path, stamp) in &now.files {
            match self.files.get(path) {
                None => {
                    changes.created.insert(path.clone());
                }
                Some(before) if before != stamp => {
                    changes.modified.insert(path.clone());
                }
                Some(_) => {}
            }
        }
        for path in self.files.keys() {
            if !now.files.contains_key(path) {
                changes.deleted.insert(path.clone());
            }
        }
        changes
    }
}

/// A relative path as the model and the user see it: components joined with `/`.
pub fn relative(rel: &Path) -> String {
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_are_created_modified_and_deleted_files_and_ignored_ones_are_not_seen() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        std::fs::write(root.join("keep.txt"), "same").unwrap();
        std::fs::write(root.join("edit.txt"), "old").unwrap();
        std::fs::write(root.join("gone.txt"), "bye").unwrap();
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join(".git/HEAD"), "ref").unwrap();
        let before = Snapshot::take(root);
        assert!(before.get("keep.txt").is_some());
        assert!(before.get(".gitignore").is_some(), "hidden files count");
        assert!(before.get(".git/HEAD").is_none());

        std::fs::write(root.join("edit.txt"), "new content").unwrap();
        std::fs::remove_file(root.join("gone.txt")).unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/new.rs"), "fn main() {}").unwrap();
        std::fs::write(root.join("target/out.o"), "binary").unwrap();
        let changes = before.changes_to(&Snapshot::take(root));
        let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
        assert_eq!(changes.created, set(&["src/new.rs"]));
        assert_eq!(changes.modified, set(&["edit.txt"]));
        assert_eq!(changes.deleted, set(&["gone.txt"]));
        assert_eq!(changes.paths().len(), 3);
    }
}
