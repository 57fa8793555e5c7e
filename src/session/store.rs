use super::read_events;
use crate::protocol::{EventKind, HistoryItem};
use chrono::{DateTime, Utc};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("no saved sessions in {0}")]
    Empty(PathBuf),
    #[error("no session '{id}' in {dir} (run `squad sessions` to list them)")]
    NotFound { id: String, dir: PathBuf },
    #[error("cannot read sessions in {dir}: {source}")]
    Io {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// One line of `squad sessions`.
#[derive(Clone, Debug)]
pub struct SessionMeta {
    pub id: String,
    pub path: PathBuf,
    pub modified: DateTime<Utc>,
    pub workspace: Option<PathBuf>,
    pub first_prompt: Option<String>,
}

/// The folder of session logs (`<data dir>/squad/sessions`).
#[derive(Clone, Debug)]
pub struct SessionStore {
    dir: PathBuf,
}

impl SessionStore {
    pub fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// squad's data dir, which holds this folder (`sessions`) and the workers' worktrees.
    pub fn data_dir(&self) -> Option<&Path> {
        self.dir.parent()
    }

    pub fn path_for(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.jsonl"))
    }

    /// Sessions, newest first.
    pub fn list(&self) -> Result<Vec<SessionMeta>, StoreError> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(StoreError::Io {
                    dir: self.dir.clone(),
                    source,
                });
            }
        };
        let mut out = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
                continue;
            }
            let Some(id) = path
                .file_stem()
                .and_then(|s| s.to_str())
                .map(str::to_string)
            else {
                continue;
            };
            let modified = entry
                .metadata()
                .and_then(|m| m.modified())
                .map(DateTime::<Utc>::from)
                .unwrap_or_else(|_| Utc::now());
            let (workspace, first_prompt) = summarize(&path);
            out.push(SessionMeta {
                id,
                path,
                modified,
                workspace,
                first_prompt,
            });
        }
        out.sort_by(|a, b| b.modified.cmp(&a.modified).then(b.id.cmp(&a.id)));
        Ok(out)
    }

    /// `last` or a session id (a unique prefix is enough).
    pub fn resolve(&self, which: &str) -> Result<SessionMeta, StoreError> {
        let all = self.list()?;
        if which == "last" {
            return all
                .into_iter()
                .next()
                .ok_or_else(|| StoreError::Empty(self.dir.clone()));
        }
        let mut matches: Vec<_> = all
            .into_iter()
            .filter(|m| m.id.starts_with(which))
            .collect();
        if matches.len() == 1 {
            return Ok(matches.remove(0));
        }
        if let Some(i) = matches.iter().position(|m| m.id == which) {
            return Ok(matches.remove(i));
        }
        Err(StoreError::NotFound {
            id: which.to_string(),
            dir: self.dir.clone(),
        })
    }
}

fn summarize(path: &Path) -> (Option<PathBuf>, Option<String>) {
    let Ok((events, _)) = read_events(path) else {
        return (None, None);
    };
    let mut workspace = None;
    let mut prompt = None;
    for ev in &events {
        match &ev.kind {
            EventKind::SessionStarted { workspace: w, .. } if workspace.is_none() => {
                workspace = Some(w.clone());
            }
            EventKind::ItemAdded {
                item: HistoryItem::User { text },
            } if prompt.is_none() => {
                prompt = Some(text.clone());
            }
            _ => {}
        }
        if workspace.is_some() && prompt.is_some() {
            break;
        }
    }
    (workspace, prompt)
}
