//! What squad last wrote to each file of the workspace, so a restore can tell squad's
//! writes (taken back freely) from the user's (asked about). Kept beside the shadow
//! repository as JSON: path → `"<mode> <blob>"` as `diff-tree` names it, `null` when squad
//! deleted the file.

use super::store::CheckpointStore;
use super::{CheckpointError, io};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

pub(super) type Record = BTreeMap<String, Option<String>>;

pub(super) struct Written {
    path: PathBuf,
}

impl Written {
    pub fn at(path: PathBuf) -> Self {
        Self { path }
    }

    /// The record; an unreadable one counts as empty (every difference is then asked about).
    pub fn load(&self) -> Record {
        std::fs::read(&self.path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    pub fn save(&self, record: &Record) -> Result<(), CheckpointError> {
        let bytes = serde_json::to_vec(record).unwrap_or_default();
        let tmp = self.path.with_extension("tmp");
        std::fs::write(&tmp, bytes)
            .and_then(|_| std::fs::rename(&tmp, &self.path))
            .map_err(io(format!("writing {}", self.path.display())))
    }
}

impl CheckpointStore {
    pub(super) fn written(&self) -> Written {
        Written::at(self.git_dir().join("squad-written.json"))
    }

    /// squad just wrote (or deleted) `paths`, relative to the workspace: their content now
    /// is squad's. A symlink is not recorded: a restore asks before changing it.
    pub fn note_written(&self, paths: &[String]) -> Result<(), CheckpointError> {
        if paths.is_empty() {
            return Ok(());
        }
        let _one = self.guard();
        let written = self.written();
        let mut record = written.load();
        let mut files = Vec::new();
        for rel in paths {
            let rel = rel.trim_start_matches("./").to_string();
            if rel.contains('\n') {
                continue;
            }
            match std::fs::symlink_metadata(self.work_tree().join(&rel)) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    record.insert(rel, None);
                }
                Ok(m) if m.is_file() => {
                    let mode = if m.permissions().mode() & 0o100 != 0 {
                        "100755"
                    } else {
                        "100644"
                    };
                    files.push((rel, mode));
                }
                _ => {
                    record.remove(&rel);
                }
            }
        }
        for ((rel, mode), oid) in files.iter().zip(self.hash(&files)?) {
            record.insert(rel.clone(), Some(format!("{mode} {oid}")));
        }
        written.save(&record)
    }

    /// The blob ids git would store for `files`, its filters applied.
    fn hash(&self, files: &[(String, &str)]) -> Result<Vec<String>, CheckpointError> {
        if files.is_empty() {
            return Ok(Vec::new());
        }
        let input: String = files.iter().map(|(p, _)| format!("{p}\n")).collect();
        let out = self
            .git()
            .run_with_input(&["hash-object", "--stdin-paths"], Some(input.as_bytes()))?;
        Ok(String::from_utf8_lossy(&out)
            .lines()
            .map(str::to_string)
            .collect())
    }
}

/// `rel` as a path under `top`.
pub(super) fn under(top: &Path, rel: &str) -> PathBuf {
    rel.split('/')
        .fold(top.to_path_buf(), |p, part| p.join(part))
}
