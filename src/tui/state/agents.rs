//! One agent as the screen knows it (place in the tree, status and its clock, figures,
//! result, conversation), and the questions asked of the tree as a whole.

use super::{Conversation, Figures, SessionState};
use crate::protocol::{
    AgentId, AgentResult, AgentStatus, Budget, DiffStat, MergeState, SpawnOptions, Verdict,
};
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct AgentView {
    pub id: AgentId,
    pub parent: Option<AgentId>,
    pub children: Vec<AgentId>,
    pub role: String,
    pub model: String,
    pub task: String,
    pub depth: u32,
    pub status: AgentStatus,
    pub status_reason: Option<String>,
    pub in_turn: bool,
    /// Messages sent to it mid-turn, not yet taken up (`message_queued`).
    pub queued: Vec<String>,
    pub despawned: bool,
    /// Released after its result was delivered: it takes no more messages; its history
    /// stays here for reading.
    pub released: bool,
    /// What its spawn asked beyond its role (kept, instructions, narrowed tools).
    pub options: SpawnOptions,
    pub spawned_at: Instant,
    /// Start of the current stretch of work; cleared when the agent goes idle.
    pub busy_since: Option<Instant>,
    /// When the agent last reached an idle status, for its wall time.
    pub idle_at: Option<Instant>,
    pub figures: Figures,
    /// How full its context window is: `(tokens, window)` after its last call or
    /// compaction, once known.
    pub context: Option<(u64, u64)>,
    /// What it may spend (`agent_budget`); unlimited unless told.
    pub budget: Budget,
    /// The sandbox its commands run in (`agent_sandbox`), once told.
    pub sandbox: Option<String>,
    pub result: Option<AgentResult>,
    /// Every check of its results, in order (the details overlay lists them).
    pub verdicts: Vec<Verdict>,
    /// In a correction round: `(attempt that failed, corrections allowed)`.
    pub correcting: Option<(u32, u32)>,
    /// Its model or tool call has made no progress for a while (`stalled`).
    pub stalled: Option<Stall>,
    /// Its own worktree, while it has one (`worktree_created` … `worktree_removed`).
    pub worktree: Option<std::path::PathBuf>,
    /// The size of its change in its worktree (`diff_stat`).
    pub diff: Option<DiffStat>,
    /// Where that change stands: pending, merged into the workspace, or in conflict.
    pub merge: Option<MergeState>,
    pub conversation: Conversation,
}

/// What a stalled agent is stuck on, and since when.
#[derive(Clone, Debug, PartialEq)]
pub struct Stall {
    /// `model call`, or `tool call NAME ARGUMENT`.
    pub on: String,
    /// When its call last made progress.
    pub since: Instant,
}

impl AgentView {
    pub(super) fn new(id: AgentId, parent: Option<AgentId>, now: Instant) -> Self {
        Self {
            id,
            parent,
            children: Vec::new(),
            role: "?".into(),
            model: String::new(),
            task: String::new(),
            depth: 0,
            status: AgentStatus::Inactive,
            status_reason: None,
            in_turn: false,
            queued: Vec::new(),
            despawned: false,
            released: false,
            options: SpawnOptions::default(),
            spawned_at: now,
            busy_since: None,
            idle_at: None,
            figures: Figures::default(),
            context: None,
            budget: Budget::default(),
            sandbox: None,
            result: None,
            verdicts: Vec::new(),
            correcting: None,
            stalled: None,
            worktree: None,
            diff: None,
            merge: None,
            conversation: Conversation::default(),
        }
    }

    /// Wall time from spawn to now, or to the moment the agent last went idle.
    pub fn wall_time(&self, now: Instant) -> Duration {
        let end = if self.status.is_idle() {
            self.idle_at.unwrap_or(now)
        } else {
            now
        };
        end.saturating_duration_since(self.spawned_at)
    }

