use crate::protocol::{
    AgentId, AgentResult, AgentStatus, Budget, Event, EventKind, HistoryItem, MessageKind,
    SpawnOptions, Task,
};
use std::collections::HashMap;
use std::path::PathBuf;

/// What a log says about one agent, enough to carry on with it.
#[derive(Clone, Debug)]
pub struct ReplayedAgent {
    pub id: AgentId,
    pub parent_id: Option<AgentId>,
    pub role: String,
    pub model: String,
    pub task: String,
    pub depth: u32,
    pub status: AgentStatus,
    pub history: Vec<HistoryItem>,
    pub result: Option<AgentResult>,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cost_usd: f64,
    /// What it may spend (`agent_budget`).
    pub budget: Budget,
    /// What its spawn asked beyond its role (`agent_options`).
    pub options: SpawnOptions,
    /// Released after its outcome was delivered (`released`): it only sits in the tree.
    pub released: bool,
    /// Whether its latest outcome reached its supervisor (`result_delivered`); one that
    /// finished, or was cut off, without it is still owed.
    pub delivered: bool,
    /// Results checked for its current task (`verification` events since its last
    /// accepted result), so a resumed worker keeps its count of corrections.
    pub attempts: u32,
    /// Whether its last task is settled (result accepted or delivered as failed checks).
    pub task_closed: bool,
    /// The latest `verification` not yet joined to a `result_returned`.
    pub verdict: Option<crate::protocol::Verdict>,
    /// Its workers' messages (`supervisor_message`) it had not been given
    /// (`inbox_delivered`) when the log ended: they are still owed, like outcomes.
    pub messages: Vec<PendingMessage>,
    /// A `/review` reviewer: its outcome went to squad, never to its supervisor.
    pub for_squad: bool,
    /// Teammates' messages to it (`agent_message`) not yet delivered
    /// (`agent_messages_delivered`) when the log ended: delivered at its next model call.
    pub mail: Vec<PendingMail>,
    /// A placed worker's far side as its last `far_side` left it.
    pub far_side: Option<crate::protocol::FarSide>,
}

/// A teammate's message, as the log recorded it.
#[derive(Clone, Debug, PartialEq)]
pub struct PendingMail {
    pub id: u64,
    pub from: AgentId,
    pub text: String,
}

/// A worker's message to its supervisor, as the log recorded it.
#[derive(Clone, Debug, PartialEq)]
pub struct PendingMessage {
    pub from: AgentId,
    pub kind: MessageKind,
    pub text: String,
}

/// A session rebuilt from its log.
#[derive(Clone, Debug)]
pub struct ReplayedSession {
    pub session_id: String,
    pub workspace: Option<PathBuf>,
    pub root: AgentId,
    /// The persona the user talks to; survives handoffs and resumes.
    pub active_role: String,
    /// Agents in the order they were spawned (root first).
    pub agents: Vec<ReplayedAgent>,
    /// The task board as its last `task_updated` events left it, in plan order.
    pub tasks: Vec<Task>,
    pub last_seq: u64,
    /// The team was paused when the log ended: it comes back paused.
    pub paused: bool,
    /// The session's cost limit the user last set (`session_budget_set`), if they did.
    pub session_budget: Option<Option<f64>>,
    /// The persona's model the user last chose (`model_set`), if they did.
    pub model_choice: Option<String>,
    /// The approval policy the user last chose (`approval_set`), if they did.
    pub approval: Option<crate::protocol::ApprovalPolicy>,
    /// The user's goal as its `goal_*` events left it: an active one goes on.
    pub goal: crate::protocol::GoalTrack,
    /// Each batch's rows as their `batch` events left them (`--continue` runs the rest).
    pub batches: crate::protocol::BatchLedger,
    /// Workers' plans as `plan_*` events left them (one awaiting is still awaiting).
    pub plans: HashMap<AgentId, crate::protocol::PlanState>,
    /// The persona coordinates only (`coordinate_only`'s last word).
    pub coordinate_only: bool,
    /// The highest teammates' message id on record, so ids stay unique after a resume.
    pub last_mail_id: u64,
    /// Running tasks whose worker returned its result after taking them, the log ending
    /// before the board heard of it (killed between the result and its turn's end):
    /// (task, worker). The resumed board finishes them as the result says.
    pub returned: Vec<(String, AgentId)>,
}

