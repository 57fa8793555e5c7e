//! One session's event stream as ACP `session/update` notifications: each agent's text as
//! message chunks, its tool calls with their updates, the task board as the plan,
//! approvals and questions as permission requests. Workers are child sessions where the
//! client takes subagents, otherwise one tool call each of their supervisor. It also
//! works out how a prompt ended.

use super::ask;
use super::rpc::Rpc;
pub use super::stop::{StopReason, TurnState};
use crate::protocol::{
    AgentId, AgentStatus, BudgetScope, Event, EventKind, HistoryItem, Op, Task, TaskStatus, dollars,
};
use crate::text::one_line;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// Child session id → the worker it shows, for `session/cancel` on a child.
pub type Children = Arc<Mutex<HashMap<String, (mpsc::UnboundedSender<Op>, AgentId)>>>;

/// What the client sees of one agent.
#[derive(Default)]
struct View {
    /// Where its own updates go: the session, or its child session.
    session_id: String,
    /// A worker's child session: the session it was announced on (its supervisor's).
    parent_session: String,
    /// Text streamed since its last assistant item (so the item is not sent twice).
    streamed: bool,
    /// Its tool calls announced and not finished: id → tool name.
    open_calls: BTreeMap<String, String>,
    /// Without subagents: the supervisor's tool call that stands for this worker (its
    /// session and id), and the progress lines shown in it.
    as_call: Option<(String, String)>,
    progress: Vec<String>,
}

/// Follows one squad session for the client.
pub struct Translator {
    pub session_id: String,
    root: AgentId,
    /// The workspace root: ACP's locations are absolute paths.
    workspace: PathBuf,
    rpc: Rpc,
    ops: mpsc::UnboundedSender<Op>,
    /// The client takes child sessions (`clientCapabilities.subagents`).
    subagents: bool,
    children: Children,
    views: HashMap<AgentId, View>,
    /// The board, for the plan.
    tasks: BTreeMap<String, Task>,
    /// What the current prompt has seen.
    pub turn: TurnState,
}

/// How many lines of a worker's progress its tool call shows (without subagents).
const PROGRESS_LINES: usize = 12;

