//! Who is in the session: every agent's record, the tree of who spawned whom, and a
//! version counter that wakes whoever waits on a change of status.

use super::events::EventSink;
use crate::protocol::{AgentId, AgentResult, AgentStatus, ApprovalPolicy, EventKind, HistoryItem};
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

/// Work handed to an agent's task.
pub enum AgentInput {
    /// A message that starts a turn: from the user, or a follow-up from the parent
    /// (`speak_to_agent`), whose `reply` receives the turn's final answer.
    Message {
        text: String,
        reply: Option<oneshot::Sender<Result<String, String>>>,
    },
    /// The user switches the persona (`/role NAME`); applied between turns.
    SwitchPersona(String),
}

#[derive(Clone, Copy, Debug, Default)]
pub struct AgentStats {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cost_usd: f64,
    pub model_calls: u64,
    pub tool_calls: u64,
    pub errors: u64,
}

pub struct AgentEntry {
    pub id: AgentId,
    pub parent: Option<AgentId>,
    pub children: Vec<AgentId>,
    /// For the root: the active persona.
    pub role: String,
    pub model: String,
    pub depth: u32,
    pub task: String,
    pub status: AgentStatus,
    pub policy: ApprovalPolicy,
    /// Tools this agent may use; a worker's are a subset of its parent's.
    pub tools: Vec<String>,
    pub history: Vec<HistoryItem>,
    pub result: Option<AgentResult>,
    /// Why it failed, for the parent.
    pub failure: Option<String>,
    /// Whether the parent has been given this agent's latest outcome.
    pub delivered: bool,
    pub stats: AgentStats,
    pub created: Instant,
    pub finished: Option<Instant>,
    /// Cancels the agent for good (despawn), and with it every turn it runs.
    pub cancel: CancellationToken,
    /// Cancels only the running turn (interrupt); renewed for each turn.
    pub turn_cancel: CancellationToken,
    pub inbox: mpsc::UnboundedSender<AgentInput>,
    /// Inputs sent but not yet taken up, so "idle" is not declared too early.
    pub queued: usize,
    /// Interrupted by the user, or just resumed: results owed to it wait for the next
    /// message instead of starting a turn on their own.
    pub hold: bool,
}

impl AgentEntry {
    /// Running, waiting, or holding input it has not taken up yet (a worker just spawned).
    pub fn is_busy(&self) -> bool {
        !self.status.is_idle() || (self.queued > 0 && !self.cancel.is_cancelled())
    }

    /// The last thing the agent said, used as its result when it never called
    /// `return_results`.
    pub fn last_message(&self) -> Option<&str> {
        self.history.iter().rev().find_map(|item| match item {
            HistoryItem::Assistant { text, .. } if !text.trim().is_empty() => Some(text.as_str()),
            _ => None,
        })
    }
}

pub struct Registry {
    agents: Mutex<HashMap<AgentId, AgentEntry>>,
    version: watch::Sender<u64>,
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Registry {
    pub fn new() -> Self {
        Self {
            agents: Mutex::new(HashMap::new()),
            version: watch::channel(0).0,
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, HashMap<AgentId, AgentEntry>> {
        match self.agents.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    pub fn insert(&self, entry: AgentEntry) {
        let mut agents = self.lock();
        if let Some(parent) = entry.parent.and_then(|p| agents.get_mut(&p)) {
            parent.children.push(entry.id);
        }
        agents.insert(entry.id, entry);
        drop(agents);
        self.bump();
    }

    pub fn with<R>(&self, id: AgentId, f: impl FnOnce(&mut AgentEntry) -> R) -> Option<R> {
        self.lock().get_mut(&id).map(f)
    }

    /// Queues input for an agent, counted until it is taken up. False if the agent is gone
    /// or has stopped.
    pub fn deliver(&self, id: AgentId, input: AgentInput) -> bool {
        self.with(id, |a| {
            if a.cancel.is_cancelled() {
                return false;
            }
            let sent = a.inbox.send(input).is_ok();
            if sent {
                a.queued += 1;
            }
            sent
        })
        .unwrap_or(false)
    }

    /// Wakes everyone waiting on a change.
    pub fn bump(&self) {
        self.version.send_modify(|v| *v += 1);
    }

    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.version.subscribe()
    }

    /// Sets a status, tells the front ends, and announces `idle` when the whole tree rests.
    pub fn set_status(
        &self,
        id: AgentId,
        status: AgentStatus,
        reason: Option<String>,
        events: &EventSink,
        root: AgentId,
    ) {
        let parent = {
            let mut agents = self.lock();
            let Some(entry) = agents.get_mut(&id) else {
                return;
            };
            // Cancelled is final: a cancelled wait or approval must not revive the agent.
            if entry.status == status || entry.status == AgentStatus::Cancelled {
                return;
            }
            entry.status = status;
            if status.is_idle() {
                entry.finished = Some(Instant::now());
            } else {
                entry.finished = None;
            }
            if matches!(
                status,
                AgentStatus::Completed | AgentStatus::Inactive | AgentStatus::Failed
            ) && id != root
            {
                entry.delivered = false;
            }
            entry.parent
        };
        events.emit(
            id,
            EventKind::AgentStatus {
                parent_id: parent,
                status,
                reason,
            },
        );
        self.bump();
        if status.is_idle() {
            self.announce_if_idle(events, root);
        }
    }

    /// Tells the front ends the whole tree rests, if it does.
    pub fn announce_if_idle(&self, events: &EventSink, root: AgentId) {
        if self.tree_idle() {
            events.emit(root, EventKind::Idle);
            super::memory::release_free_memory();
        }
    }

    /// No agent running or waiting, and no input waiting to be taken up.
    pub fn tree_idle(&self) -> bool {
        self.lock().values().all(|a| !a.is_busy())
    }

    /// `id` and everyone below it, parents before children.
    pub fn subtree(&self, id: AgentId) -> Vec<AgentId> {
        let agents = self.lock();
        let mut out = vec![id];
        let mut i = 0;
        while i < out.len() {
            if let Some(a) = agents.get(&out[i]) {
                out.extend(a.children.iter().copied());
            }
            i += 1;
        }
        out
    }

    /// Agents that still hold work or may be spoken to again (not failed or cancelled).
    pub fn live_count(&self) -> usize {
        self.lock()
            .values()
            .filter(|a| !matches!(a.status, AgentStatus::Failed | AgentStatus::Cancelled))
            .count()
    }
}
