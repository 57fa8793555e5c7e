//! The one owner of the agent tree: every agent's record, who spawned whom, statuses, inboxes
//! and the fan-in bookkeeping (which outcomes the supervisor has been given). Its fields
//! are private; the rest of the runtime changes an agent only through the named steps
//! here, so the busy/idle/fan-in rules live in one place and are tested next to it.

pub mod budget;
pub mod carve;
mod context;
mod fan_in;
mod idle;
mod inbox;
mod mail;
mod queries;
mod release;
mod roster;
mod settings;
mod stats;
mod steer;
mod told;

pub use mail::{MAX_MESSAGE_BYTES, Member, Queued};
pub use queries::ChildInfo;
pub use steer::Steer;

pub use budget::{Spend, for_worker, from_limits};
pub use context::Compaction;
use context::ContextState;
pub use fan_in::{FanIn, Outcome};
pub use stats::AgentStats;

use super::events::EventSink;
use super::inbox::Notice;
use crate::protocol::{
    AgentId, AgentResult, AgentStatus, ApprovalPolicy, Budget, EventKind, HistoryItem, SpawnOptions,
};
use chrono::{DateTime, Utc};
use release::{Life, Releases};
use roster::Roster;
use std::sync::{Arc, Mutex, MutexGuard};
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
    /// The user asks to compact the conversation (`/compact`); done between turns.
    Compact,
    /// Teammates' messages wait (`team/mail.rs`): a turn starts to hand them over.
    Mail,
    /// The user continues an agent read back `interrupted`: it redoes its unfinished
    /// model call, or goes back to waiting for its workers.
    Continue,
}

/// Everything needed to bring an agent into the team.
pub struct NewAgent {
    pub id: AgentId,
    pub parent: Option<AgentId>,
    pub role: String,
    pub model: String,
    pub depth: u32,
    pub task: String,
    pub policy: ApprovalPolicy,
    pub tools: Vec<String>,
    /// Earlier history (resume) or the worker's starting context.
    pub history: Vec<HistoryItem>,
    pub status: AgentStatus,
    pub stats: AgentStats,
    /// What it may spend (`runtime/budget.rs`); unlimited for the persona.
    pub budget: Budget,
    pub result: Option<AgentResult>,
    /// Starts a turn at once with this message.
    pub first_message: Option<String>,
    /// Whether to announce it. A resumed agent was announced in the log already; it also
    /// waits for someone to speak before it acts on results owed to it.
    pub announce: bool,
    /// What its spawn asked beyond its role (`keep`, `instructions`, narrowed `tools`:
    /// `tools` above is already the narrowed list).
    pub options: SpawnOptions,
    /// Read back released from the log: it only sits in the tree.
    pub released: bool,
}

/// A conversation shared with the requests built from it: a request holds a clone of the
/// `Arc`, and the agent appends only once the call is over, so nothing is copied.
pub type History = Arc<Vec<HistoryItem>>;

