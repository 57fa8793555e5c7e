//! A patch against the workspace: every operation worked out in memory first (each path
//! through the workspace's confinement, each hunk applied), then written in one go, and
//! undone if a write fails, so a call changes all its files or none.

use super::apply::{HunkError, apply_hunks};
use super::parse::{FileOp, Patch};
use crate::workspace::{PathError, Workspace};
use std::path::{Path, PathBuf};

/// Why a patch cannot be applied; nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("{0}")]
    Path(#[from] PathError),
    #[error("cannot {op} '{path}': it does not exist{hint}")]
    Missing {
        op: &'static str,
        path: String,
        hint: &'static str,
    },
    #[error("'{0}' is a directory, not a file")]
    IsDir(String),
    #[error("'{0}' is not a UTF-8 text file; apply_patch only updates text")]
    NotText(String),
    #[error("'{path}', {hunk}")]
    Hunk { path: String, hunk: HunkError },
    #[error("cannot read '{path}': {err}")]
    Read { path: String, err: std::io::Error },
    #[error("{0}")]
    Write(String),
}

/// What one operation did, for the result's `A`/`M`/`D`/`R` lines and the approval's diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub kind: ChangeKind,
    /// The path as the workspace shows it; for a move, where it was.
    pub path: String,
    /// A move's new path.
    pub to: Option<String>,
    /// The text before (`None`: the file did not exist) and after (`None`: deleted).
    pub before: Option<String>,
    pub after: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
    Moved,
}

impl ChangeKind {
    pub fn letter(self) -> char {
        match self {
            Self::Added => 'A',
            Self::Modified => 'M',
            Self::Deleted => 'D',
            Self::Moved => 'R',
        }
    }
}

/// One file the patch touches: what it holds on disk and what it will hold.
struct File {
    path: PathBuf,
    rel: String,
    original: Option<Vec<u8>>,
    current: Option<Vec<u8>>,
    /// The mode on disk, put back if the file is restored.
    original_mode: Option<std::fs::Permissions>,
    /// The mode to give it: a moved file keeps its own (a script stays executable).
    mode: Option<std::fs::Permissions>,
}

/// A patch worked out against the workspace, ready to write.
pub struct Plan {
    files: Vec<File>,
    pub changes: Vec<Change>,
}

impl Plan {
    /// Every path the patch changes, as the workspace shows them, in first-touched order.
    pub fn paths(&self) -> Vec<String> {
        self.files
            .iter()
            .filter(|f| f.current != f.original)
            .map(|f| f.rel.clone())
            .collect()
    }

    /// Works out every operation in order, each on the result of the ones before (so a
    /// file deleted and added again is replaced), reading each file once.
    pub fn new(ws: &Workspace, patch: &Patch) -> Result<Self, PlanError> {
        let mut plan = Plan {
            files: Vec::new(),
            changes: Vec::new(),
        };
        for op in &patch.ops {
            match op {
                FileOp::Add { path, contents, .. } => {
                    // Over an existing file it replaces it whole, as Codex does: models
                    // trained on it add a file to rewrite it.
                    let i = plan.file(ws, path)?;
                    let f = &mut plan.files[i];
                    let before = f.current.replace(contents.clone().into_bytes()).map(shown);
                    plan.changes.push(Change {
                        kind: if before.is_some() {
                            ChangeKind::Modified
                        } else {
                            ChangeKind::Added
                        },
                        path: f.rel.clone(),
                        to: None,
                        before,
                        after: Some(contents.clone()),
                    });
                }
                FileOp::Delete { path, .. } => {
                    let i = plan.file(ws, path)?;
                    let f = &mut plan.files[i];
                    let Some(old) = f.current.take() else {
                        return Err(PlanError::Missing {
                            op: "delete",
                            path: f.rel.clone(),
                            hint: "",
                        });
                    };
                    plan.changes.push(Change {
                        kind: ChangeKind::Deleted,
                        path: f.rel.clone(),
                        to: None,
                        before: Some(shown(old)),
                        after: None,
                    });
                }
                FileOp::Update {
                    path,
                    move_to,
                    hunks,
                    ..
                } => plan.update(ws, path, move_to.as_deref(), hunks)?,
            }
        }
        Ok(plan)
    }

