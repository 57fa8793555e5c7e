//! A patch against the workspace: every operation worked out in memory first (each path
//! through the workspace's confinement, each hunk applied), then written in one go, and
//! undone if a write fails, so a call changes all its files or none.

use super::apply::{HunkError, apply_hunks};
use super::parse::{FileOp, Patch};
use crate::tools::change::{self, Target, shown};
use crate::tools::{ToolContext, ToolError};
use std::path::PathBuf;

/// Why a patch cannot be applied; nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// A path out of the workspace, a directory, a file that cannot be read.
    #[error("{0}")]
    Open(ToolError),
    #[error("cannot {op} '{path}': it does not exist{hint}")]
    Missing {
        op: &'static str,
        path: String,
        hint: &'static str,
    },
    #[error("'{0}' is not a UTF-8 text file; apply_patch only updates text")]
    NotText(String),
    #[error("'{path}', {hunk}")]
    Hunk { path: String, hunk: HunkError },
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

/// One file the patch touches: what it holds now (`Target`, opened the way every file
/// tool opens what it changes) and what it will hold.
struct File {
    target: Target,
    current: Option<Vec<u8>>,
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
            .filter(|f| f.changed())
            .map(|f| f.target.rel.clone())
            .collect()
    }

    /// Works out every operation in order, each on the result of the ones before (so a
    /// file deleted and added again is replaced), opening each file once.
    pub async fn new(ctx: &ToolContext, patch: &Patch) -> Result<Self, PlanError> {
        let mut plan = Plan {
            files: Vec::new(),
            changes: Vec::new(),
        };
        let mut opened: Vec<(&str, usize)> = Vec::new();
        for op in &patch.ops {
            let (path, move_to) = match op {
                FileOp::Add { path, .. } | FileOp::Delete { path, .. } => (path, None),
                FileOp::Update { path, move_to, .. } => (path, move_to.as_deref()),
            };
            for path in std::iter::once(path.as_str()).chain(move_to) {
                if opened.iter().any(|(p, _)| *p == path) {
                    continue;
                }
                let target = change::open(ctx, path).await.map_err(PlanError::Open)?;
                let at = match plan.files.iter().position(|f| f.target.path == target.path) {
                    Some(at) => at,
                    None => {
                        plan.files.push(File {
                            current: target.before.clone(),
                            target,
                            mode: None,
                        });
                        plan.files.len() - 1
                    }
                };
                opened.push((path, at));
            }
        }
        let ws = Opened(opened);
        for op in &patch.ops {
            match op {
                FileOp::Add { path, contents, .. } => {
                    // Over an existing file it replaces it whole, as Codex does: models
                    // trained on it add a file to rewrite it.
                    let i = ws.file(path);
                    let f = &mut plan.files[i];
                    let before = f
                        .current
                        .replace(contents.clone().into_bytes())
                        .map(|b| shown(&b));
                    plan.changes.push(Change {
                        kind: if before.is_some() {
                            ChangeKind::Modified
                        } else {
                            ChangeKind::Added
                        },
                        path: f.target.rel.clone(),
                        to: None,
                        before,
                        after: Some(contents.clone()),
                    });
                }
                FileOp::Delete { path, .. } => {
                    let i = ws.file(path);
                    let f = &mut plan.files[i];
                    let Some(old) = f.current.take() else {
                        return Err(PlanError::Missing {
                            op: "delete",
                            path: f.target.rel.clone(),
                            hint: "",
                        });
                    };
                    plan.changes.push(Change {
                        kind: ChangeKind::Deleted,
                        path: f.target.rel.clone(),
                        to: None,
                        before: Some(shown(&old)),
                        after: None,
                    });
                }
                FileOp::Update {
                    path,
                    move_to,
                    hunks,
                    ..
                } => plan.update(&ws, path, move_to.as_deref(), hunks)?,
            }
        }
        Ok(plan)
    }

    fn update(
        &mut self,
        ws: &Opened<'_>,
        path: &str,
        move_to: Option<&str>,
        hunks: &[super::parse::Hunk],
    ) -> Result<(), PlanError> {
        let i = ws.file(path);
        let rel = self.files[i].target.rel.clone();
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
            Some(to) => Some(ws.file(to)).filter(|&j| j != i),
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
        let to = self.files[j].target.rel.clone();
        self.files[i].current = None;
        self.files[j].current = Some(after.clone().into_bytes());
        self.files[j].mode = self.files[i].target.mode.clone();
        self.changes.push(Change {
            kind: ChangeKind::Moved,
            path: rel,
            to: Some(to),
            before: Some(before),
            after: Some(after),
        });
        Ok(())
    }

    /// Writes every changed file through the one write path the file tools share; when a
    /// write fails, the files written before are put back as they were.
    pub async fn write(&self, ctx: &ToolContext) -> Result<(), PlanError> {
        let mut done: Vec<(&File, Vec<PathBuf>)> = Vec::new();
        for f in self.files.iter().filter(|f| f.changed()) {
            match change::store(ctx, &f.target, f.current.as_deref(), f.mode.as_ref()).await {
                Ok(made) => done.push((f, made)),
                Err(err) => {
                    let mut message = err.to_string();
                    let mut failed = Vec::new();
                    for (f, made) in done.iter().rev() {
                        if let Err(e) = change::restore(ctx, &f.target, made).await {
                            failed.push(e.to_string());
                        }
                    }
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

impl File {
    fn changed(&self) -> bool {
        self.current != self.target.before
    }
}

/// Which file of the plan each path of the patch names (two paths may name one file).
struct Opened<'a>(Vec<(&'a str, usize)>);

impl Opened<'_> {
    fn file(&self, path: &str) -> usize {
        // Every path of the patch was opened before any operation is worked out.
        self.0
            .iter()
            .find(|(p, _)| *p == path)
            .map_or(0, |(_, at)| *at)
    }
}