struct Agent {
    id: AgentId,
    parent: Option<AgentId>,
    children: Vec<AgentId>,
    /// For the root: the active persona.
    role: String,
    model: String,
    depth: u32,
    task: String,
    status: AgentStatus,
    policy: ApprovalPolicy,
    tools: Arc<[String]>,
    history: History,
    /// How full its context is: the server's count of the last call, plus estimates.
    context: ContextState,
    result: Option<AgentResult>,
    /// Why it failed, for the parent.
    failure: Option<String>,
    /// Whether the parent has been given this agent's latest outcome.
    delivered: bool,
    /// Its outcome is squad's, not its parent's (a `/review` reviewer): never owed.
    for_squad: bool,
    stats: AgentStats,
    budget: Budget,
    created: Instant,
    /// Wall-clock spawn time, for the model (`created_at`, seed 000).
    created_at: DateTime<Utc>,
    finished: Option<Instant>,
    /// Cancels the agent for good (despawn), and with it every turn it runs.
    cancel: CancellationToken,
    /// Cancels only the running turn (interrupt); renewed for each turn.
    turn_cancel: CancellationToken,
    inbox: mpsc::UnboundedSender<AgentInput>,
    /// Inputs sent but not yet taken up, so "idle" is not declared too early.
    queued: usize,
    /// Interrupted by the user, or just resumed: results owed to it wait for the next
    /// message instead of starting a turn on their own.
    hold: bool,
    /// Notices waiting for its next batch (its workers' messages, critical notices).
    notices: Vec<Notice>,
    /// A worker of its failed since it last looked: a waiting `wait_for_agents` checks.
    alarm: bool,
    /// In a turn: a message for it is taken up at its next model call (`steer`).
    in_turn: bool,
    /// Messages for the running turn, oldest first (`team/steer.rs`).
    steering: Vec<steer::Steer>,
    /// Instructions its spawn appended to its role's prompt.
    instructions: Option<String>,
    /// Its spawn named its tools: it gets those, and no MCP tools besides.
    narrowed: bool,
    /// Temporary or kept, released or not (`team/release.rs`).
    life: Life,
    /// Teammates' messages waiting for it, its spawn's name, its sending rate (`mail.rs`).
    mailbox: mail::Mailbox,
}

impl Agent {
    /// The roster's record of `new`, starting from `history`.
    fn new(
        new: &NewAgent,
        history: Vec<HistoryItem>,
        cancel: &CancellationToken,
        inbox: mpsc::UnboundedSender<AgentInput>,
    ) -> Self {
        Self {
            id: new.id,
            parent: new.parent,
            children: Vec::new(),
            role: new.role.clone(),
            model: new.model.clone(),
            depth: new.depth,
            task: new.task.clone(),
            status: new.status,
            policy: new.policy,
            tools: new.tools.as_slice().into(),
            context: ContextState::of(&history),
            history: Arc::new(history),
            result: new.result.clone(),
            failure: None,
            delivered: true,
            for_squad: false,
            stats: new.stats,
            budget: new.budget,
            created: Instant::now(),
            created_at: Utc::now(),
            finished: None,
            cancel: cancel.clone(),
            turn_cancel: cancel.child_token(),
            inbox,
            queued: 0,
            // A resumed agent acts on results owed to it only when someone speaks to it.
            hold: !new.announce,
            notices: Vec::new(),
            alarm: false,
            in_turn: false,
            steering: Vec::new(),
            instructions: new.options.instructions.clone(),
            narrowed: new.options.tools.is_some(),
            life: Life {
                keep: new.options.keep,
                released: new.released,
                ..Life::default()
            },
            mailbox: mail::Mailbox::named(new.options.name.clone()),
        }
    }
}

impl Agent {
    /// Running, waiting, or holding input it has not taken up yet (a worker just spawned).
    fn is_busy(&self) -> bool {
        !self.status.is_idle() || (self.queued > 0 && !self.cancel.is_cancelled())
    }

    /// Finished with an outcome the parent has not been given yet.
    fn owes_outcome(&self) -> bool {
        !self.is_busy() && !self.delivered && self.status != AgentStatus::Cancelled
    }

    /// The last thing the agent said, used as its result when it never called
    /// `return_results`.
    fn last_message(&self) -> Option<&str> {
        self.history.iter().rev().find_map(|item| match item {
            HistoryItem::Assistant { text, .. } if !text.trim().is_empty() => Some(text.as_str()),
            _ => None,
        })
    }
}

/// What the next model call of an agent is built from.
pub struct RequestView {
    pub role: String,
    pub model: String,
    pub tools: Arc<[String]>,
    pub history: History,
    pub depth: u32,
    /// The role of its supervisor, for workers.
    pub parent_role: Option<String>,
    /// Appended to its role's prompt (its spawn's `instructions`).
    pub instructions: Option<String>,
}

