//! The session's placed workers, by agent, and what each holds: its connection, what
//! its far side holds of it, its tools there. Apart from the layer, so the agent tools
//! (`spawn_agent` registers a worker) reach it without the runtime's context.

use crate::environments::Remote;
use crate::environments::carry::Carried;
use crate::protocol::AgentId;
use crate::tools::ToolHandler;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The session's placed workers, by agent.
#[derive(Default)]
pub struct Placements {
    /// The config defines environments, or a resumed worker was placed: otherwise no
    /// worker gets a layer.
    enabled: AtomicBool,
    workers: Mutex<HashMap<AgentId, Arc<PlacedWorker>>>,
    /// Releases begun when a worker went, for the session's end to wait for.
    releasing: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// A resumed session's placed workers whose far side is being reattached or started
    /// again (`resume.rs`): each one's outcome, once known (`Err`: why it cannot run).
    reopening: Mutex<HashMap<AgentId, Reopening>>,
}

/// The outcome of one worker's reopening, once it is known.
pub(super) type Reopening = tokio::sync::watch::Receiver<Option<Result<(), String>>>;

impl Placements {
    /// Placements for a session whose config defines environments (`enabled`).
    pub fn new(enabled: bool) -> Self {
        Self {
            enabled: AtomicBool::new(enabled),
            workers: Mutex::default(),
            releasing: Mutex::default(),
            reopening: Mutex::default(),
        }
    }

    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// `agent`, about to start, runs at `worker`'s far side.
    pub fn register(&self, agent: AgentId, worker: Arc<PlacedWorker>) {
        crate::sync::lock(&self.workers).insert(agent, worker);
    }

    /// `agent` was not started after all: its far side is the caller's to release.
    pub fn unregister(&self, agent: AgentId) -> Option<Arc<PlacedWorker>> {
        crate::sync::lock(&self.workers).remove(&agent)
    }

    pub fn get(&self, agent: AgentId) -> Option<Arc<PlacedWorker>> {
        crate::sync::lock(&self.workers).get(&agent).cloned()
    }

    /// `agent`'s far side is being reopened; `outcome` tells when it is known.
    pub(super) fn reopening(&self, agent: AgentId, outcome: Reopening) {
        // Even where the config no longer names any environment: it fails there, not here.
        self.enabled.store(true, Ordering::Relaxed);
        crate::sync::lock(&self.reopening).insert(agent, outcome);
    }

    /// Where `agent`'s tools run: its far side (once a resume reopened it), `None` here,
    /// or why it can run nowhere (its far side could not be reattached nor started again).
    pub(super) async fn resolve(
        &self,
        agent: AgentId,
    ) -> Result<Option<Arc<PlacedWorker>>, String> {
        let waiting = crate::sync::lock(&self.reopening).get(&agent).cloned();
        if let Some(mut outcome) = waiting {
            let known = outcome
                .wait_for(Option::is_some)
                .await
                .ok()
                .and_then(|o| o.clone());
            known.unwrap_or_else(|| {
                Err("its far side was not reopened: the session ended".into())
            })?;
        }
        Ok(self.get(agent))
    }

    /// The worker is gone: its far side goes (the container, its worktree there).
    pub(super) fn forget(&self, agent: AgentId) {
        let Some(worker) = crate::sync::lock(&self.workers).remove(&agent) else {
            return;
        };
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let job = handle.spawn(async move { worker.release().await });
            let mut releasing = crate::sync::lock(&self.releasing);
            releasing.retain(|j| !j.is_finished());
            releasing.push(job);
        }
    }

    /// Every placed worker's far side goes now (the session ends): waited for, unlike a
    /// drop, which a runtime that is ending may never run.
    pub async fn close_all(&self) {
        let all: Vec<_> = crate::sync::lock(&self.workers).drain().collect();
        for (_, worker) in all {
            worker.release().await;
        }
        let jobs: Vec<_> = crate::sync::lock(&self.releasing).drain(..).collect();
        for job in jobs {
            let _ = job.await;
        }
    }
}

/// A worker placed in an environment: its connection, what the far side holds of it, and
/// how much of its change is in its worktree here.
pub struct PlacedWorker {
    pub env: String,
    pub(super) remote: Arc<Remote>,
    pub(super) carried: Carried,
    /// The repository here (the workspace's).
    pub(super) repo: PathBuf,
    /// Its coding tools, each running at the far side.
    pub(super) tools: HashMap<String, Arc<dyn ToolHandler>>,
    /// The far commit its worktree here holds (its base, until a change came back).
    pub(super) applied: Mutex<String>,
    /// A commit that came back and is being applied (or was, when a killed run's log
    /// names one): whether its worktree holds it is looked at before the next apply.
    pub(super) applying: Mutex<Option<String>>,
    /// Its work there could not be brought back when it went: its root there stays.
    pub(super) keep_there: AtomicBool,
    /// A tool ran there since its change last came back (or it was reattached): only then
    /// is there anything to bring back when it goes.
    pub(super) dirty: AtomicBool,
    /// Collecting and applying run one at a time.
    pub(super) bringing: tokio::sync::Mutex<()>,
}

impl PlacedWorker {
    /// Its far side as the log keeps it, for a resume (`EventKind::FarSide`).
    pub fn far_side(&self) -> crate::protocol::FarSide {
        let store = match &self.carried.way {
            crate::environments::carry::Way::Git { store } => Some(store.clone()),
            crate::environments::carry::Way::Archive => None,
        };
        crate::protocol::FarSide {
            env: self.env.clone(),
            root: self.carried.root.clone(),
            container: self.remote.container().map(str::to_string),
            store,
            base: self.carried.base.clone(),
            applied: crate::sync::lock(&self.applied).clone(),
            applying: crate::sync::lock(&self.applying).clone(),
        }
    }

    /// Its worktree there goes and its connection closes (a container is removed); after
    /// a bring-back under way, never during it. A root whose work could not come back stays.
    pub async fn release(&self) {
        let _one = self.bringing.lock().await;
        if let crate::environments::carry::Way::Git { store } = &self.carried.way
            && self.remote.lost().is_none()
            && !self.keep_there.load(Ordering::Relaxed)
        {
            let store = store.clone();
            let _ = self
                .remote
                .carry(|id| crate::environments::protocol::Request::Release { id, store })
                .await;
        }
        self.remote.close().await;
    }
}
