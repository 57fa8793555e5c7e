//! What the screen shows, as data: the agent tree, every agent's conversation, figures
//! and the dialogs waiting for the user. `apply` folds one [`Event`] in; nothing here draws or does I/O,
//! so any sequence of events can be replayed in a test. Time is passed in, never read.
//!
//! `fold.rs` folds the events: one exhaustive match that hands each kind to its concern.
//! `session.rs` is the session's settings, `agents.rs` an agent's view and the tree's
//! queries, `items.rs` what a spawn and a history item add, `turns.rs` an agent's turn,
//! `outcomes.rs` its result, verdicts and end, `conversation.rs` its entries, `figures.rs`
//! tokens, cost and counts, `dialogs.rs` approvals and questions, `plans.rs` plans awaiting approval, `mail.rs` who messaged whom, `control.rs` the team's
//! pause, budget and stop, `goal.rs` the goal, `batch.rs` a batch's progress, `worktrees.rs` worktrees and merges,
//! `review.rs` the review, `taken_back.rs` rewinds and undos, `timeline.rs` what each agent
//! did when.

use crate::protocol::{
    AgentId, AgentSummary, ApprovalPolicy, HistoryItem, McpServerState, SessionTotals, TaskList,
    TaskTally,
};
use crate::tui::handle::SessionInfo;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::time::Instant;

mod agents;
mod batch;
mod control;
mod conversation;
mod dialogs;
mod figures;
mod fold;
mod goal;
mod items;
mod mail;
mod outcomes;
mod plans;
mod review;
mod said;
mod session;
mod taken_back;
mod timeline;
mod turns;
mod worktrees;

pub use agents::{AgentView, Stall};
pub use conversation::{Conversation, Entry, EntryKind, ToolEntry};
pub use dialogs::{Dialog, PendingApproval, PendingQuestion};
pub use figures::Figures;
pub use plans::PendingPlan;
pub use review::ReviewView;
pub use said::UserEntry;
pub use timeline::{Activity, Timeline};

#[derive(Clone, Debug)]
pub struct SessionState {
    pub session_id: String,
    pub workspace: PathBuf,
    pub model: String,
    pub approval: ApprovalPolicy,
    /// The persona that receives messages sent with `to: None`.
    pub active_role: String,
    pub root_agent: AgentId,
    pub agents: HashMap<AgentId, AgentView>,
    /// Agents without a (known) parent, in order of appearance.
    pub roots: Vec<AgentId>,
    /// Bumped whenever the tree's shape changes, so cached flattenings know to rebuild.
    pub tree_rev: u64,
    /// Pending approvals, oldest first; the dialog shows the front one.
    pub approvals: VecDeque<PendingApproval>,
    /// Agents' questions to the user, oldest first; they take turns with approvals.
    pub questions: VecDeque<PendingQuestion>,
    pub summary: Option<(Vec<AgentSummary>, SessionTotals)>,
    /// Every role the session loaded (from `session_started`).
    pub roles: Vec<String>,
    /// Whether this run continues an earlier session (from `session_started`).
    pub resumed: bool,
    /// Task figures, folded from the same events the runtime counts them from.
    pub tasks: TaskTally,
    /// Spend, quotes and waste, folded the same way (`/cost`'s waste report).
    pub spend: crate::protocol::SpendTally,
    /// The project instruction files given to the agents (`AGENTS.md`), if any.
    pub instructions: Option<String>,
    /// Events up to this `seq` are the log of a resumed session, read back in a burst:
    /// they tell what happened, but open no dialog and raise no notice.
    replayed_seq: u64,
    /// MCP servers by name, as their last `mcp_server` event left them.
    pub mcp: BTreeMap<String, McpView>,
    /// The user has the team paused (`paused` / `resumed` events).
    pub paused: bool,
    /// The task board, as the last `task_updated` of each task left it (replayed ones
    /// included, so a resumed session shows its board).
    pub board: TaskList,
    /// What each agent did when, stamped as events arrive.
    pub timeline: Timeline,
    /// The session's budget holds the team: `(spent, limit)` in US dollars, until the
    /// user raises it (`/budget`), goes on or stops.
    pub budget_hold: Option<(f64, f64)>,
    /// The last diff the runtime sent (`d` on a worker): whose, and the text.
    pub diff: Option<(AgentId, String)>,
    /// Merge conflicts so far, so the front end can raise a notice for a new one.
    pub conflicts: u64,
    /// The last `/review`, under way or finished.
    pub review: Option<ReviewView>,
    /// The user's goal as its events left it (`goal.rs`).
    pub goal: crate::protocol::GoalTrack,
    /// The server's models as the core last listed them (`/model`), or why it could not.
    pub models: Option<Result<Vec<String>, String>>,
    /// The last batch's key and progress, while it runs (`batch.rs`).
    pub batch: Option<(String, crate::protocol::BatchProgress)>,
    /// Workers' plans awaiting approval, oldest first; they take turns with the other
    /// dialogs (`plans.rs`).
    pub plans: VecDeque<PendingPlan>,
    /// The persona coordinates only (`/lead`): shown in the status bar.
    pub coordinate_only: bool,
}

/// One MCP server, for the status bar and `/mcp`.
#[derive(Clone, Debug, PartialEq)]
pub struct McpView {
    pub state: McpServerState,
    pub transport: String,
    pub tools: Vec<String>,
    pub error: Option<String>,
}

impl SessionState {
    pub fn new(info: &SessionInfo) -> Self {
        Self {
            session_id: info.session_id.clone(),
            workspace: info.workspace.clone(),
            model: info.model.clone(),
            approval: info.approval,
            active_role: info.role.clone(),
            root_agent: info.root_agent,
            agents: HashMap::new(),
            roots: Vec::new(),
            tree_rev: 0,
            approvals: VecDeque::new(),
            questions: VecDeque::new(),
            summary: None,
            roles: Vec::new(),
            resumed: false,
            tasks: TaskTally::default(),
            spend: Default::default(),
            instructions: None,
            replayed_seq: info.replayed_seq,
            mcp: BTreeMap::new(),
            paused: false,
            board: TaskList::default(),
            timeline: Timeline::default(),
            budget_hold: None,
            diff: None,
            conflicts: 0,
            review: None,
            goal: Default::default(),
            models: None,
            batch: None,
            plans: VecDeque::new(),
            coordinate_only: false,
        }
    }

    /// Whether part of what is shown was read back from a resumed session's log.
    pub fn has_replayed(&self) -> bool {
        self.replayed_seq > 0
    }

    /// The last `seq` read back from a resumed session's log (0 for a new session).
    pub fn replayed_seq(&self) -> u64 {
        self.replayed_seq
    }

    pub fn agent(&self, id: AgentId) -> Option<&AgentView> {
        self.agents.get(&id)
    }

    /// The agent an event names, created on the fly if its `agent_spawned` never came
    /// (e.g. a log replayed from the middle): nothing the runtime says is dropped.
    fn agent_entry(&mut self, id: AgentId, now: Instant) -> &mut AgentView {
        let mut created = false;
        let root_role = (id == self.root_agent).then(|| self.active_role.clone());
        let a = self.agents.entry(id).or_insert_with(|| {
            created = true;
            let mut a = AgentView::new(id, None, now);
            if let Some(r) = root_role {
                a.role = r;
            }
            a
        });
        if created {
            self.roots.push(id);
            self.tree_rev += 1;
        }
        a
    }
}

#[cfg(test)]
mod tests;
