//! Checkpoints before each user message to the persona (issue 39): the conversation at
//! that point (`checkpoint_started`: its seq in the log, the persona's history length) and
//! the workspace's files (`checkpoint_taken`, in the shadow repository of
//! `crate::checkpoint`). A rewind goes back to either or both.
//!
//! Off the message's path: the files' checkpoint runs on a blocking thread while the
//! persona's model call goes ahead; the message is not held by it. Ordering is kept at the
//! tools: every tool call of the persona waits for the checkpoint of its own turn before
//! it runs (its layer's `tool_call`), so no write of squad's can reach the workspace before the
//! files were recorded as they stood when the user spoke. The model's first reply takes
//! seconds; a checkpoint of 10,000 files a fraction of that (benches/checkpoint.rs), so the
//! wait is rarely felt. Workers write only after a persona's tool call (their spawn).

pub mod error;
pub mod layer;
pub mod rewind;

use crate::checkpoint::{CheckpointStore, Keep, Live, prune};
use crate::protocol::{AgentId, EventKind, Op};
use crate::runtime::cx::{Layer, OpRefused, Policy, Starting};
use crate::runtime::policies::pause::gate::PauseGate;
use crate::runtime::session::Session;
use crate::runtime::team::Team;
use error::CheckpointFailed;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::{OnceCell, watch};

/// The session's checkpoints of one workspace.
pub struct Checkpoints {
    data: PathBuf,
    workspace: PathBuf,
    /// Opened at the first checkpoint (a `git init` the first time), on a blocking thread.
    store: OnceCell<Result<Arc<CheckpointStore>, CheckpointFailed>>,
    /// The number of the user's last message to the persona, over the whole session.
    last: AtomicU32,
    /// Turns true once the checkpoint of the latest message is taken (or failed).
    pending: Mutex<Option<watch::Receiver<bool>>>,
    /// The session's log, which a rewind reads the conversation back from.
    log: Option<PathBuf>,
    /// Keeps a prune from removing the store while the session runs (none if it failed).
    _live: Option<Live>,
    /// A failed checkpoint was told: the session says it once, not at every message.
    failure_told: AtomicBool,
}

impl Checkpoints {
    /// `last`: the number of the user's last message before this run (a resume). Claims
    /// the store, then prunes the stores of all workspaces in the background if they pass
    /// the size cap of `keep`.
    pub fn new(data: &Path, workspace: &Path, last: u32, keep: Keep) -> Self {
        let live = Live::claim(data, workspace)
            .inspect_err(|e| tracing::warn!("checkpoints: {e}"))
            .ok();
        let dir = data.to_path_buf();
        let _ = std::thread::Builder::new()
            .name("checkpoint-prune".into())
            .spawn(move || {
                let pruned = prune(&dir, keep, false);
                for p in pruned.removed {
                    tracing::info!(workspace = ?p.workspace, bytes = p.bytes, "checkpoints pruned");
                }
            });
        Self {
            _live: live,
            data: data.to_path_buf(),
            workspace: workspace.to_path_buf(),
            store: OnceCell::new(),
            last: AtomicU32::new(last),
            pending: Mutex::new(None),
            log: None,
            failure_told: AtomicBool::new(false),
        }
    }

    pub fn with_log(self, log: Option<PathBuf>) -> Self {
        Self { log, ..self }
    }

    /// Checkpoint `n` was logged by a rewind (the state before it): the next user
    /// message is numbered after it.
    pub fn numbered(&self, n: u32) {
        self.last.fetch_max(n, Ordering::SeqCst);
    }

    pub fn log(&self) -> Option<PathBuf> {
        self.log.clone()
    }

    /// The workspace's store, opened (made the first time) on a blocking thread.
    pub async fn store(&self) -> Result<Arc<CheckpointStore>, CheckpointFailed> {
        let (data, workspace) = (self.data.clone(), self.workspace.clone());
        self.store
            .get_or_init(|| async move {
                let opened = tokio::task::spawn_blocking(move || {
                    CheckpointStore::open(&data, &workspace).map(Arc::new)
                })
                .await;
                Ok(opened??)
            })
            .await
            .clone()
    }

