//! What the screen shows, as data: the agent tree, every agent's conversation, figures
//! and the dialogs waiting for the user. `apply` folds one [`Event`] in; nothing here draws or does I/O,
//! so any sequence of events can be replayed in a test. Time is passed in, never read.
//!
//! This file folds the events; `agents.rs` holds an agent's view and the tree's queries,
//! `conversation.rs` its entries, `items.rs` what a spawn and a history item add, `figures.rs` tokens, cost and counts, `timeline.rs`
//! what each agent did when, `control.rs` the team's pause, budget and stop, `goal.rs` the goal.

use crate::protocol::{
    AgentId, AgentStatus, AgentSummary, ApprovalPolicy, Event, EventKind, HistoryItem,
    McpServerState, SessionTotals, TaskList, TaskTally, TurnEnd,
};
use crate::tui::handle::SessionInfo;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::time::Instant;

mod agents;
mod control;
mod conversation;
mod dialogs;
mod figures;
mod goal;
mod items;
mod review;
mod said;
mod taken_back;
mod timeline;
mod worktrees;

use agents::set_status;
pub use agents::{AgentView, Stall};
pub use conversation::{Conversation, Entry, EntryKind, ToolEntry};
pub use dialogs::{Dialog, PendingApproval, PendingQuestion};
pub use figures::Figures;
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

    /// Folds one event into the state. `now` is when it arrived (elapsed times and wall
    /// times are measured from it, which keeps tests independent of the clock).
    pub fn apply(&mut self, ev: &Event, now: Instant) {
        let id = ev.agent_id;
        let live = ev.seq > self.replayed_seq;
        self.tasks.observe(ev);
        self.timeline.observe(ev, live.then_some(now));
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
                if *status == AgentStatus::Interrupted && live {
                    a.conversation.push(EntryKind::Notice(
                        "interrupted when squad stopped: /continue goes on with every interrupted \
                         agent (c on a selected one in the tree), or send a message"
                            .into(),
                    ));
                }
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
                a.stalled = None;
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
                let name = self.agent_entry(id, now).options.name.clone();
                // Like a question: one read back from an earlier run's log has nobody
                // waiting on it (a resumed agent asks again, live).
                if live && !self.approvals.iter().any(|p| p.request_id == *request_id) {
                    self.approvals.push_back(PendingApproval {
                        request_id: *request_id,
                        agent_id: id,
                        role: role.clone(),
                        name,
                        tool: tool.clone(),
                        action: action.clone(),
                        seq: ev.seq,
                    });
                }
            }
            EventKind::ApprovalResolved { request_id, .. } => {
                self.resolve_approval(*request_id);
            }
            // Only where nobody can answer (an exec run read back): the call's result says it.
            EventKind::ApprovalUnanswered { .. } => {}
            EventKind::QuestionAsked {
                request_id,
                role,
                question,
                options,
            } => {
                self.agent_entry(id, now);
                // A question read back from an earlier run's log has nobody waiting on it.
                if live {
                    self.ask(PendingQuestion {
                        request_id: *request_id,
                        agent_id: id,
                        role: role.clone(),
                        question: question.clone(),
                        options: options.clone(),
                        seq: ev.seq,
                    });
                }
            }
            EventKind::QuestionAnswered { request_id, .. } => {
                self.resolve_question(*request_id);
            }
            EventKind::Usage {
                prompt_tokens,
                completion_tokens,
                cost_usd,
                context_tokens,
                context_window,
                ..
            } => {
                let a = self.agent_entry(id, now);
                let f = &mut a.figures;
                f.prompt_tokens += prompt_tokens;
                f.completion_tokens += completion_tokens;
                f.cost_usd += cost_usd;
                f.model_calls += 1;
                if *context_window > 0 && *context_tokens > 0 {
                    a.context = Some((*context_tokens, *context_window));
                }
            }
            EventKind::Compacted {
                tokens_before,
                tokens_after,
                context_window,
                replaced,
                ..
            } => {
                let a = self.agent_entry(id, now);
                a.context = Some((*tokens_after, *context_window));
                a.conversation.push(EntryKind::Notice(format!(
                    "context compacted: {replaced} older items replaced by a summary, \
                     ~{} → ~{} of {} tokens",
                    crate::tui::format::tokens(*tokens_before),
                    crate::tui::format::tokens(*tokens_after),
                    crate::tui::format::tokens(*context_window),
                )));
            }
            EventKind::InstructionsLoaded { files, bytes, cut } => {
                let names: Vec<String> = files
                    .iter()
                    .map(|f| {
                        f.strip_prefix(&self.workspace)
                            .unwrap_or(f)
                            .display()
                            .to_string()
                    })
                    .collect();
                let cut = if *cut { ", cut to the limit" } else { "" };
                self.instructions = Some(names.join(", "));
                let message = format!(
                    "project instructions loaded: {} ({}{cut})",
                    names.join(", "),
                    crate::tui::format::bytes(*bytes)
                );
                self.agent_entry(id, now)
                    .conversation
                    .push(EntryKind::Notice(message));
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
            // A stall read back from an earlier run's log is over.
            EventKind::Stalled { on, since_s } if live => {
                let since = now
                    .checked_sub(std::time::Duration::from_secs(*since_s))
                    .unwrap_or(now);
                self.agent_entry(id, now).stalled = Some(Stall {
                    on: on.clone(),
                    since,
                });
            }
            EventKind::Stalled { .. } => {}
            EventKind::Unstalled => self.agent_entry(id, now).stalled = None,
            EventKind::Notice { message } => {
                self.agent_entry(id, now)
                    .conversation
                    .push(EntryKind::Notice(message.clone()));
            }
            EventKind::HookRan { .. } => {
                if let Some(line) = ev.kind.hook_summary() {
                    self.agent_entry(id, now)
                        .conversation
                        .push(EntryKind::Notice(line));
                }
            }
            EventKind::Error { message } => {
                let a = self.agent_entry(id, now);
                a.figures.errors += 1;
                a.conversation.push(EntryKind::Error(message.clone()));
            }
            EventKind::ResultReturned { result, .. } => {
                let a = self.agent_entry(id, now);
                let mut result = result.clone();
                // Its verdict is the `verification` just before it.
                if result.verification.is_none() {
                    result.verification = a.verdicts.last().cloned();
                }
                a.result = Some(result.clone());
                a.correcting = None;
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
            EventKind::ResultDelivered { .. } | EventKind::InboxDelivered { .. } => {}
            // Shown where the supervisor's conversation is read (for the persona: the user).
            EventKind::SupervisorMessage {
                supervisor_id,
                kind,
                text,
            } => {
                let from = self.agent_entry(id, now).role.clone();
                let line = format!("{} from {from} {}: {text}", kind.as_str(), id.short());
                self.agent_entry(*supervisor_id, now)
                    .conversation
                    .push(EntryKind::Notice(line));
            }
            EventKind::TaskUpdated { task } => {
                self.board.update(task);
            }
            EventKind::DeadlockDetected { tasks } => {
                let stuck: Vec<String> = tasks
                    .iter()
                    .map(|t| format!("{} ({})", t.id, t.why))
                    .collect();
                let root = self.root_agent;
                self.agent_entry(root, now)
                    .conversation
                    .push(EntryKind::Error(format!(
                        "task board deadlock: nothing can run: {}",
                        stuck.join("; ")
                    )));
            }
            EventKind::Verification(v) => {
                let a = self.agent_entry(id, now);
                a.verdicts.push(v.clone());
                // A delivered result carries its verdict on its card; a correction gets
                // a line of its own.
                if !v.passed && v.attempt <= v.max_corrections {
                    a.correcting = Some((v.attempt, v.max_corrections));
                    a.conversation.push(EntryKind::Verification(v.clone()));
                } else {
                    a.correcting = None;
                }
            }
            EventKind::Summary { agents, totals } => {
                self.summary = Some((agents.clone(), totals.clone()));
            }
            // The tree rests; statuses already say so.
            EventKind::Idle => {}
            // Checkpoints are listed by `/rewind` from the log, not drawn.
            EventKind::CheckpointStarted { .. }
            | EventKind::CheckpointTaken { .. }
            | EventKind::Checkpoints { .. } => {}
            EventKind::Rewound { .. }
            | EventKind::RewindRefused { .. }
            | EventKind::MergeUndone { .. }
            | EventKind::UndoRefused { .. } => self.taken_back(id, &ev.kind, now),
            EventKind::MessageQueued { text } => {
                self.agent_entry(id, now).queued.push(text.clone());
            }
            EventKind::Paused
            | EventKind::Resumed
            | EventKind::Stopped { .. }
            | EventKind::BudgetReached { .. }
            | EventKind::SessionBudgetSet { .. } => self.control(id, &ev.kind, now),
            EventKind::GoalSet { .. } | EventKind::GoalChecked(_) | EventKind::GoalEnded { .. } => {
                self.goal_event(id, &ev.kind, now)
            }
            EventKind::AgentBudget { budget } => self.agent_entry(id, now).budget = *budget,
            EventKind::AgentSandbox { sandbox } => {
                self.agent_entry(id, now).sandbox = Some(sandbox.clone());
            }
            EventKind::AgentOptions(options) => {
                self.agent_entry(id, now).options = options.clone();
            }
            EventKind::Released => {
                let a = self.agent_entry(id, now);
                a.released = true;
                a.conversation.push(EntryKind::Notice(
                    "released: its result was delivered and it was not kept, so it takes no more \
                     messages; its history stays here for reading"
                        .into(),
                ));
            }
            EventKind::RoleSaved { name, path } => {
                let path = path.strip_prefix(&self.workspace).unwrap_or(path);
                let line = format!(
                    "role and prompt saved as role `{name}` in {} (loads with the next session)",
                    path.display()
                );
                self.agent_entry(id, now)
                    .conversation
                    .push(EntryKind::Notice(line));
            }
            EventKind::StaleWorktreesRemoved {
                worktrees,
                kept_branches,
            } => self.stale_worktrees_removed(id, worktrees.len(), kept_branches, now),
            EventKind::WorktreeCreated { path, branch } => {
                self.worktree_created(id, path, branch, now)
            }
            EventKind::DiffStat(stat) => self.diff_stat(id, *stat, now),
            EventKind::MergeReport(report) => {
                let a = self.agent_entry(id, now);
                if report.state == crate::protocol::MergeState::FailedChecks {
                    a.merge = Some(report.state);
                }
                if let Some(r) = &mut a.result {
                    r.merge = Some(report.clone());
                }
            }
            EventKind::Merged { files, .. } => self.merged(id, files, now),
            EventKind::MergeConflict { conflicts } => self.merge_conflict(id, conflicts, now),
            EventKind::WorktreeRemoved {
                discarded,
                kept,
                branch,
            } => self.worktree_removed(id, *discarded, kept.then_some(branch.as_str()), now),
            EventKind::Diff { text } => self.diff = Some((id, text.clone())),
            // The composer's: `App::apply` hands them to `@` completion.
            EventKind::Files { .. } => {}
            EventKind::Models { models, error } => {
                self.models = Some(error.clone().map_or_else(|| Ok(models.clone()), Err));
            }
            EventKind::ModelSet { model } => {
                self.model = model.clone();
                let line = format!("model: {model} from the next call");
                self.agent_entry(id, now)
                    .conversation
                    .push(EntryKind::Notice(line));
            }
            EventKind::ReviewStarted { target, reviewers } => {
                self.review_started(id, target, reviewers, now)
            }
            EventKind::ReviewFinished {
                target,
                findings,
                dropped,
                unanswered,
            } => self.review_finished(id, target, findings, dropped, unanswered, now),
            EventKind::ApprovalSet { approval } => {
                self.approval = *approval;
                let line = format!("approval: {} for every agent", approval.as_str());
                self.agent_entry(id, now)
                    .conversation
                    .push(EntryKind::Notice(line));
            }
            EventKind::McpServer {
                server,
                state,
                transport,
                tools,
                error,
            } => {
                self.mcp.insert(
                    server.clone(),
                    McpView {
                        state: *state,
                        transport: transport.clone(),
                        tools: tools.clone(),
                        error: error.clone(),
                    },
                );
            }
        }
    }
}

#[cfg(test)]
mod tests;