/// Rebuilds the session's agents and histories from its events. `None` if the log has no
/// root agent (an empty or foreign file).
pub fn replay(events: &[Event]) -> Option<ReplayedSession> {
    let mut session_id = None;
    let mut workspace = None;
    let mut root = None;
    let mut active_role = None;
    let mut order: Vec<AgentId> = Vec::new();
    let mut agents: HashMap<AgentId, ReplayedAgent> = HashMap::new();
    let mut last_seq = 0;
    let mut paused = false;
    let mut session_budget = None;
    let (mut model_choice, mut approval) = (None, None);
    let mut goal = crate::protocol::GoalTrack::default();
    let mut tasks: Vec<Task> = Vec::new();
    let mut batches = crate::protocol::BatchLedger::default();
    let mut plans = HashMap::new();
    let mut coordinate_only = false;
    let mut last_mail_id = 0;
    let mut returns = Returns::default();

    for ev in events {
        last_seq = last_seq.max(ev.seq);
        returns.fold(ev);
        match &ev.kind {
            EventKind::SessionStarted {
                session_id: id,
                workspace: w,
                ..
            } => {
                session_id.get_or_insert_with(|| id.clone());
                workspace.get_or_insert_with(|| w.clone());
            }
            EventKind::AgentSpawned {
                parent_id,
                role,
                model,
                task,
                depth,
            } => {
                if parent_id.is_none() && root.is_none() {
                    root = Some(ev.agent_id);
                    active_role = Some(role.clone());
                }
                if let std::collections::hash_map::Entry::Vacant(slot) = agents.entry(ev.agent_id) {
                    order.push(ev.agent_id);
                    slot.insert(ReplayedAgent {
                        id: ev.agent_id,
                        parent_id: *parent_id,
                        role: role.clone(),
                        model: model.clone(),
                        task: task.clone(),
                        depth: *depth,
                        status: AgentStatus::Inactive,
                        history: Vec::new(),
                        result: None,
                        prompt_tokens: 0,
                        completion_tokens: 0,
                        cost_usd: 0.0,
                        budget: Budget::default(),
                        options: SpawnOptions::default(),
                        released: false,
                        // A worker owes its supervisor an outcome from the start.
                        delivered: parent_id.is_none(),
                        attempts: 0,
                        task_closed: false,
                        verdict: None,
                        messages: Vec::new(),
                        for_squad: false,
                        mail: Vec::new(),
                        far_side: None,
                    });
                }
            }
            EventKind::SupervisorMessage {
                supervisor_id,
                kind,
                text,
            } => {
                if let Some(supervisor) = agents.get_mut(supervisor_id) {
                    supervisor.messages.push(PendingMessage {
                        from: ev.agent_id,
                        kind: *kind,
                        text: text.clone(),
                    });
                }
            }
            EventKind::AgentMessage {
                to,
                message_id,
                text,
            } => {
                last_mail_id = last_mail_id.max(*message_id);
                if let Some(recipient) = agents.get_mut(to) {
                    recipient.mail.push(PendingMail {
                        id: *message_id,
                        from: ev.agent_id,
                        text: text.clone(),
                    });
                }
            }
            EventKind::ReviewStarted { reviewers, .. } => {
                for r in reviewers {
                    if let Some(a) = agents.get_mut(r) {
                        a.for_squad = true;
                    }
                }
            }
            EventKind::PlanSubmitted(_) | EventKind::PlanDecided(_) => {
                let prior = plans.get(&ev.agent_id);
                if let Some(state) = crate::protocol::PlanState::after(prior, &ev.kind) {
                    plans.insert(ev.agent_id, state);
                }
            }
            EventKind::CoordinateOnly { on } => coordinate_only = *on,
            EventKind::Paused => paused = true,
            EventKind::SessionBudgetSet { limit_usd } => session_budget = Some(*limit_usd),
            EventKind::ModelSet { model } => model_choice = Some(model.clone()),
            EventKind::ApprovalSet { approval: a } => approval = Some(*a),
            EventKind::GoalSet { goal: g, spent_usd } => goal.set(g, *spent_usd),
            EventKind::GoalChecked(check) => goal.checked(check),
            EventKind::GoalEnded { reason } => goal.end(*reason),
            EventKind::Resumed | EventKind::Stopped { .. } => paused = false,
            EventKind::TaskUpdated { task } => match tasks.iter_mut().find(|t| t.id == task.id) {
                Some(slot) => *slot = task.clone(),
                None => tasks.push(task.clone()),
            },
            // An agent's own record (folded by `ReplayedAgent::fold` below), or nothing a
            // resumed session needs.
            EventKind::AgentBudget { .. }
            | EventKind::AgentSandbox { .. }
            | EventKind::AgentOptions(_)
            | EventKind::FarSide(_)
            | EventKind::AgentStatus { .. }
            | EventKind::TurnStarted
            | EventKind::TurnFinished { .. }
            | EventKind::ItemAdded { .. }
            | EventKind::AgentMessagesDelivered { .. }
            | EventKind::TextDelta { .. }
            | EventKind::ToolCallBegin { .. }
            | EventKind::ToolCallEnd { .. }
            | EventKind::ApprovalRequested { .. }
            | EventKind::ApprovalResolved { .. }
            | EventKind::ApprovalUnanswered { .. }
            | EventKind::QuestionAsked { .. }
            | EventKind::QuestionAnswered { .. }
            | EventKind::Usage { .. }
            | EventKind::Compacted { .. }
            | EventKind::InstructionsLoaded { .. }
            | EventKind::Retrying { .. }
            | EventKind::Stalled { .. }
            | EventKind::Unstalled
            | EventKind::Error { .. }
            | EventKind::Notice { .. }
            | EventKind::HookRan { .. }
            | EventKind::ResultReturned { .. }
            | EventKind::MergeReport(_)
            | EventKind::Verification(_)
            | EventKind::ResultDelivered { .. }
            | EventKind::Despawned { .. }
            | EventKind::Released
            | EventKind::RoleSaved { .. }
            | EventKind::InboxDelivered { .. }
            | EventKind::McpServer { .. }
            | EventKind::MessageQueued { .. }
            | EventKind::DeadlockDetected { .. }
            | EventKind::BudgetReached { .. }
            | EventKind::StaleWorktreesRemoved { .. }
            | EventKind::WorktreeCreated { .. }
            | EventKind::DiffStat(_)
            | EventKind::Merged { .. }
            | EventKind::MergeUndone { .. }
            | EventKind::UndoRefused { .. }
            | EventKind::MergeConflict { .. }
            | EventKind::WorktreeRemoved { .. }
            | EventKind::Diff { .. }
            | EventKind::Idle
            | EventKind::Summary { .. }
            | EventKind::Quote(_)
            | EventKind::CheckpointStarted { .. }
            | EventKind::CheckpointTaken { .. }
            | EventKind::Rewound { .. }
            | EventKind::Checkpoints { .. }
            | EventKind::RewindRefused { .. }
            | EventKind::Files { .. }
            | EventKind::Models { .. }
            | EventKind::ReviewFinished { .. } => {}
            EventKind::Batch(update) => batches.fold(update),
        }
        if let Some(agent) = agents.get_mut(&ev.agent_id)
            && let Some(role) = agent.fold(&ev.kind, Some(ev.agent_id) == root)
        {
            active_role = Some(role);
        }
    }

    let root = root?;
    // Work that was under way when the process ended did not finish: the agent rests
    // `interrupted` until the user continues it; what a worker had said by then is owed to
    // its supervisor.
    for agent in agents.values_mut() {
        if agent.id != root {
            owe_unstarted_task(agent);
            task_first(agent);
        }
        if !agent.status.is_idle() {
            agent.status = AgentStatus::Interrupted;
        }
        if agent.status == AgentStatus::Interrupted && agent.id != root {
            agent.delivered = false;
        }
        close_open_calls(&mut agent.history);
    }
    Some(ReplayedSession {
        session_id: session_id.unwrap_or_default(),
        workspace,
        root,
        active_role: active_role.unwrap_or_default(),
        agents: order
            .into_iter()
            .filter_map(|id| agents.remove(&id))
            .collect(),
        tasks,
        last_seq,
        paused,
        session_budget,
        model_choice,
        approval,
        goal,
        batches,
        plans,
        coordinate_only,
        last_mail_id,
        returned: returns.returned,
    })
}