    /// Says the conversation's checkpoint now; the files' is [`Checkpoints::taken`], to
    /// run in the background, then `done` is sent.
    pub fn begin(&self, team: &Team, persona: AgentId) -> (u32, watch::Sender<bool>) {
        let message = self.last.fetch_add(1, Ordering::SeqCst) + 1;
        let history_len = team.request_view(persona).map_or(0, |v| v.history.len());
        let started = EventKind::CheckpointStarted {
            message,
            history_len,
            label: None,
        };
        team.emit(persona, started);
        let (done, rx) = watch::channel(false);
        *self.pending.lock().unwrap_or_else(|e| e.into_inner()) = Some(rx);
        (message, done)
    }

    /// Takes the files' checkpoint of `message`: the event that says how it went.
    pub async fn taken(&self, message: u32) -> EventKind {
        let start = Instant::now();
        let (checkpoint, error) = match self.take(message).await {
            Ok(id) => (Some(id), None),
            Err(e) => (None, Some(e.to_string())),
        };
        let millis = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
        EventKind::CheckpointTaken {
            message,
            checkpoint,
            error,
            millis,
        }
    }

    async fn take(&self, message: u32) -> Result<String, CheckpointFailed> {
        let store = self.store().await?;
        let label = format!("before the user's message {message}");
        let id = tokio::task::spawn_blocking(move || store.checkpoint(&label)).await??;
        Ok(id.0)
    }

    /// A checkpoint that failed (for another reason than an unreadable file, which is left
    /// out instead), told the first time only: the turn goes on without it.
    pub fn failed(&self, taken: &EventKind) -> Option<EventKind> {
        let EventKind::CheckpointTaken {
            error: Some(error), ..
        } = taken
        else {
            return None;
        };
        if self.failure_told.swap(true, Ordering::SeqCst) {
            return None;
        }
        let message = format!(
            "checkpoints failed, so /rewind cannot go back to before this message: {error}"
        );
        Some(EventKind::Notice { message })
    }

    /// What a checkpoint could not read and rewind will not restore, each file told once.
    pub async fn unreadable(&self) -> Option<EventKind> {
        let paths = self.store().await.ok()?.unreadable();
        let mut names = paths.iter().take(3).cloned().collect::<Vec<_>>().join(", ");
        match paths.len() {
            0 => return None,
            n @ 4.. => names.push_str(&format!(" and {} more", n - 3)),
            _ => {}
        }
        let they = if paths.len() == 1 { "it" } else { "they" };
        let message = format!("rewind will not restore {names}: {they} cannot be read");
        Some(EventKind::Notice { message })
    }

    /// Waits until the checkpoint of the latest message is taken (at once when it is).
    pub async fn ready(&self) {
        let pending = self
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(mut rx) = pending {
            let _ = rx.wait_for(|done| *done).await;
        }
    }

    /// squad wrote `paths` (as a tool was given them) in the workspace `root`.
    pub async fn note_written(&self, root: &Path, paths: &[String]) {
        let Ok(store) = self.store().await else {
            return;
        };
        let rel: Vec<String> = paths
            .iter()
            .map(|p| {
                let p = Path::new(p);
                let p = p.strip_prefix(root).unwrap_or(p);
                p.to_string_lossy().trim_start_matches("./").to_string()
            })
            .filter(|p| !p.starts_with('/') && !p.split('/').any(|part| part == ".."))
            .collect();
        let noted = tokio::task::spawn_blocking(move || store.note_written(&rel)).await;
        if let Ok(Err(e)) = noted {
            tracing::warn!("checkpoints: cannot note squad's write: {e}");
        }
    }
}

/// The workspace's checkpoints (none without a data dir: no layer then, and a rewind says
/// why it cannot), and the pause gate a rewind's stop lifts.
#[derive(Clone)]
pub struct CheckpointPolicy {
    pub checkpoints: Option<Arc<Checkpoints>>,
    pub pause: Arc<PauseGate>,
}

impl Policy for CheckpointPolicy {
    fn layer_for(&self, agent: &Starting) -> Option<Box<dyn Layer>> {
        let checkpoints = self.checkpoints.clone()?;
        Some(Box::new(layer::CheckpointLayer {
            checkpoints,
            persona: !agent.is_worker(),
        }))
    }

    fn on_op(&self, session: &Arc<Session>, op: &Op) -> Result<(), OpRefused> {
        rewind::serve(session, self, op);
        Ok(())
    }
}
