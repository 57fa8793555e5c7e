//! What the screen shows, as data: the agent tree, every agent's conversation, figures
//! and the approval queue. `apply` folds one [`Event`] in; nothing here draws or does I/O,
//! so any sequence of events can be replayed in a test. Time is passed in, never read.

use crate::protocol::{
    AgentId, AgentResult, AgentStatus, AgentSummary, ApprovalAction, ApprovalPolicy, Event,
    EventKind, HistoryItem, SessionTotals, TurnEnd,
};
use crate::tui::handle::SessionInfo;
use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::time::{Duration, Instant};

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
    pub summary: Option<(Vec<AgentSummary>, SessionTotals)>,
    /// Every role the session loaded (from `session_started`).
    pub roles: Vec<String>,
    /// Whether this run continues an earlier session (from `session_started`).
    pub resumed: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PendingApproval {
    pub request_id: u64,
    pub agent_id: AgentId,
    pub role: String,
    pub tool: String,
    pub action: ApprovalAction,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Figures {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cost_usd: f64,
    pub model_calls: u64,
    pub tool_calls: u64,
    pub tool_errors: u64,
    pub errors: u64,
}

impl Figures {
    pub fn tokens(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }

    pub fn add(&mut self, o: &Figures) {
        self.prompt_tokens += o.prompt_tokens;
        self.completion_tokens += o.completion_tokens;
        self.cost_usd += o.cost_usd;
        self.model_calls += o.model_calls;
        self.tool_calls += o.tool_calls;
        self.tool_errors += o.tool_errors;
        self.errors += o.errors;
    }
}

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
    pub despawned: bool,
    pub spawned_at: Instant,
    /// Start of the current stretch of work; cleared when the agent goes idle.
    pub busy_since: Option<Instant>,
    /// When the agent last reached an idle status, for its wall time.
    pub idle_at: Option<Instant>,
    pub figures: Figures,
    pub result: Option<AgentResult>,
    pub conversation: Conversation,
}

impl AgentView {
    fn new(id: AgentId, parent: Option<AgentId>, now: Instant) -> Self {
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
            despawned: false,
            spawned_at: now,
            busy_since: None,
            idle_at: None,
            figures: Figures::default(),
            result: None,
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

    /// How long the current stretch of work has been going on, if any.
    pub fn busy_for(&self, now: Instant) -> Option<Duration> {
        self.busy_since
            .map(|t| now.saturating_duration_since(t))
            .filter(|_| !self.status.is_idle())
    }
}

/// One agent's conversation: durable entries plus the text streaming in right now.
#[derive(Clone, Debug, Default)]
pub struct Conversation {
    pub entries: Vec<Entry>,
    pub streaming: String,
    /// Bumped on every change to `streaming`, so its layout can be cached.
    pub stream_rev: u64,
    tool_index: HashMap<String, usize>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub kind: EntryKind,
    /// Bumped on every change to the entry, so its cached layout knows it is stale.
    pub rev: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub enum EntryKind {
    User(String),
    Assistant(String),
    Tool(ToolEntry),
    Notice(String),
    Handoff {
        from: String,
        to: String,
        reason: String,
    },
    Error(String),
    Retrying {
        attempt: u32,
        max_attempts: u32,
        reason: String,
    },
    Result(AgentResult),
    /// The turn stopped early (interrupted, cancelled, out of iterations).
    TurnStopped(TurnEnd),
}

#[derive(Clone, Debug, PartialEq)]
pub struct ToolEntry {
    pub call_id: String,
    pub name: String,
    pub arguments: String,
    /// `None` while the tool runs.
    pub output: Option<String>,
    pub is_error: bool,
    pub duration_ms: Option<u64>,
    pub expanded: bool,
}

impl Conversation {
    pub fn push(&mut self, kind: EntryKind) {
        if let EntryKind::Tool(t) = &kind {
            self.tool_index
                .insert(t.call_id.clone(), self.entries.len());
        }
        self.entries.push(Entry { kind, rev: 0 });
    }

    fn set_streaming(&mut self, text: String) {
        self.streaming = text;
        self.stream_rev += 1;
    }

    fn tool_mut(&mut self, call_id: &str) -> Option<&mut Entry> {
        let idx = *self.tool_index.get(call_id)?;
        self.entries.get_mut(idx)
    }