/// Which worker returned a result while it held a running task that the log never shows
/// finished after.
#[derive(Default)]
struct Returns {
    /// Worker → the running task it holds.
    holding: HashMap<AgentId, String>,
    returned: Vec<(String, AgentId)>,
}

impl Returns {
    fn fold(&mut self, ev: &Event) {
        if let EventKind::TaskUpdated { task } = &ev.kind {
            self.returned.retain(|(t, _)| *t != task.id);
            self.holding.retain(|_, t| *t != task.id);
            if let (crate::protocol::TaskStatus::Running, Some(a)) = (task.status, task.assignee) {
                self.holding.insert(a, task.id.clone());
            }
        } else if let EventKind::ResultReturned { .. } = &ev.kind
            && let Some(task) = self.holding.remove(&ev.agent_id)
        {
            self.returned.push((task, ev.agent_id));
        }
    }
}

impl ReplayedAgent {
    /// Folds one event of its own into the agent. Returns the persona's new role when it
    /// is the root's handoff.
    fn fold(&mut self, kind: &EventKind, is_root: bool) -> Option<String> {
        let mut role = None;
        match kind {
            EventKind::AgentStatus { status, .. } => {
                self.status = *status;
                if finished(*status) && !is_root {
                    self.delivered = false;
                }
            }
            EventKind::ResultDelivered { .. } => self.delivered = true,
            EventKind::AgentBudget { budget } => self.budget = *budget,
            EventKind::AgentOptions(options) => self.options = options.clone(),
            EventKind::FarSide(far) => self.far_side = Some(far.clone()),
            EventKind::Released => self.released = true,
            EventKind::InboxDelivered { .. } => self.messages.clear(),
            EventKind::Verification(v) => {
                self.attempts = v.attempt;
                self.task_closed = false;
                self.verdict = Some(v.clone());
            }
            EventKind::MergeReport(report) => {
                if let Some(r) = &mut self.result {
                    r.merge = Some(report.clone());
                }
            }
            EventKind::ItemAdded { item } => {
                // The handoff item is the one record of a persona switch.
                if let (true, HistoryItem::Handoff { to, .. }) = (is_root, item) {
                    self.role = to.clone();
                    role = Some(to.clone());
                }
                self.history.push(item.clone());
            }
            EventKind::AgentMessagesDelivered { message_ids, item } => {
                self.mail.retain(|m| !message_ids.contains(&m.id));
                self.history.push(item.clone());
            }
            // The compacted conversation replaces the items before it.
            EventKind::Compacted { history, .. } => self.history = history.clone(),
            EventKind::Rewound {
                history: Some(history),
                ..
            } => self.history = history.clone(),
            EventKind::ResultReturned { result, .. } => {
                let mut result = result.clone();
                // The verdict told just before belongs to this result.
                result.verification = self.verdict.take().or(result.verification);
                self.result = Some(result);
                self.task_closed = true;
            }
            EventKind::Usage {
                prompt_tokens,
                completion_tokens,
                cost_usd,
                ..
            } => {
                self.prompt_tokens += prompt_tokens;
                self.completion_tokens += completion_tokens;
                self.cost_usd += cost_usd;
            }
            EventKind::Despawned { .. } => {
                self.status = AgentStatus::Cancelled;
                self.delivered = true;
            }
            // The session's (folded by `replay`), or nothing a resumed agent needs.
            EventKind::SessionStarted { .. }
            | EventKind::AgentSpawned { .. }
            | EventKind::AgentSandbox { .. }
            | EventKind::TurnStarted
            | EventKind::TurnFinished { .. }
            | EventKind::TextDelta { .. }
            | EventKind::ToolCallBegin { .. }
            | EventKind::ToolCallEnd { .. }
            | EventKind::ApprovalRequested { .. }
            | EventKind::ApprovalResolved { .. }
            | EventKind::ApprovalUnanswered { .. }
            | EventKind::QuestionAsked { .. }
            | EventKind::QuestionAnswered { .. }
            | EventKind::InstructionsLoaded { .. }
            | EventKind::Retrying { .. }
            | EventKind::Stalled { .. }
            | EventKind::Unstalled
            | EventKind::Error { .. }
            | EventKind::Notice { .. }
            | EventKind::HookRan { .. }
            | EventKind::RoleSaved { .. }
            | EventKind::SupervisorMessage { .. }
            | EventKind::AgentMessage { .. }
            | EventKind::PlanSubmitted(_)
            | EventKind::PlanDecided(_)
            | EventKind::CoordinateOnly { .. }
            | EventKind::McpServer { .. }
            | EventKind::TaskUpdated { .. }
            | EventKind::MessageQueued { .. }
            | EventKind::Paused
            | EventKind::Resumed
            | EventKind::Stopped { .. }
            | EventKind::DeadlockDetected { .. }
            | EventKind::BudgetReached { .. }
            | EventKind::SessionBudgetSet { .. }
            | EventKind::StaleWorktreesRemoved { .. }
            | EventKind::WorktreeCreated { .. }
            | EventKind::DiffStat(_)
            | EventKind::Merged { .. }
            | EventKind::MergeUndone { .. }
            | EventKind::UndoRefused { .. }
            | EventKind::MergeConflict { .. }
            | EventKind::WorktreeRemoved { .. }
            | EventKind::Diff { .. }
            | EventKind::Idle
            | EventKind::Summary { .. }
            | EventKind::Quote(_)
            | EventKind::CheckpointStarted { .. }
            | EventKind::CheckpointTaken { .. }
            | EventKind::Rewound { .. }
            | EventKind::Checkpoints { .. }
            | EventKind::RewindRefused { .. }
            | EventKind::Files { .. }
            | EventKind::Models { .. }
            | EventKind::ModelSet { .. }
            | EventKind::ApprovalSet { .. }
            | EventKind::ReviewStarted { .. }
            | EventKind::ReviewFinished { .. }
            | EventKind::GoalSet { .. }
            | EventKind::GoalChecked(_)
            | EventKind::GoalEnded { .. }
            | EventKind::Batch(_) => {}
        }
        role
    }
}