/// Who an agent is, for the tools that act on it.
#[derive(Clone, Debug)]
pub struct AgentCard {
    pub role: String,
    pub depth: u32,
    pub policy: ApprovalPolicy,
    pub tools: Arc<[String]>,
}

pub struct Team {
    agents: Mutex<Roster>,
    version: watch::Sender<u64>,
    events: EventSink,
    root: AgentId,
    releases: Releases,
    /// The longest model call of the session so far, in ms (what a wall-time budget a
    /// model asks for is weighed against).
    slowest_call_ms: std::sync::atomic::AtomicU64,
    /// The persona's model as the user chose it (`/model`), kept across persona switches.
    model_choice: Mutex<Option<String>>,
}

impl Team {
    pub fn new(events: EventSink, root: AgentId) -> Self {
        Self {
            agents: Mutex::new(Roster::default()),
            version: watch::channel(0).0,
            events,
            root,
            releases: Releases::default(),
            slowest_call_ms: std::sync::atomic::AtomicU64::new(0),
            model_choice: Mutex::new(None),
        }
    }

    /// How long after its outcome reached its supervisor a temporary worker is released
    /// (`[team] release_after_s`).
    pub fn release_after(mut self, after: std::time::Duration) -> Self {
        self.releases = Releases::new(after);
        self
    }

    pub fn root(&self) -> AgentId {
        self.root
    }

    pub fn events(&self) -> &EventSink {
        &self.events
    }

    pub fn emit(&self, id: AgentId, kind: EventKind) {
        self.events.emit(id, kind);
    }