    /// Opens the tool call's line, from the assistant item that makes the call.
    fn begin_tool(&mut self, call_id: &str, name: &str, arguments: &str) {
        if self.tool_index.contains_key(call_id) {
            return;
        }
        self.push(EntryKind::Tool(ToolEntry {
            call_id: call_id.to_string(),
            name: name.to_string(),
            arguments: arguments.to_string(),
            output: None,
            is_error: false,
            duration_ms: None,
            expanded: false,
        }));
    }

    /// Fills in a call's result (opening its line if the call was never seen).
    fn end_tool(&mut self, call_id: &str, name: &str, output: &str, is_error: bool) {
        if !self.tool_index.contains_key(call_id) {
            self.begin_tool(call_id, name, "");
        }
        if let Some(e) = self.tool_mut(call_id)
            && let EntryKind::Tool(t) = &mut e.kind
        {
            t.output = Some(output.to_string());
            t.is_error = is_error;
            e.rev += 1;
        }
    }

    /// How long a call ran, from its live `tool_call_end`.
    fn set_tool_duration(&mut self, call_id: &str, duration_ms: u64) {
        if let Some(e) = self.tool_mut(call_id)
            && let EntryKind::Tool(t) = &mut e.kind
        {
            t.duration_ms = Some(duration_ms);
            e.rev += 1;
        }
    }

    /// Flips a tool line between one line and its full arguments and output.
    pub fn toggle_tool(&mut self, idx: usize) -> bool {
        match self.entries.get_mut(idx) {
            Some(Entry {
                kind: EntryKind::Tool(t),
                rev,
            }) => {
                t.expanded = !t.expanded;
                *rev += 1;
                true
            }
            _ => false,
        }
    }
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
            summary: None,
            roles: Vec::new(),
            resumed: false,
        }
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

