//! One session's event stream as ACP `session/update` notifications: each agent's text as
//! message chunks, its tool calls with their updates, the task board as the plan,
//! approvals and questions as permission requests. Workers are child sessions (the
//! crate's subagent updates) where the client takes them, otherwise one tool call each of
//! their supervisor. It also works out how a prompt ended.

use super::rpc::Rpc;
pub use super::stop::{StopReason, TurnState};
use super::tool_calls::{announce, text_content, title};
use crate::protocol::{AgentId, AgentStatus, HistoryItem, Op, Task, TaskStatus, TurnEnd};
use crate::text::one_line;
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, CurrentModeUpdate, IdleStateUpdate, IdleStopReason, Plan,
    RunningStateUpdate, SessionCancelCapabilities, SessionId, SessionMessage, SessionUpdate,
    StateUpdate, SubagentSessionCapabilities, SubagentUpdate, ToolCall, ToolCallStatus,
    ToolCallUpdate, ToolCallUpdateFields,
};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

mod fold;
mod team;

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
    /// How its last turn ended, and whether its own token budget stopped it: a worker
    /// cut short that way is idle with `max_tokens`.
    last_end: Option<TurnEnd>,
    out_of_tokens: bool,
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
    /// Who messaged whom, held which task, submitted which plan (`team.rs`).
    team: team::TeamView,
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
            team: team::TeamView::default(),
            turn: TurnState::default(),
        }
    }

    fn send(&self, session_id: &str, update: SessionUpdate) {
        self.rpc.update(session_id, update);
    }

    fn say(&self, session_id: &str, text: &str) {
        self.send(session_id, message_chunk(text));
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
            let announce = SubagentUpdate::new(child.clone())
                .title(role.to_string())
                .description(task.to_string())
                .capabilities(
                    SubagentSessionCapabilities::new().cancel(SessionCancelCapabilities::new()),
                )
                .state(StateUpdate::Running(RunningStateUpdate::new()));
            self.send(&parent_session, SessionUpdate::SubagentUpdate(announce));
            // Its task, as the message its supervisor sent it.
            self.send(
                &child,
                session_message(format!("task-{agent}"), &parent_session, &child, task),
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
                SessionUpdate::ToolCall(
                    ToolCall::new(call.clone(), title)
                        .kind(agent_client_protocol::v1::schema::ToolKind::Other)
                        .status(ToolCallStatus::InProgress)
                        .raw_input(json!({"role": role, "task": task})),
                ),
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
        let cut_short = view.out_of_tokens || view.last_end == Some(TurnEnd::MaxTokens);
        let (stop, call_status) = match status {
            AgentStatus::Running => (None, ToolCallStatus::InProgress),
            AgentStatus::Completed if cut_short => {
                (Some(IdleStopReason::MaxTokens), ToolCallStatus::Completed)
            }
            AgentStatus::Completed => (Some(IdleStopReason::EndTurn), ToolCallStatus::Completed),
            AgentStatus::Failed if cut_short => {
                (Some(IdleStopReason::MaxTokens), ToolCallStatus::Failed)
            }
            AgentStatus::Failed => (Some(IdleStopReason::Refusal), ToolCallStatus::Failed),
            AgentStatus::Cancelled => (Some(IdleStopReason::Cancelled), ToolCallStatus::Failed),
            // A worker that answered without `return_results`, its answer cut at the limit.
            AgentStatus::Inactive if cut_short => {
                (Some(IdleStopReason::MaxTokens), ToolCallStatus::Completed)
            }
            _ => return,
        };
        match &view.as_call {
            None => {
                let state = match stop.clone() {
                    None => StateUpdate::Running(RunningStateUpdate::new()),
                    Some(stop) => StateUpdate::Idle(IdleStateUpdate::new().stop_reason(stop)),
                };
                self.send(
                    &view.parent_session,
                    SessionUpdate::SubagentUpdate(
                        SubagentUpdate::new(view.session_id.clone()).state(state),
                    ),
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
                        call_update(call, ToolCallUpdateFields::new().status(call_status)),
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
                    call_update(
                        &call,
                        ToolCallUpdateFields::new().content(vec![text_content(text)]),
                    ),
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
                    out.push(message_chunk(text));
                }
                for call in tool_calls {
                    view.open_calls.insert(call.id.clone(), call.name.clone());
                    out.push(SessionUpdate::ToolCall(announce(
                        &self.workspace,
                        &call.id,
                        &call.name,
                        &call.arguments,
                    )));
                }
            }
            HistoryItem::ToolResult {
                call_id,
                output,
                is_error,
                ..
            } => {
                view.open_calls.remove(call_id);
                let status = if *is_error {
                    ToolCallStatus::Failed
                } else {
                    ToolCallStatus::Completed
                };
                out.push(call_update(
                    call_id,
                    ToolCallUpdateFields::new()
                        .status(status)
                        .content(vec![text_content(output.as_str())]),
                ));
            }
            HistoryItem::Handoff {
                from, to, reason, ..
            } => {
                out.push(message_chunk(&format!(
                    "\n[{from} hands over to {to}: {reason}]\n"
                )));
                if agent == self.root {
                    out.push(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(
                        to.clone(),
                    )));
                }
            }
            _ => {}
        }
        for update in out {
            self.send(&session, update);
        }
    }

    /// The whole board as the plan (ACP replaces the plan with each update), each entry
    /// naming its task's owner and lease.
    fn plan(&mut self, task: &Task) {
        self.tasks.insert(task.id.clone(), task.clone());
        let entries = self
            .tasks
            .values()
            .filter(|t| t.status != TaskStatus::Cancelled)
            .map(|t| self.plan_entry(t))
            .collect();
        self.send(&self.session_id, SessionUpdate::Plan(Plan::new(entries)));
    }
}

/// Text of the agent's message, streamed.
pub(super) fn message_chunk(text: &str) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::from(text)))
}

fn call_update(call_id: &str, fields: ToolCallUpdateFields) -> SessionUpdate {
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(call_id.to_string(), fields))
}

/// A message between a worker's session and its supervisor's (its task, its result).
fn session_message(id: String, from: &str, to: &str, text: impl Into<String>) -> SessionUpdate {
    SessionUpdate::SessionMessage(
        SessionMessage::new(id)
            .sender_session_id(SessionId::from(from.to_string()))
            .recipient_session_id(SessionId::from(to.to_string()))
            .content(vec![ContentBlock::from(text.into())]),
    )
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
