use super::read_events;
use crate::protocol::{EventKind, HistoryItem};
use chrono::{DateTime, Utc};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "no saved session of this folder ({}); `squad sessions --all` lists every folder's, \
         and `--resume ID` takes one of them",
        workspace.display()
    )]
    NoneHere { workspace: PathBuf },
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
    /// The folder it last ran in (a session resumed elsewhere goes on there).
    pub workspace: Option<PathBuf>,
    pub first_prompt: Option<String>,
    /// A `squad review` run: reviewers and findings, no message of the user.
    pub review: bool,
}

impl SessionMeta {
    /// Whether it last ran in `workspace`.
    pub fn is_of(&self, workspace: &Path) -> bool {
        self.workspace
            .as_deref()
            .is_some_and(|w| same_folder(w, workspace))
    }
}

/// The same folder, however each was spelled (a symlink, `..`).
fn same_folder(a: &Path, b: &Path) -> bool {
    a == b
        || matches!(
            (a.canonicalize(), b.canonicalize()),
            (Ok(a), Ok(b)) if a == b
        )
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
            let (workspace, first_prompt, review) = summarize(&path);
            out.push(SessionMeta {
                id,
                path,
                modified,
                workspace,
                first_prompt,
                review,
            });
        }
        out.sort_by(|a, b| b.modified.cmp(&a.modified).then(b.id.cmp(&a.id)));
        Ok(out)
    }

    /// `last`, the newest session of `workspace` (a review is none to go on with), or a
    /// session id of any folder (a unique prefix is enough).
    pub fn resolve(&self, which: &str, workspace: &Path) -> Result<SessionMeta, StoreError> {
        let all = self.list()?;
        if which == "last" {
            return all
                .into_iter()
                .find(|m| !m.review && m.is_of(workspace))
                .ok_or_else(|| StoreError::NoneHere {
                    workspace: workspace.to_path_buf(),
                });
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

/// The folder the session last ran in, its first user message, and whether it is a
/// review (a review started, and the user never wrote).
fn summarize(path: &Path) -> (Option<PathBuf>, Option<String>, bool) {
    let Ok((events, _)) = read_events(path) else {
        return (None, None, false);
    };
    let mut workspace = None;
    let mut prompt = None;
    let mut reviewed = false;
    // The persona's: a worker's first message is its task, not the user's.
    let mut root = None;
    for ev in &events {
        if let EventKind::SessionStarted { workspace: w, .. } = &ev.kind {
            workspace = Some(w.clone());
            root.get_or_insert(ev.agent_id);
        } else if let EventKind::ItemAdded {
            item: HistoryItem::User { text },
        } = &ev.kind
            && prompt.is_none()
            && root == Some(ev.agent_id)
        {
            prompt = Some(text.clone());
        } else if matches!(ev.kind, EventKind::ReviewStarted { .. }) {
            reviewed = true;
        }
    }
    let review = reviewed && prompt.is_none();
    (workspace, prompt, review)
}