    fn update(
        &mut self,
        ws: &Workspace,
        path: &str,
        move_to: Option<&str>,
        hunks: &[super::parse::Hunk],
    ) -> Result<(), PlanError> {
        let i = self.file(ws, path)?;
        let rel = self.files[i].rel.clone();
        let Some(bytes) = self.files[i].current.clone() else {
            return Err(PlanError::Missing {
                op: "update",
                path: rel,
                hint: "; use '*** Add File:' to create it",
            });
        };
        let before = String::from_utf8(bytes).map_err(|_| PlanError::NotText(rel.clone()))?;
        let after = apply_hunks(&before, hunks).map_err(|hunk| PlanError::Hunk {
            path: rel.clone(),
            hunk,
        })?;
        let dest = match move_to {
            Some(to) => Some(self.file(ws, to)?).filter(|&j| j != i),
            None => None,
        };
        let Some(j) = dest else {
            self.files[i].current = Some(after.clone().into_bytes());
            self.changes.push(Change {
                kind: ChangeKind::Modified,
                path: rel,
                to: None,
                before: Some(before),
                after: Some(after),
            });
            return Ok(());
        };
        // Onto an existing file it replaces it, as Codex (and `mv`) does.
        let to = self.files[j].rel.clone();
        self.files[i].current = None;
        self.files[j].current = Some(after.clone().into_bytes());
        self.files[j].mode = self.files[i].original_mode.clone();
        self.changes.push(Change {
            kind: ChangeKind::Moved,
            path: rel,
            to: Some(to),
            before: Some(before),
            after: Some(after),
        });
        Ok(())
    }

    /// The index of `path`'s entry, resolved and read on first use.
    fn file(&mut self, ws: &Workspace, path: &str) -> Result<usize, PlanError> {
        let resolved = ws.resolve(path)?;
        if let Some(i) = self.files.iter().position(|f| f.path == resolved) {
            return Ok(i);
        }
        let rel = ws.relative(&resolved);
        let (original, original_mode) = match std::fs::metadata(&resolved) {
            Ok(meta) if meta.is_dir() => return Err(PlanError::IsDir(rel)),
            Ok(meta) => {
                let bytes = std::fs::read(&resolved).map_err(|err| PlanError::Read {
                    path: rel.clone(),
                    err,
                })?;
                (Some(bytes), Some(meta.permissions()))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (None, None),
            Err(err) => return Err(PlanError::Read { path: rel, err }),
        };
        self.files.push(File {
            path: resolved,
            rel,
            current: original.clone(),
            original,
            original_mode,
            mode: None,
        });
        Ok(self.files.len() - 1)
    }

    /// Writes every changed file; if one write fails, puts back what was written and
    /// removes the folders it made, so the workspace is as it was.
    pub fn write(&self) -> Result<(), PlanError> {
        let mut done: Vec<(&File, Vec<PathBuf>)> = Vec::new();
        for f in self.files.iter().filter(|f| f.current != f.original) {
            match write_one(f) {
                Ok(made) => done.push((f, made)),
                Err(err) => {
                    let mut message = format!("cannot write '{}': {err}", f.rel);
                    let failed = undo(&done);
                    if failed.is_empty() {
                        message.push_str("; nothing of the patch was written");
                    } else {
                        message.push_str(&format!(
                            "; the files written before were put back except: {}",
                            failed.join("; ")
                        ));
                    }
                    return Err(PlanError::Write(message));
                }
            }
        }
        Ok(())
    }
}

/// A deleted file's text for the diff; a binary one is named, not shown.
fn shown(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes)
        .unwrap_or_else(|e| format!("(binary file, {} bytes)\n", e.as_bytes().len()))
}

/// Writes or deletes one file; returns the folders it created, deepest first.
fn write_one(f: &File) -> std::io::Result<Vec<PathBuf>> {
    let Some(bytes) = &f.current else {
        std::fs::remove_file(&f.path)?;
        return Ok(Vec::new());
    };
    let made = missing_parents(&f.path);
    if let Some(parent) = f.path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let written = std::fs::write(&f.path, bytes).and_then(|()| match &f.mode {
        Some(p) => std::fs::set_permissions(&f.path, p.clone()),
        None => Ok(()),
    });
    if let Err(e) = written {
        remove_dirs(&made);
        return Err(e);
    }
    Ok(made)
}

/// The ancestors of `path` that do not exist yet, deepest first.
fn missing_parents(path: &Path) -> Vec<PathBuf> {
    path.ancestors()
        .skip(1)
        .take_while(|p| std::fs::symlink_metadata(p).is_err())
        .map(Path::to_path_buf)
        .collect()
}

fn remove_dirs(dirs: &[PathBuf]) {
    for dir in dirs {
        // Only empty ones: a folder someone else filled meanwhile stays.
        let _ = std::fs::remove_dir(dir);
    }
}

/// Puts back the files written, last first; returns what could not be.
fn undo(done: &[(&File, Vec<PathBuf>)]) -> Vec<String> {
    let mut failed = Vec::new();
    for (f, made) in done.iter().rev() {
        let restored = match (&f.original, &f.original_mode) {
            (Some(bytes), Some(mode)) => std::fs::write(&f.path, bytes)
                .and_then(|()| std::fs::set_permissions(&f.path, mode.clone())),
            (Some(bytes), None) => std::fs::write(&f.path, bytes),
            (None, _) => std::fs::remove_file(&f.path),
        };
        if let Err(e) = restored {
            failed.push(format!("'{}': {e}", f.rel));
        }
        remove_dirs(made);
    }
    failed
}