/// A worker spawned just before the process ended may not have taken up its task, or not
/// have asked its model about it: still `inactive` as spawned, with no answer of its model
/// in its history (the log is on disk before each request, its status `running` with it),
/// it did nothing yet. It comes back interrupted with its task (from its spawn when its
/// history lacks it, without the context and files its first message had), so
/// `--continue` starts it rather than leaving it idle and its supervisor waiting.
fn owe_unstarted_task(agent: &mut ReplayedAgent) {
    let asked = (agent.history.iter()).any(|i| matches!(i, HistoryItem::Assistant { .. }));
    let owed = agent.status == AgentStatus::Inactive && !agent.released && !asked;
    if !owed || agent.result.is_some() || agent.task.is_empty() {
        return;
    }
    if agent.history.is_empty() {
        agent.history.push(HistoryItem::user(agent.task.clone()));
    }
    agent.status = AgentStatus::Interrupted;
}

/// A worker's conversation starts with its task. One an earlier resume gave its task from
/// its spawn (`owe_unstarted_task`) had that item in memory only, so the log has its model's answers
/// without it: it is given again, the same (`tests/team_crash.rs` found a worker killed
/// twice asked with no task at all).
fn task_first(agent: &mut ReplayedAgent) {
    let answer_first = matches!(agent.history.first(), Some(HistoryItem::Assistant { .. }));
    if answer_first && !agent.task.is_empty() {
        agent
            .history
            .insert(0, HistoryItem::user(agent.task.clone()));
    }
}

