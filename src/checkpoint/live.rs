//! The mark of a store in use: `squad-live` in its folder, shared-locked (`flock`) by every
//! session that may checkpoint or rewind the workspace, for as long as it runs. A prune
//! takes it exclusively before removing a store, so it never removes one a live session
//! uses; the kernel drops a lock when its process ends however it ends. The file's mtime
//! is the store's last use, which a prune goes by.

use super::{CheckpointError, CheckpointStore, io};
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

pub(super) const LIVE: &str = "squad-live";
/// The workspace a store is of, for people (a store's folder is named by a hash).
pub(super) const WORKSPACE: &str = "squad-workspace";

/// A claim on a workspace's store: it stays while this lives.
#[derive(Debug)]
pub struct Live {
    file: File,
}

impl Live {
    /// Claims the store of `workspace` under the data dir `data` (its folder made if need
    /// be), for a session that will checkpoint it, before the store itself is opened.
    pub fn claim(data: &Path, workspace: &Path) -> Result<Self, CheckpointError> {
        let work_tree = workspace
            .canonicalize()
            .map_err(io(format!("reading {}", workspace.display())))?;
        Self::claim_dir(&CheckpointStore::dir_for(data, &work_tree), &work_tree)
    }

    /// Claims the store folder `dir`. A prune that holds it is removing it: wait, then
    /// claim the folder made anew (a claim on a removed file would protect nothing).
    pub(super) fn claim_dir(dir: &Path, workspace: &Path) -> Result<Self, CheckpointError> {
        let path = dir.join(LIVE);
        for _ in 0..200 {
            std::fs::create_dir_all(dir).map_err(io(format!("creating {}", dir.display())))?;
            let file = File::options()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(io(format!("opening {}", path.display())))?;
            if crate::sync::try_lock_shared(&file) && same_file(&file, &path) {
                let named = dir.join(WORKSPACE);
                if !named.exists() {
                    let text = workspace.as_os_str().as_encoded_bytes();
                    std::fs::write(&named, text)
                        .map_err(io(format!("writing {}", named.display())))?;
                }
                let live = Self { file };
                live.touch();
                return Ok(live);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(CheckpointError::Io {
            what: format!("claiming {}", path.display()),
            source: std::io::Error::other("a prune of squad's checkpoints holds it"),
        })
    }

    /// The store was used now.
    pub(super) fn touch(&self) {
        let _ = self.file.set_modified(SystemTime::now());
    }
}

fn same_file(file: &File, path: &Path) -> bool {
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// When the store in `dir` was last used: its mark's mtime, or for a store older than
/// the mark, its index's (written by each checkpoint).
pub(super) fn last_used(dir: &Path) -> Option<SystemTime> {
    [LIVE, "index", ""]
        .iter()
        .find_map(|name| std::fs::metadata(dir.join(name)).ok())
        .and_then(|m| m.modified().ok())
}

/// The workspace a store says it is of.
pub(super) fn workspace_of(dir: &Path) -> Option<PathBuf> {
    let bytes = std::fs::read(dir.join(WORKSPACE)).ok()?;
    Some(PathBuf::from(String::from_utf8_lossy(&bytes).into_owned()))
}