    fn lock(&self) -> MutexGuard<'_, Roster> {
        crate::sync::lock(&self.agents)
    }

    fn with<R>(&self, id: AgentId, f: impl FnOnce(&mut Agent) -> R) -> Option<R> {
        self.lock().get_mut(&id).map(f)
    }

    /// Registers an agent (announcing it unless it is being restored) and returns its
    /// inbox and its cancellation token; the caller starts its task.
    pub fn add(&self, new: NewAgent) -> (mpsc::UnboundedReceiver<AgentInput>, CancellationToken) {
        let (tx, rx) = mpsc::unbounded_channel();
        let cancel = self.register(&new, tx);
        self.bump();
        self.announce(new);
        (rx, cancel)
    }

    /// Puts a new agent on the roster, under its parent (whose cancellation reaches it);
    /// returns its cancellation token.
    fn register(
        &self,
        new: &NewAgent,
        inbox: mpsc::UnboundedSender<AgentInput>,
    ) -> CancellationToken {
        let id = new.id;
        let mut agents = self.lock();
        let cancel = match new.parent.and_then(|p| agents.get(&p)) {
            Some(parent) => parent.cancel.child_token(),
            None => CancellationToken::new(),
        };
        if new.released {
            // Its task ends as soon as it starts; nothing can reach it.
            cancel.cancel();
        }
        if let Some(parent) = new.parent.and_then(|p| agents.get_mut(&p)) {
            parent.children.push(id);
        }
        agents.count_status(None, new.status);
        budget::enter(&mut agents, new);
        // An announced agent's history is told item by item after (`announce`).
        let history = if new.announce {
            Vec::with_capacity(new.history.len() + 4)
        } else {
            new.history.clone()
        };
        agents.insert(id, Agent::new(new, history, &cancel, inbox));
        agents.resettle(id);
        cancel
    }

    /// Tells the front ends of a new agent (a restored one is in the log already), then
    /// gives it its first message.
    fn announce(&self, new: NewAgent) {
        let id = new.id;
        if new.announce {
            self.emit(
                id,
                EventKind::AgentSpawned {
                    parent_id: new.parent,
                    role: new.role,
                    model: new.model,
                    task: new.task,
                    depth: new.depth,
                },
            );
            if !new.budget.is_unlimited() {
                self.emit(id, EventKind::AgentBudget { budget: new.budget });
            }
            if !new.options.is_default() {
                self.emit(id, EventKind::AgentOptions(new.options));
            }
            for item in new.history {
                self.push_item(id, item);
            }
        }
        if let Some(text) = new.first_message {
            self.deliver(id, AgentInput::Message { text, reply: None });
        }
    }

    /// Queues input for an agent, counted until it is taken up. False if the agent is gone
    /// or has stopped.
    pub fn deliver(&self, id: AgentId, input: AgentInput) -> bool {
        let mut agents = self.lock();
        let Some(a) = agents.get_mut(&id) else {
            return false;
        };
        if a.cancel.is_cancelled() || a.inbox.send(input).is_err() {
            return false;
        }
        a.queued += 1;
        if a.queued == 1 {
            agents.queued += 1;
        }
        true
    }

    /// The agent has taken up one queued input.
    pub fn take_input(&self, id: AgentId) {
        let mut agents = self.lock();
        let Some(a) = agents.get_mut(&id) else {
            return;
        };
        if a.queued > 0 {
            a.queued -= 1;
            if a.queued == 0 {
                agents.queued -= 1;
            }
        }
    }

    /// Wakes everyone waiting on a change.
    pub fn bump(&self) {
        self.version.send_modify(|v| *v += 1);
    }

    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.version.subscribe()
    }

    /// Sets a status, tells the front ends, and announces `idle` when the whole tree rests.
    pub fn set_status(&self, id: AgentId, status: AgentStatus, reason: Option<String>) {
        let (parent, burst_ended) = {
            let mut agents = self.lock();
            let Some(entry) = agents.get_mut(&id) else {
                return;
            };
            // Cancelled is final: a cancelled wait or approval must not revive the agent.
            if entry.status == status || entry.status == AgentStatus::Cancelled {
                return;
            }
            let old = std::mem::replace(&mut entry.status, status);
            entry.finished = status.is_idle().then(Instant::now);
            if matches!(
                status,
                AgentStatus::Completed | AgentStatus::Inactive | AgentStatus::Failed
            ) && id != self.root
                && !entry.for_squad
            {
                entry.delivered = false;
            }
            let parent = entry.parent;
            agents.count_status(Some(old), status);
            agents.resettle(id);
            // A failed worker is critical news: a supervisor in `wait_for_agents` wakes.
            if status == AgentStatus::Failed
                && let Some(p) = parent.and_then(|p| agents.get_mut(&p))
            {
                p.alarm = true;
            }
            (parent, agents.burst_ended())
        };
        if burst_ended {
            super::memory::release_free_memory();
        }
        self.emit(
            id,
            EventKind::AgentStatus {
                parent_id: parent,
                status,
                reason,
            },
        );
        self.bump();
        if status.is_idle() {
            self.announce_if_idle();
        }
    }

    /// Records why a worker failed (for its supervisor) and marks it failed.
    pub fn fail(&self, id: AgentId, why: String) {
        self.with(id, |a| a.failure = Some(why.clone()));
        self.set_status(id, AgentStatus::Failed, Some(why));
    }

    /// Tells the front ends the whole tree rests, if it does.
    pub fn announce_if_idle(&self) {
        if self.tree_idle() {
            self.emit(self.root, EventKind::Idle);
            super::memory::release_free_memory();
        }
    }

    /// No agent running or waiting, and no input waiting to be taken up.
    pub fn tree_idle(&self) -> bool {
        let agents = self.lock();
        if agents.active > 0 {
            return false;
        }
        // Input queued to a cancelled agent is not work; only then is a walk needed.
        agents.queued == 0 || agents.values().all(|a| !a.is_busy())
    }

    /// Appends to an agent's history and records it in the event stream.
    pub fn push_item(&self, id: AgentId, item: HistoryItem) {
        let added = self.with(id, |a| {
            a.context.push(&item);
            Arc::make_mut(&mut a.history).push(item.clone());
        });
        if added.is_some() {
            self.emit(id, EventKind::ItemAdded { item });
        }
    }

    /// Starts a turn: a fresh turn token (so an interrupt from now on reaches this turn),
    /// then `running`, then the input counts as taken: never a moment that looks idle.
    pub fn begin_turn(&self, id: AgentId, took_input: bool) -> Option<CancellationToken> {
        let token = self.renew_turn_token(id)?;
        self.with(id, |a| a.in_turn = true);
        self.set_status(id, AgentStatus::Running, None);
        if took_input {
            self.take_input(id);
        }
        Some(token)
    }

    /// A fresh turn token for work between turns (`/compact`), so an interrupt reaches it.
    pub fn renew_turn_token(&self, id: AgentId) -> Option<CancellationToken> {
        self.with(id, |a| {
            a.turn_cancel = a.cancel.child_token();
            a.turn_cancel.clone()
        })
    }

    /// Stops the agent's running turn; results owed to it wait for the next message.
    pub fn interrupt(&self, id: AgentId) {
        self.with(id, |a| {
            a.turn_cancel.cancel();
            a.hold = true;
        });
        // Wake it if it rests waiting on workers, so it stops waiting.
        self.bump();
    }

    pub fn is_held(&self, id: AgentId) -> bool {
        self.with(id, |a| a.hold).unwrap_or(false)
    }

    /// Clears the hold; true if there was one.
    pub fn release_hold(&self, id: AgentId) -> bool {
        self.with(id, |a| std::mem::take(&mut a.hold))
            .unwrap_or(false)
    }

    /// Cancels an agent and its descendants; returns how many were stopped.
    pub fn cancel_subtree(&self, id: AgentId, reason: &str) -> usize {
        let ids = self.subtree(id);
        for a in &ids {
            let found = self.with(*a, |e| {
                e.cancel.cancel();
                e.delivered = true;
                (e.parent, e.status == AgentStatus::Cancelled)
            });
            let Some((Some(parent), already)) = found else {
                continue;
            };
            if !already {
                self.set_status(*a, AgentStatus::Cancelled, Some(reason.to_string()));
                self.emit(
                    *a,
                    EventKind::Despawned {
                        parent_id: Some(parent),
                    },
                );
            }
        }
        ids.len()
    }

    /// Cancels everything (the session ends).
    pub fn cancel_all(&self) {
        for a in self.lock().values() {
            a.cancel.cancel();
        }
    }

    /// Stores a worker's validated result; returns its supervisor.
    pub fn set_result(&self, id: AgentId, result: AgentResult) -> Option<AgentId> {
        self.with(id, |a| {
            let mut result = result;
            result.completed_at = Some(Utc::now());
            a.result = Some(result);
            a.parent
        })
        .flatten()
    }

    /// The root takes on another persona; returns the one it had.
    pub fn switch_root(&self, role: String, tools: Vec<String>, model: String) -> String {
        self.with(self.root, |a| {
            a.tools = tools.into();
            a.model = model;
            // Another prompt and tools: the last call's count no longer describes it.
            a.context.forget_measure();
            std::mem::replace(&mut a.role, role)
        })
        .unwrap_or_default()
    }
}

#[cfg(test)]
impl Team {
    /// The kept counts equal a fresh count (for tests).
    fn counts_agree(&self) -> bool {
        let agents = self.lock();
        let active = agents.values().filter(|a| !a.status.is_idle()).count();
        let live = agents
            .values()
            .filter(|a| roster::is_live(a.status))
            .count();
        let queued = agents.values().filter(|a| a.queued > 0).count();
        let free = agents.values().filter(|a| a.frees_slot()).count();
        (agents.active, agents.live, agents.queued, agents.free) == (active, live, queued, free)
    }
}

#[cfg(test)]
mod tests;