fn finished(status: AgentStatus) -> bool {
    matches!(
        status,
        AgentStatus::Completed | AgentStatus::Inactive | AgentStatus::Failed
    )
}

/// The result of a call the process ended under. Its record was on disk before it
/// started, so it may have run in part or in full: the model is told so, and never asked
/// for it as if it had not been made.
const CUT_OFF: &str = "interrupted: squad was killed (a crash) while this call was \
    running, so it may or may not have taken effect, in part or in full. Check the files \
    and state it would change before you run it again; do not assume it ran or that it \
    did not.";

/// Gives every tool call that has no result (the process ended mid-call) one, so the
/// history is valid to send again: servers reject a tool call without its result.
fn close_open_calls(history: &mut Vec<HistoryItem>) {
    let mut i = 0;
    while i < history.len() {
        let HistoryItem::Assistant { tool_calls, .. } = &history[i] else {
            i += 1;
            continue;
        };
        let calls = tool_calls.clone();
        let mut end = i + 1;
        while end < history.len() && matches!(history[end], HistoryItem::ToolResult { .. }) {
            end += 1;
        }
        let answered: Vec<String> = history[i + 1..end]
            .iter()
            .filter_map(|item| match item {
                HistoryItem::ToolResult { call_id, .. } => Some(call_id.clone()),
                _ => None,
            })
            .collect();
        let missing: Vec<HistoryItem> = calls
            .iter()
            .filter(|c| !answered.contains(&c.id))
            .map(|c| HistoryItem::ToolResult {
                call_id: c.id.clone(),
                name: c.name.clone(),
                output: CUT_OFF.into(),
                is_error: true,
            })
            .collect();
        let added = missing.len();
        history.splice(end..end, missing);
        i = end + added;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ToolCall;

    fn ev(seq: u64, agent_id: AgentId, kind: EventKind) -> Event {
        Event {
            seq,
            ts: 0,
            agent_id,
            kind,
        }
    }

    fn spawned(parent_id: Option<AgentId>) -> EventKind {
        EventKind::AgentSpawned {
            parent_id,
            role: "r".into(),
            model: "m".into(),
            task: "t".into(),
            depth: 0,
        }
    }

    #[test]
    fn messages_after_the_last_delivery_are_still_owed() {
        let (root, w) = (AgentId::new(), AgentId::new());
        let message = |text: &str| EventKind::SupervisorMessage {
            supervisor_id: root,
            kind: MessageKind::Question,
            text: text.into(),
        };
        let log = [
            ev(1, root, spawned(None)),
            ev(2, w, spawned(Some(root))),
            ev(3, w, message("told")),
            ev(4, root, EventKind::InboxDelivered { notices: 1 }),
            ev(5, w, message("owed")),
        ];
        let session = replay(&log).unwrap();
        assert_eq!(
            session.agents[0].messages,
            [PendingMessage {
                from: w,
                kind: MessageKind::Question,
                text: "owed".into()
            }]
        );
        assert!(session.agents[1].messages.is_empty());
    }

    #[test]
    fn a_teammates_message_is_owed_until_its_delivery_which_adds_its_item() {
        let (root, a, b) = (AgentId::new(), AgentId::new(), AgentId::new());
        let sent = |id: u64, text: &str| EventKind::AgentMessage {
            to: b,
            message_id: id,
            text: text.into(),
        };
        let log = [
            ev(1, root, spawned(None)),
            ev(2, a, spawned(Some(root))),
            ev(3, b, spawned(Some(root))),
            ev(4, a, sent(1, "first")),
            ev(5, a, sent(2, "second")),
            ev(
                6,
                b,
                EventKind::AgentMessagesDelivered {
                    message_ids: vec![1],
                    item: HistoryItem::user("[message from a]\nfirst"),
                },
            ),
        ];
        let session = replay(&log).unwrap();
        let b = &session.agents[2];
        assert_eq!(
            b.mail,
            [PendingMail {
                id: 2,
                from: a,
                text: "second".into()
            }]
        );
        assert_eq!(b.history, [HistoryItem::user("[message from a]\nfirst")]);
    }

    #[test]
    fn work_under_way_comes_back_interrupted_and_a_pause_is_kept() {
        let (root, w, done) = (AgentId::new(), AgentId::new(), AgentId::new());
        let status = |status| EventKind::AgentStatus {
            parent_id: None,
            status,
            reason: None,
        };
        let mut log = vec![
            ev(1, root, spawned(None)),
            ev(2, w, spawned(Some(root))),
            ev(3, done, spawned(Some(root))),
            ev(4, root, status(AgentStatus::Waiting)),
            ev(5, w, status(AgentStatus::Paused)),
            ev(6, done, status(AgentStatus::Completed)),
            ev(7, root, EventKind::Paused),
        ];
        let session = replay(&log).unwrap();
        assert!(session.paused);
        let statuses: Vec<AgentStatus> = session.agents.iter().map(|a| a.status).collect();
        assert_eq!(
            statuses,
            [
                AgentStatus::Interrupted,
                AgentStatus::Interrupted,
                AgentStatus::Completed
            ]
        );
        assert!(!session.agents[1].delivered, "its outcome is still owed");
        log.push(ev(8, root, EventKind::Resumed));
        assert!(!replay(&log).unwrap().paused);
        log.push(ev(9, root, EventKind::Paused));
        log.push(ev(10, root, EventKind::Stopped { cancelled: 1 }));
        assert!(!replay(&log).unwrap().paused, "a stop lifts the pause");
    }

    #[test]
    fn an_active_goal_comes_back_with_its_checks_and_an_ended_one_does_not() {
        use crate::protocol::{Goal, GoalCheck, GoalEnd};
        let root = AgentId::new();
        let goal = Goal::new("fix it", "make test");
        let check = GoalCheck {
            turn: 2,
            max_turns: 10,
            passed: false,
            exit_code: Some(2),
            output_tail: String::new(),
        };
        let mut log = vec![
            ev(1, root, spawned(None)),
            ev(
                2,
                root,
                EventKind::GoalSet {
                    goal: goal.clone(),
                    spent_usd: 0.25,
                },
            ),
            ev(3, root, EventKind::GoalChecked(check)),
        ];
        let track = replay(&log).unwrap().goal;
        assert!(track.is_active());
        assert_eq!((track.turns(), track.spent_at_set), (2, 0.25));
        assert_eq!(track.goal, Some(goal));
        log.push(ev(
            4,
            root,
            EventKind::GoalEnded {
                reason: GoalEnd::Stopped,
            },
        ));
        assert!(!replay(&log).unwrap().goal.is_active());
    }

    #[test]
    fn the_users_model_and_approval_choices_come_back_the_last_one_winning() {
        let root = AgentId::new();
        let mut log = vec![ev(1, root, spawned(None))];
        let session = replay(&log).unwrap();
        assert_eq!((session.model_choice, session.approval), (None, None));
        log.push(ev(2, root, EventKind::ModelSet { model: "a".into() }));
        log.push(ev(3, root, EventKind::ModelSet { model: "b".into() }));
        log.push(ev(
            4,
            root,
            EventKind::ApprovalSet {
                approval: crate::protocol::ApprovalPolicy::ReadOnly,
            },
        ));
        let session = replay(&log).unwrap();
        assert_eq!(session.model_choice.as_deref(), Some("b"));
        assert_eq!(
            session.approval,
            Some(crate::protocol::ApprovalPolicy::ReadOnly)
        );
    }

    #[test]
    fn a_reviewer_comes_back_answering_squad_not_its_supervisor() {
        let (root, r, w) = (AgentId::new(), AgentId::new(), AgentId::new());
        let log = vec![
            ev(1, root, spawned(None)),
            ev(2, r, spawned(Some(root))),
            ev(3, w, spawned(Some(root))),
            ev(
                4,
                root,
                EventKind::ReviewStarted {
                    target: Default::default(),
                    reviewers: vec![r],
                },
            ),
        ];
        let session = replay(&log).unwrap();
        let marks: Vec<bool> = session.agents.iter().map(|a| a.for_squad).collect();
        assert_eq!(marks, [false, true, false]);
    }

    #[test]
    fn budgets_come_back() {
        let (root, w) = (AgentId::new(), AgentId::new());
        let budget = Budget {
            tokens: Some(50_000),
            cost_usd: None,
            wall_s: Some(60),
        };
        let mut log = vec![
            ev(1, root, spawned(None)),
            ev(2, w, spawned(Some(root))),
            ev(3, w, EventKind::AgentBudget { budget }),
        ];
        let session = replay(&log).unwrap();
        assert_eq!(session.agents[1].budget, budget);
        assert!(session.agents[0].budget.is_unlimited());
        assert_eq!(session.session_budget, None, "the config's limit applies");
        log.push(ev(
            4,
            root,
            EventKind::SessionBudgetSet {
                limit_usd: Some(2.0),
            },
        ));
        assert_eq!(replay(&log).unwrap().session_budget, Some(Some(2.0)));
        log.push(ev(5, root, EventKind::SessionBudgetSet { limit_usd: None }));
        assert_eq!(replay(&log).unwrap().session_budget, Some(None));
    }

    /// Each fact is logged once: the verdict is its own event before the result, the merge
    /// report its own after it; replay joins them to the worker's result.
    #[test]
    fn a_results_verdict_and_merge_report_come_back_from_their_own_events() {
        use crate::protocol::{MergeReport, MergeState, ResultStatus, Verdict};
        let (root, w) = (AgentId::new(), AgentId::new());
        let verdict = Verdict {
            attempt: 2,
            passed: true,
            score: Some(100),
            unchecked: false,
            failures: vec![],
            warnings: vec![],
            max_corrections: 3,
        };
        let report = MergeReport {
            state: MergeState::Merged,
            files: vec!["a.txt".into()],
            conflicts: vec![],
            note: String::new(),
        };
        let result = AgentResult {
            completed_at: None,
            status: ResultStatus::Success,
            summary: "done".into(),
            artifacts: vec![],
            known_issues: vec![],
            verification: None,
            merge: None,
        };
        let log = vec![
            ev(1, root, spawned(None)),
            ev(2, w, spawned(Some(root))),
            ev(3, w, EventKind::Verification(verdict.clone())),
            ev(
                4,
                w,
                EventKind::ResultReturned {
                    parent_id: Some(root),
                    result,
                },
            ),
            ev(5, w, EventKind::MergeReport(report.clone())),
        ];
        let session = replay(&log).unwrap();
        let back = session.agents[1].result.clone().unwrap();
        assert_eq!(back.verification, Some(verdict));
        assert_eq!(back.merge, Some(report));
        let json = serde_json::to_value(&log[4]).unwrap();
        assert_eq!(json["type"], "merge_report");
        assert_eq!(json["state"], "merged");
        let json = serde_json::to_value(&log[3]).unwrap();
        assert!(json["result"].get("verification").is_none(), "{json}");
    }

    #[test]
    fn options_and_releases_come_back() {
        let (root, w) = (AgentId::new(), AgentId::new());
        let options = SpawnOptions {
            keep: false,
            instructions: Some("only src/".into()),
            tools: Some(vec!["read_file".into(), "return_results".into()]),
            name: Some("only src".into()),
            environment: Some("gpu".into()),
        };
        let mut log = vec![
            ev(
                1,
                root,
                EventKind::AgentSpawned {
                    parent_id: None,
                    role: "r".into(),
                    model: "m".into(),
                    task: String::new(),
                    depth: 0,
                },
            ),
            ev(
                2,
                w,
                EventKind::AgentSpawned {
                    parent_id: Some(root),
                    role: "r".into(),
                    model: "m".into(),
                    task: "t".into(),
                    depth: 1,
                },
            ),
            ev(3, w, EventKind::AgentOptions(options.clone())),
        ];
        let session = replay(&log).unwrap();
        assert_eq!(session.agents[1].options, options);
        assert!(!session.agents[1].released);
        log.push(ev(4, w, EventKind::Released));
        assert!(replay(&log).unwrap().agents[1].released);
        // As the log has them: a unit variant and a flat object.
        let json = serde_json::to_value(&log[2]).unwrap();
        assert_eq!(json["type"], "agent_options");
        assert_eq!(json["instructions"], "only src/");
        assert!(json.get("keep").is_none(), "left out when false");
        let json = serde_json::to_string(&log[3]).unwrap();
        assert!(json.contains(r#""type":"released""#), "{json}");
    }

    #[test]
    fn calls_left_open_by_a_crash_get_a_result() {
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "run_command".into(),
            arguments: "{}".into(),
        };
        let mut history = vec![
            HistoryItem::user("go"),
            HistoryItem::Assistant {
                text: String::new(),
                tool_calls: vec![call("a"), call("b")],
                reasoning: Vec::new(),
            },
            HistoryItem::ToolResult {
                call_id: "a".into(),
                name: "run_command".into(),
                output: "ok".into(),
                is_error: false,
            },
        ];
        close_open_calls(&mut history);
        assert_eq!(history.len(), 4);
        let HistoryItem::ToolResult {
            call_id, is_error, ..
        } = &history[3]
        else {
            panic!("{history:?}");
        };
        assert_eq!(call_id, "b");
        assert!(is_error);
        // It may have run: the model is told so, not that it did not run.
        let HistoryItem::ToolResult { output, .. } = &history[3] else {
            unreachable!()
        };
        assert!(output.contains("killed (a crash)"), "{output}");
        assert!(
            output.contains("may or may not have taken effect"),
            "{output}"
        );
        // Already complete: unchanged.
        let before = history.clone();
        close_open_calls(&mut history);
        assert_eq!(history, before);
    }

    /// A worker spawned just before a crash, which never asked its model anything, comes
    /// back interrupted with its task (so `--continue` starts it); one whose model
    /// answered, or that is gone, stays as the log left it.
    #[test]
    fn a_worker_that_never_started_comes_back_owing_its_task() {
        let (root, fresh, taken, asked, gone) = (
            AgentId::new(),
            AgentId::new(),
            AgentId::new(),
            AgentId::new(),
            AgentId::new(),
        );
        let item = |item: HistoryItem| EventKind::ItemAdded { item };
        let answer = HistoryItem::Assistant {
            text: "done".into(),
            tool_calls: Vec::new(),
            reasoning: Vec::new(),
        };
        let log = vec![
            ev(1, root, spawned(None)),
            ev(2, fresh, spawned(Some(root))),
            ev(3, taken, spawned(Some(root))),
            ev(4, taken, item(HistoryItem::user("t, with its context"))),
            ev(5, asked, spawned(Some(root))),
            ev(6, asked, item(HistoryItem::user("t"))),
            ev(7, asked, item(answer)),
            ev(8, gone, spawned(Some(root))),
            ev(
                9,
                gone,
                EventKind::Despawned {
                    parent_id: Some(root),
                },
            ),
        ];
        let session = replay(&log).unwrap();
        let by_id = |id| session.agents.iter().find(|a| a.id == id).unwrap();
        assert_eq!(by_id(fresh).status, AgentStatus::Interrupted);
        assert_eq!(by_id(fresh).history, [HistoryItem::user("t")]);
        assert_eq!(by_id(taken).status, AgentStatus::Interrupted);
        assert_eq!(
            by_id(taken).history,
            [HistoryItem::user("t, with its context")]
        );
        assert_eq!(by_id(asked).status, AgentStatus::Inactive);
        assert_eq!(by_id(gone).status, AgentStatus::Cancelled);
        assert_eq!(
            by_id(root).status,
            AgentStatus::Inactive,
            "the persona is no worker"
        );
    }
}