    /// Folds one event into the state. `now` is when it arrived (elapsed times and wall
    /// times are measured from it, which keeps tests independent of the clock).
    pub fn apply(&mut self, ev: &Event, now: Instant) {
        let id = ev.agent_id;
        match &ev.kind {
            EventKind::SessionStarted {
                session_id,
                workspace,
                model,
                role,
                approval,
                resumed,
                roles,
            } => {
                self.roles = roles.clone();
                self.session_id = session_id.clone();
                self.workspace = workspace.clone();
                self.model = model.clone();
                self.active_role = role.clone();
                self.approval = *approval;
                self.resumed = *resumed;
            }
            EventKind::AgentSpawned {
                parent_id,
                role,
                model,
                task,
                depth,
            } => self.spawn(id, *parent_id, role, model, task, *depth, now),
            EventKind::AgentStatus { status, reason, .. } => {
                let a = self.agent_entry(id, now);
                set_status(a, *status, now);
                a.status_reason = reason.clone();
            }
            EventKind::TurnStarted => {
                let a = self.agent_entry(id, now);
                a.in_turn = true;
                if a.busy_since.is_none() {
                    a.busy_since = Some(now);
                }
            }
            EventKind::TurnFinished { end } => {
                let a = self.agent_entry(id, now);
                a.in_turn = false;
                let conv = &mut a.conversation;
                if !conv.streaming.is_empty() {
                    // Text the model streamed but never committed: keep what was seen.
                    let text = std::mem::take(&mut conv.streaming);
                    conv.stream_rev += 1;
                    conv.push(EntryKind::Assistant(text));
                }
                if matches!(
                    end,
                    TurnEnd::Interrupted | TurnEnd::Cancelled | TurnEnd::MaxIterations
                ) {
                    conv.push(EntryKind::TurnStopped(*end));
                }
            }
            EventKind::ItemAdded { item } => self.add_item(id, item, now),
            EventKind::TextDelta { delta } => {
                let conv = &mut self.agent_entry(id, now).conversation;
                conv.streaming.push_str(delta);
                conv.stream_rev += 1;
            }
            // The call's line comes from the assistant item; the running tool is shown by
            // its missing output until the result item arrives.
            EventKind::ToolCallBegin { .. } => {}
            EventKind::ToolCallEnd {
                call_id,
                duration_ms,
            } => {
                self.agent_entry(id, now)
                    .conversation
                    .set_tool_duration(call_id, *duration_ms);
            }
            EventKind::ApprovalRequested {
                request_id,
                role,
                tool,
                action,
            } => {
                self.agent_entry(id, now);
                if !self.approvals.iter().any(|p| p.request_id == *request_id) {
                    self.approvals.push_back(PendingApproval {
                        request_id: *request_id,
                        agent_id: id,
                        role: role.clone(),
                        tool: tool.clone(),
                        action: action.clone(),
                    });
                }
            }
            EventKind::ApprovalResolved { request_id, .. } => {
                self.resolve_approval(*request_id);
            }
            EventKind::Usage {
                prompt_tokens,
                completion_tokens,
                cost_usd,
                ..
            } => {
                let f = &mut self.agent_entry(id, now).figures;
                f.prompt_tokens += prompt_tokens;
                f.completion_tokens += completion_tokens;
                f.cost_usd += cost_usd;
                f.model_calls += 1;
            }
            EventKind::Retrying {
                attempt,
                max_attempts,
                reason,
                ..
            } => {
                let conv = &mut self.agent_entry(id, now).conversation;
                conv.set_streaming(String::new());
                let kind = EntryKind::Retrying {
                    attempt: *attempt,
                    max_attempts: *max_attempts,
                    reason: reason.clone(),
                };
                // One line per retry streak: a later attempt replaces the earlier line.
                match conv.entries.last_mut() {
                    Some(e) if matches!(e.kind, EntryKind::Retrying { .. }) => {
                        e.kind = kind;
                        e.rev += 1;
                    }
                    _ => conv.push(kind),
                }
            }
            EventKind::Error { message } => {
                let a = self.agent_entry(id, now);
                a.figures.errors += 1;
                a.conversation.push(EntryKind::Error(message.clone()));
            }
            EventKind::ResultReturned { result, .. } => {
                let a = self.agent_entry(id, now);
                a.result = Some(result.clone());
                a.conversation.push(EntryKind::Result(result.clone()));
            }
            EventKind::Despawned { .. } => {
                let a = self.agent_entry(id, now);
                a.despawned = true;
                if !matches!(
                    a.status,
                    AgentStatus::Completed | AgentStatus::Failed | AgentStatus::Cancelled
                ) {
                    set_status(a, AgentStatus::Cancelled, now);
                }
            }
            EventKind::ResultDelivered { .. } => {}
            // Drawn by the results card (issue 8, TUI part): not yet.
            EventKind::Verification(_) => {}
            EventKind::Summary { agents, totals } => {
                self.summary = Some((agents.clone(), totals.clone()));
            }
            // The tree rests; statuses already say so.
            EventKind::Idle => {}
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn spawn(
        &mut self,
        id: AgentId,
        parent: Option<AgentId>,
        role: &str,
        model: &str,
        task: &str,
        depth: u32,
        now: Instant,
    ) {
        let parent = parent.filter(|p| self.agents.contains_key(p) && *p != id);
        let known = self.agents.contains_key(&id);
        let a = self.agent_entry(id, now);
        a.role = role.to_string();
        a.model = model.to_string();
        a.task = task.to_string();
        a.depth = depth;
        if !known {
            a.spawned_at = now;
        }
        if let Some(p) = parent
            && a.parent.is_none()
        {
            a.parent = Some(p);
            self.roots.retain(|r| *r != id);
            if let Some(pa) = self.agents.get_mut(&p) {
                pa.children.push(id);
            }
        }
        if parent.is_none() && id == self.root_agent {
            self.active_role = role.to_string();
        }
        self.tree_rev += 1;
    }

    fn add_item(&mut self, id: AgentId, item: &HistoryItem, now: Instant) {
        if let HistoryItem::Handoff { to, .. } = item
            && id == self.root_agent
        {
            self.active_role = to.clone();
            self.agent_entry(id, now).role = to.clone();
        }
        let a = self.agent_entry(id, now);
        if let HistoryItem::ToolResult { is_error, .. } = item {
            a.figures.tool_calls += 1;
            if *is_error {
                a.figures.tool_errors += 1;
            }
        }
        let conv = &mut a.conversation;
        match item {
            HistoryItem::User { text } => conv.push(EntryKind::User(text.clone())),
            HistoryItem::Assistant { text, tool_calls } => {
                // The committed text supersedes whatever streamed in before it.
                conv.set_streaming(String::new());
                if !text.trim().is_empty() {
                    conv.push(EntryKind::Assistant(text.clone()));
                }
                for c in tool_calls {
                    conv.begin_tool(&c.id, &c.name, &c.arguments);
                }
            }
            HistoryItem::ToolResult {
                call_id,
                name,
                output,
                is_error,
            } => conv.end_tool(call_id, name, output, *is_error),
            HistoryItem::Notice { text } => conv.push(EntryKind::Notice(text.clone())),
            HistoryItem::Handoff {
                from, to, reason, ..
            } => conv.push(EntryKind::Handoff {
                from: from.clone(),
                to: to.clone(),
                reason: reason.clone(),
            }),
        }
    }

    /// Drops a pending approval (answered here, or resolved by the runtime). Idempotent.
    pub fn resolve_approval(&mut self, request_id: u64) -> bool {
        let before = self.approvals.len();
        self.approvals.retain(|p| p.request_id != request_id);
        before != self.approvals.len()
    }

    /// Figures of an agent and all its descendants (for a collapsed subtree).
    pub fn subtree_figures(&self, id: AgentId) -> Figures {
        let mut total = Figures::default();
        let mut stack = vec![id];
        while let Some(n) = stack.pop() {
            if let Some(a) = self.agents.get(&n) {
                total.add(&a.figures);
                stack.extend(a.children.iter().copied());
            }
        }
        total
    }

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

    pub fn totals(&self) -> Figures {
        let mut t = Figures::default();
        for a in self.agents.values() {
            t.add(&a.figures);
        }
        t
    }

    /// Counts per status, for the tree's header line.
    pub fn status_counts(&self) -> [(AgentStatus, usize); 6] {
        let mut counts = [
            (AgentStatus::Running, 0),
            (AgentStatus::Waiting, 0),
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

fn set_status(a: &mut AgentView, status: AgentStatus, now: Instant) {
    if status.is_idle() {
        if !a.status.is_idle() || a.idle_at.is_none() {
            a.idle_at = Some(now);
        }
        a.busy_since = None;
    } else if a.busy_since.is_none() {
        a.busy_since = Some(now);
    }
    a.status = status;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ResultStatus, ToolCall};

    fn info(root: AgentId) -> SessionInfo {
        SessionInfo {
            log_path: None,
            session_id: "s1".into(),
            workspace: "/tmp/w".into(),
            model: "m".into(),
            approval: ApprovalPolicy::Ask,
            role: "copilot".into(),
            root_agent: root,
        }
    }

    fn ev(agent_id: AgentId, kind: EventKind) -> Event {
        Event {
            seq: 0,
            agent_id,
            kind,
        }
    }

    fn spawn(id: AgentId, parent: Option<AgentId>, role: &str) -> Event {
        ev(
            id,
            EventKind::AgentSpawned {
                parent_id: parent,
                role: role.into(),
                model: "m".into(),
                task: "t".into(),
                depth: 0,
            },
        )
    }

    #[test]
    fn assistant_item_replaces_streaming_text() {
        let root = AgentId::new();
        let mut s = SessionState::new(&info(root));
        let t = Instant::now();
        s.apply(&spawn(root, None, "copilot"), t);
        for d in ["Hel", "lo"] {
            s.apply(&ev(root, EventKind::TextDelta { delta: d.into() }), t);
        }
        assert_eq!(s.agents[&root].conversation.streaming, "Hello");
        let item = HistoryItem::Assistant {
            text: "Hello!".into(),
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: "read_file".into(),
                arguments: r#"{"path":"a"}"#.into(),
            }],
        };
        s.apply(&ev(root, EventKind::ItemAdded { item }), t);
        // The begin event for the same call must not open a second line.
        s.apply(
            &ev(
                root,
                EventKind::ToolCallBegin {
                    call_id: "c1".into(),
                },
            ),
            t,
        );
        let conv = &s.agents[&root].conversation;
        assert!(conv.streaming.is_empty());
        assert_eq!(conv.entries.len(), 2);
        assert_eq!(conv.entries[0].kind, EntryKind::Assistant("Hello!".into()));
    }

    #[test]
    fn retry_drops_partial_text_and_keeps_one_line() {
        let root = AgentId::new();
        let mut s = SessionState::new(&info(root));
        let t = Instant::now();
        s.apply(
            &ev(
                root,
                EventKind::TextDelta {
                    delta: "par".into(),
                },
            ),
            t,
        );
        for attempt in [1, 2] {
            s.apply(
                &ev(
                    root,
                    EventKind::Retrying {
                        attempt,
                        max_attempts: 4,
                        delay_ms: 10,
                        reason: "503".into(),
                    },
                ),
                t,
            );
        }
        let conv = &s.agents[&root].conversation;
        assert!(conv.streaming.is_empty());
        assert_eq!(conv.entries.len(), 1);
        assert!(matches!(
            conv.entries[0].kind,
            EntryKind::Retrying { attempt: 2, .. }
        ));
    }

    #[test]
    fn tree_usage_results_and_handoff() {
        let root = AgentId::new();
        let w = AgentId::new();
        let mut s = SessionState::new(&info(root));
        let t = Instant::now();
        s.apply(&spawn(root, None, "copilot"), t);
        s.apply(&spawn(w, Some(root), "coder"), t);
        assert_eq!(s.agents[&root].children, vec![w]);
        assert_eq!(s.roots, vec![root]);
        for _ in 0..2 {
            s.apply(
                &ev(
                    w,
                    EventKind::Usage {
                        model: "m".into(),
                        prompt_tokens: 100,
                        completion_tokens: 10,
                        cost_usd: 0.5,
                    },
                ),
                t,
            );
        }
        assert_eq!(s.agents[&w].figures.tokens(), 220);
        assert_eq!(s.subtree_figures(root).model_calls, 2);
        s.apply(
            &ev(
                w,
                EventKind::ResultReturned {
                    parent_id: Some(root),
                    result: AgentResult {
                        status: ResultStatus::Success,
                        summary: "ok".into(),
                        artifacts: vec![],
                        known_issues: vec![],
                        verification: None,
                    },
                },
            ),
            t,
        );
        assert!(s.agents[&w].result.is_some());
        let item = HistoryItem::Handoff {
            from: "copilot".into(),
            to: "architect".into(),
            reason: "design".into(),
            context: String::new(),
        };
        s.apply(&ev(root, EventKind::ItemAdded { item }), t);
        assert_eq!(s.active_role, "architect");
        assert_eq!(s.agents[&root].role, "architect");
        assert_eq!(s.agents[&root].conversation.entries.len(), 1);
    }

    #[test]
    fn approvals_queue_and_resolve() {
        let root = AgentId::new();
        let mut s = SessionState::new(&info(root));
        let t = Instant::now();
        for id in [7, 8, 7] {
            s.apply(
                &ev(
                    root,
                    EventKind::ApprovalRequested {
                        request_id: id,
                        role: "copilot".into(),
                        tool: "shell".into(),
                        action: ApprovalAction::Command {
                            command: "ls".into(),
                        },
                    },
                ),
                t,
            );
        }
        assert_eq!(s.approvals.len(), 2);
        s.apply(
            &ev(
                root,
                EventKind::ApprovalResolved {
                    request_id: 7,
                    decision: crate::protocol::ApprovalDecision::Deny,
                },
            ),
            t,
        );
        assert_eq!(s.approvals.front().map(|p| p.request_id), Some(8));
    }

    #[test]
    fn elapsed_comes_from_the_injected_clock() {
        let root = AgentId::new();
        let mut s = SessionState::new(&info(root));
        let t0 = Instant::now();
        s.apply(&spawn(root, None, "copilot"), t0);
        s.apply(
            &ev(
                root,
                EventKind::AgentStatus {
                    parent_id: None,
                    status: AgentStatus::Running,
                    reason: None,
                },
            ),
            t0 + Duration::from_secs(5),
        );
        let a = &s.agents[&root];
        assert_eq!(
            a.busy_for(t0 + Duration::from_secs(65)),
            Some(Duration::from_secs(60))
        );
        s.apply(
            &ev(
                root,
                EventKind::AgentStatus {
                    parent_id: None,
                    status: AgentStatus::Inactive,
                    reason: None,
                },
            ),
            t0 + Duration::from_secs(70),
        );
        let a = &s.agents[&root];
        assert_eq!(a.busy_for(t0 + Duration::from_secs(99)), None);
        assert_eq!(
            a.wall_time(t0 + Duration::from_secs(99)),
            Duration::from_secs(70)
        );
    }

    #[test]
    fn role_completion_knows_every_loaded_role() {
        let root = AgentId::new();
        let mut s = SessionState::new(&info(root));
        s.apply(
            &ev(
                root,
                EventKind::SessionStarted {
                    session_id: "s1".into(),
                    workspace: "/tmp/w".into(),
                    model: "m".into(),
                    role: "copilot".into(),
                    approval: ApprovalPolicy::Ask,
                    resumed: false,
                    roles: vec!["copilot".into(), "documentation".into(), "tester".into()],
                },
            ),
            Instant::now(),
        );
        let roles = s.known_roles();
        assert!(roles.contains(&"documentation".to_string()), "{roles:?}");
        assert!(roles.contains(&"tester".to_string()), "{roles:?}");
    }
}