    /// Context fill in percent, once a call or a compaction has told it.
    pub fn context_percent(&self) -> Option<u64> {
        self.context
            .filter(|(_, w)| *w > 0)
            .map(|(t, w)| (t.saturating_mul(100) / w).min(999))
    }

    /// What tells it apart from workers of its role: the name its supervisor gave it, else
    /// its task on one line.
    pub fn label(&self) -> String {
        match &self.options.name {
            Some(name) => name.clone(),
            None => crate::text::one_line(&self.task),
        }
    }

    /// `implementer 3941221a`, and its name when its supervisor gave one
    /// (`implementer 3941221a parser fix`): how approvals and titles name it.
    pub fn who(&self) -> String {
        match &self.options.name {
            Some(name) => format!("{} {} {name}", self.role, self.id.short()),
            None => format!("{} {}", self.role, self.id.short()),
        }
    }

    /// How long the current stretch of work has been going on, if any.
    pub fn busy_for(&self, now: Instant) -> Option<Duration> {
        self.busy_since
            .map(|t| now.saturating_duration_since(t))
            .filter(|_| !self.status.is_idle())
    }
}

impl SessionState {
    /// Number of descendants of an agent.
    pub fn descendants(&self, id: AgentId) -> usize {
        let mut n = 0;
        let mut stack: Vec<AgentId> = self
            .agents
            .get(&id)
            .map(|a| a.children.clone())
            .unwrap_or_default();
        while let Some(c) = stack.pop() {
            n += 1;
            if let Some(a) = self.agents.get(&c) {
                stack.extend(a.children.iter().copied());
            }
        }
        n
    }

    /// Counts per status, for the tree's header line.
    pub fn status_counts(&self) -> [(AgentStatus, usize); 8] {
        let mut counts = [
            (AgentStatus::Running, 0),
            (AgentStatus::Waiting, 0),
            (AgentStatus::Paused, 0),
            (AgentStatus::Interrupted, 0),
            (AgentStatus::Inactive, 0),
            (AgentStatus::Completed, 0),
            (AgentStatus::Failed, 0),
            (AgentStatus::Cancelled, 0),
        ];
        for a in self.agents.values() {
            if let Some(c) = counts.iter_mut().find(|(s, _)| *s == a.status) {
                c.1 += 1;
            }
        }
        counts
    }

    /// Every agent, depth first in spawn order (the tree's order, nothing collapsed).
    pub fn tree_order(&self) -> Vec<AgentId> {
        let mut out = Vec::with_capacity(self.agents.len());
        let mut stack: Vec<AgentId> = self.roots.iter().rev().copied().collect();
        while let Some(id) = stack.pop() {
            if let Some(a) = self.agents.get(&id) {
                out.push(id);
                stack.extend(a.children.iter().rev().copied());
            }
        }
        out
    }

    /// Whether the agent has work under way (a turn, a tool, workers to wait for).
    /// Workers (not the persona) with work under way.
    pub fn busy_workers(&self) -> usize {
        self.agents
            .values()
            .filter(|a| a.id != self.root_agent && !a.status.is_idle())
            .count()
    }

    pub fn is_busy(&self, id: AgentId) -> bool {
        self.agents
            .get(&id)
            .is_some_and(|a| a.in_turn || !a.status.is_idle())
    }

    /// Roles loaded or seen in this session, for `/role` completion.
    pub fn known_roles(&self) -> Vec<String> {
        let mut roles: Vec<String> = self.agents.values().map(|a| a.role.clone()).collect();
        roles.extend(self.roles.iter().cloned());
        roles.push(self.active_role.clone());
        roles.sort();
        roles.dedup();
        roles
    }
}

pub(super) fn set_status(a: &mut AgentView, status: AgentStatus, now: Instant) {
    if status.is_idle() {
        a.correcting = None;
        a.stalled = None;
        if !a.status.is_idle() || a.idle_at.is_none() {
            a.idle_at = Some(now);
        }
        a.busy_since = None;
    } else if a.busy_since.is_none() {
        a.busy_since = Some(now);
    }
    a.status = status;
}