impl Translator {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        session_id: String,
        root: AgentId,
        workspace: PathBuf,
        rpc: Rpc,
        ops: mpsc::UnboundedSender<Op>,
        subagents: bool,
        children: Children,
    ) -> Self {
        let mut views = HashMap::new();
        views.insert(
            root,
            View {
                session_id: session_id.clone(),
                ..View::default()
            },
        );
        Self {
            session_id,
            root,
            workspace,
            rpc,
            ops,
            subagents,
            children,
            views,
            tasks: BTreeMap::new(),
            turn: TurnState::default(),
        }
    }

    fn send(&self, session_id: &str, update: Value) {
        self.rpc.update(session_id, update);
    }

    fn say(&self, session_id: &str, text: &str) {
        self.send(
            session_id,
            json!({
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": text},
            }),
        );
    }

    /// Replays one event of a loaded session's log: the conversations, the workers and
    /// the board. Nothing that asks or acts (approvals, questions, budgets) is replayed.
    pub fn replay(&mut self, event: &Event) {
        match &event.kind {
            EventKind::ItemAdded {
                item: HistoryItem::User { text },
            } if event.agent_id == self.root => self.send(
                &self.session_id,
                json!({
                    "sessionUpdate": "user_message_chunk",
                    "content": {"type": "text", "text": text},
                }),
            ),
            EventKind::ItemAdded { .. }
            | EventKind::AgentSpawned { .. }
            | EventKind::AgentStatus { .. }
            | EventKind::ResultReturned { .. }
            | EventKind::TaskUpdated { .. } => {
                self.event(event);
            }
            _ => {}
        }
    }

    /// One live event. Returns the stop reason when the prompt under way has ended: the
    /// whole tree is idle after the root's turn started.
    pub fn event(&mut self, event: &Event) -> Option<StopReason> {
        let agent = event.agent_id;
        let root = agent == self.root;
        match &event.kind {
            EventKind::TurnStarted if root => self.turn.started = true,
            EventKind::TurnFinished { end } if root => self.turn.last_end = Some(*end),
            EventKind::AgentSpawned {
                parent_id: Some(parent),
                role,
                task,
                ..
            } => self.spawned(agent, *parent, role, task),
            EventKind::AgentStatus { status, reason, .. } if !root => {
                self.worker_status(agent, *status, reason.as_deref())
            }
            EventKind::ResultReturned { result, .. } if !root => {
                let line = format!("result ({:?}): {}", result.status, result.summary);
                self.worker_line(agent, &line, true);
                // A child's result is a message to its supervisor's session.
                if let Some(view) = self.views.get(&agent).filter(|v| v.as_call.is_none()) {
                    self.send(
                        &view.parent_session,
                        json!({
                            "sessionUpdate": "session_message",
                            "messageId": format!("result-{agent}-{}", event.seq),
                            "senderSessionId": view.session_id,
                            "recipientSessionId": view.parent_session,
                            "content": [{"type": "text", "text": line}],
                        }),
                    );
                }
            }
            EventKind::TextDelta { delta } => {
                if let Some(view) = self.views.get_mut(&agent)
                    && view.as_call.is_none()
                {
                    view.streamed = true;
                    let session = view.session_id.clone();
                    self.say(&session, delta);
                }
            }
            EventKind::ItemAdded { item } => self.item(agent, item),
            EventKind::ToolCallBegin { call_id } => {
                if let Some(view) = self.views.get(&agent)
                    && view.as_call.is_none()
                    && view.open_calls.contains_key(call_id)
                {
                    self.send(
                        &view.session_id,
                        json!({
                            "sessionUpdate": "tool_call_update",
                            "toolCallId": call_id,
                            "status": "in_progress",
                        }),
                    );
                }
            }
            EventKind::Error { message } if root => self.turn.last_error = Some(message.clone()),
            EventKind::BudgetReached {
                scope: BudgetScope::Session,
                spent,
                limit,
                ..
            } => {
                self.turn.refused = Some(format!(
                    "session budget reached: {} of {} spent (limits.max_session_cost_usd)",
                    dollars(*spent),
                    dollars(*limit)
                ));
                // Paused by its budget, the team cannot go on here: stop it, end the prompt.
                let _ = self.ops.send(Op::Stop);
            }
            EventKind::TaskUpdated { task } => self.plan(task),
            EventKind::ApprovalRequested {
                request_id,
                tool,
                action,
                ..
            } => {
                let (session, call_id) = self.waiting_call(agent, tool, *request_id);
                ask::approval(
                    &self.rpc,
                    &self.ops,
                    &session,
                    call_id,
                    *request_id,
                    tool,
                    action,
                );
            }
            EventKind::QuestionAsked {
                request_id,
                question,
                options,
                ..
            } => {
                let session = self.shown_session(agent);
                ask::question(
                    &self.rpc,
                    &self.ops,
                    &session,
                    *request_id,
                    question,
                    options,
                );
            }
            EventKind::Idle if self.turn.started => {
                let (reason, why) = self.turn.stop_reason();
                if let Some(why) = why {
                    self.say(&self.session_id, &format!("\n\nsquad stopped: {why}"));
                }
                self.turn = TurnState::default();
                return Some(reason);
            }
            _ => {}
        }
        None
    }

    /// The session where an agent's requests are shown: its own, or (shown as a tool
    /// call) its supervisor's.
    fn shown_session(&self, agent: AgentId) -> String {
        match self.views.get(&agent) {
            Some(View {
                as_call: Some((session, _)),
                ..
            }) => session.clone(),
            Some(view) => view.session_id.clone(),
            None => self.session_id.clone(),
        }
    }

    /// The session and tool call an approval is about: the agent's open call of that tool,
    /// or the worker's own tool call when it is shown as one.
    fn waiting_call(&self, agent: AgentId, tool: &str, request_id: u64) -> (String, String) {
        let fallback = format!("approval-{request_id}");
        match self.views.get(&agent) {
            Some(View {
                as_call: Some((session, call)),
                ..
            }) => (session.clone(), call.clone()),
            Some(view) => {
                let call = view
                    .open_calls
                    .iter()
                    .rev()
                    .find(|(_, name)| name.as_str() == tool)
                    .map_or(fallback, |(id, _)| id.clone());
                (view.session_id.clone(), call)
            }
            None => (self.session_id.clone(), fallback),
        }
    }

    /// A worker came into being: announced as a child session of its supervisor's, or as
    /// a tool call of its supervisor.
    fn spawned(&mut self, agent: AgentId, parent: AgentId, role: &str, task: &str) {
        let parent_session = self.shown_session(parent);
        let title = format!("{role}: {}", short(task, 80));
        let view = if self.subagents {
            let child = format!("{}/{}", self.session_id, agent);
            if let Ok(mut c) = self.children.lock() {
                c.insert(child.clone(), (self.ops.clone(), agent));
            }
            self.send(
                &parent_session,
                json!({
                    "sessionUpdate": "subagent_update",
                    "sessionId": child,
                    "title": role,
                    "description": task,
                    "capabilities": {"cancel": {}},
                    "state": {"state": "running"},
                }),
            );
            // Its task, as the message its supervisor sent it.
            self.send(
                &child,
                json!({
                    "sessionUpdate": "session_message",
                    "messageId": format!("task-{agent}"),
                    "senderSessionId": parent_session,
                    "recipientSessionId": child,
                    "content": [{"type": "text", "text": task}],
                }),
            );
            View {
                session_id: child,
                parent_session,
                ..View::default()
            }
        } else {
            let call = format!("agent-{agent}");
            self.send(
                &parent_session,
                json!({
                    "sessionUpdate": "tool_call",
                    "toolCallId": call,
                    "title": title,
                    "kind": "other",
                    "status": "in_progress",
                    "rawInput": {"role": role, "task": task},
                }),
            );
            View {
                session_id: parent_session.clone(),
                as_call: Some((parent_session, call)),
                ..View::default()
            }
        };
        self.views.insert(agent, view);
    }

    /// A worker's status: its child session's state, or its tool call's status.
    fn worker_status(&mut self, agent: AgentId, status: AgentStatus, reason: Option<&str>) {
        let Some(view) = self.views.get(&agent) else {
            return;
        };
        let (state, stop, call_status) = match status {
            AgentStatus::Running => ("running", None, "in_progress"),
            AgentStatus::Completed => ("idle", Some("end_turn"), "completed"),
            AgentStatus::Failed => ("idle", Some("refusal"), "failed"),
            AgentStatus::Cancelled => ("idle", Some("cancelled"), "failed"),
            _ => return,
        };
        match &view.as_call {
            None => {
                let parent = view.parent_session.clone();
                let mut state = json!({ "state": state });
                if let Some(stop) = stop {
                    state["stopReason"] = json!(stop);
                }
                self.send(
                    &parent,
                    json!({
                        "sessionUpdate": "subagent_update",
                        "sessionId": view.session_id,
                        "state": state,
                    }),
                );
            }
            Some(_) => {
                if let Some(why) = reason.filter(|_| stop.is_some()) {
                    self.worker_line(agent, &format!("{status:?}: {why}"), false);
                }
                if let Some(View {
                    as_call: Some((session, call)),
                    ..
                }) = self.views.get(&agent)
                {
                    self.send(
                        session,
                        json!({
                            "sessionUpdate": "tool_call_update",
                            "toolCallId": call,
                            "status": call_status,
                        }),
                    );
                }
            }
        }
    }

    /// A line of a worker's progress. In its own session it is a message; shown as a tool
    /// call, the call's content is the last lines.
    fn worker_line(&mut self, agent: AgentId, line: &str, message: bool) {
        let Some(view) = self.views.get_mut(&agent) else {
            return;
        };
        match view.as_call.clone() {
            None if message => {
                let session = view.session_id.clone();
                self.say(&session, &format!("\n{line}\n"));
            }
            None => {}
            Some((session, call)) => {
                view.progress.push(short(line, 200));
                if view.progress.len() > PROGRESS_LINES {
                    view.progress.remove(0);
                }
                let text = view.progress.join("\n");
                self.send(
                    &session,
                    json!({
                        "sessionUpdate": "tool_call_update",
                        "toolCallId": call,
                        "content": [{"type": "content", "content": {"type": "text", "text": text}}],
                    }),
                );
            }
        }
    }

    /// A history item of an agent: its text (unless streamed), its tool calls and results.
    fn item(&mut self, agent: AgentId, item: &HistoryItem) {
        let Some(view) = self.views.get_mut(&agent) else {
            return;
        };
        if view.as_call.is_some() {
            if let HistoryItem::Assistant {
                text, tool_calls, ..
            } = item
            {
                let mut lines: Vec<String> = Vec::new();
                if !text.trim().is_empty() {
                    lines.push(text.clone());
                }
                for call in tool_calls {
                    let args: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
                    lines.push(format!("→ {}", title(&call.name, &args)));
                }
                for line in lines {
                    self.worker_line(agent, &line, false);
                }
            }
            return;
        }
        let session = view.session_id.clone();
        let mut out = Vec::new();
        match item {
            HistoryItem::Assistant {
                text, tool_calls, ..
            } => {
                if !std::mem::replace(&mut view.streamed, false) && !text.trim().is_empty() {
                    out.push(json!({
                        "sessionUpdate": "agent_message_chunk",
                        "content": {"type": "text", "text": text},
                    }));
                }
                for call in tool_calls {
                    view.open_calls.insert(call.id.clone(), call.name.clone());
                    let args: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
                    let mut update = json!({
                        "sessionUpdate": "tool_call",
                        "toolCallId": call.id,
                        "title": title(&call.name, &args),
                        "kind": kind(&call.name),
                        "status": "pending",
                        "rawInput": args,
                    });
                    if let Some(path) = args.get("path").and_then(Value::as_str) {
                        update["locations"] = json!([{ "path": self.workspace.join(path) }]);
                    }
                    out.push(update);
                }
            }
            HistoryItem::ToolResult {
                call_id,
                output,
                is_error,
                ..
            } => {
                view.open_calls.remove(call_id);
                out.push(json!({
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": call_id,
                    "status": if *is_error { "failed" } else { "completed" },
                    "content": [{"type": "content", "content": {"type": "text", "text": output}}],
                }));
            }
            HistoryItem::Handoff {
                from, to, reason, ..
            } => {
                out.push(json!({
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": format!("\n[{from} hands over to {to}: {reason}]\n")},
                }));
                if agent == self.root {
                    out.push(json!({"sessionUpdate": "current_mode_update", "currentModeId": to}));
                }
            }
            _ => {}
        }
        for update in out {
            self.send(&session, update);
        }
    }

    /// The whole board as the plan (ACP replaces the plan with each update).
    fn plan(&mut self, task: &Task) {
        self.tasks.insert(task.id.clone(), task.clone());
        let entries: Vec<Value> = self
            .tasks
            .values()
            .filter(|t| t.status != TaskStatus::Cancelled)
            .map(|t| {
                let status = match t.status {
                    TaskStatus::Running => "in_progress",
                    s if s.is_final() => "completed",
                    _ => "pending",
                };
                json!({"content": t.title, "priority": "medium", "status": status})
            })
            .collect();
        self.send(
            &self.session_id,
            json!({"sessionUpdate": "plan", "entries": entries}),
        );
    }
}

/// One line, at most `max` characters.
fn short(s: &str, max: usize) -> String {
    let line = one_line(s);
    if line.chars().count() <= max {
        return line;
    }
    let mut cut: String = line.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// ACP's tool kind for a squad tool.
pub fn kind(tool: &str) -> &'static str {
    match tool {
        "read_file" | "list_dir" | "read_many_files" => "read",
        "write_file" | "edit_file" | "apply_patch" => "edit",
        "run_command" | "shell" | "escalate" => "execute",
        "grep" | "glob" | "search" | "find_files" => "search",
        "web_fetch" | "fetch" => "fetch",
        _ => "other",
    }
}

/// A short title: the tool and what it acts on.
fn title(tool: &str, args: &Value) -> String {
    let subject = ["path", "command", "pattern", "role_name", "query"]
        .iter()
        .find_map(|k| args.get(*k).and_then(Value::as_str));
    match subject {
        Some(s) => format!("{tool} {}", crate::text::one_line(s)),
        None => tool.to_string(),
    }
}
