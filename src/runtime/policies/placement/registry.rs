//! The session's placed workers, by agent, and what each holds: its connection, what
//! its far side holds of it, its tools there. Apart from the layer, so the agent tools
//! (`spawn_agent` registers a worker) reach it without the runtime's context.

use crate::environments::Remote;
use crate::environments::carry::Carried;
use crate::protocol::AgentId;
use crate::tools::ToolHandler;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The session's placed workers, by agent.
#[derive(Default)]
pub struct Placements {
    /// The config defines environments: otherwise no worker gets a layer.
    enabled: bool,
    workers: Mutex<HashMap<AgentId, Arc<PlacedWorker>>>,
    /// Releases begun when a worker went, for the session's end to wait for.
    releasing: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl Placements {
    /// Placements for a session whose config defines environments (`enabled`).
    pub fn new(enabled: bool) -> Self {
        Self {
            enabled,
            workers: Mutex::default(),
            releasing: Mutex::default(),
        }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// `agent`, about to start, runs at `worker`'s far side.
    pub fn register(&self, agent: AgentId, worker: Arc<PlacedWorker>) {
        crate::sync::lock(&self.workers).insert(agent, worker);
    }

    pub fn get(&self, agent: AgentId) -> Option<Arc<PlacedWorker>> {
        crate::sync::lock(&self.workers).get(&agent).cloned()
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
    /// Collecting and applying run one at a time.
    pub(super) bringing: tokio::sync::Mutex<()>,
}

impl PlacedWorker {
    /// Its worktree there goes and its connection closes (a container is removed).
    pub async fn release(&self) {
        if let crate::environments::carry::Way::Git { store } = &self.carried.way
            && self.remote.lost().is_none()
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
