//! One session's event stream as ACP `session/update` notifications: the root's text as
//! agent message chunks, every tool call of the root as a tool call with its updates, the
//! task board as the plan, approvals and questions as permission requests. It also works
//! out how a prompt ended.

use super::rpc::Rpc;
use crate::protocol::{
    AgentId, ApprovalAction, ApprovalDecision, BudgetScope, Event, EventKind, HistoryItem, Op,
    Task, TaskStatus, TurnEnd, dollars,
};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::PathBuf;
use tokio::sync::mpsc;

/// How a prompt ended, in ACP's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    EndTurn,
    MaxTurnRequests,
    Refusal,
    Cancelled,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::EndTurn => "end_turn",
            Self::MaxTurnRequests => "max_turn_requests",
            Self::Refusal => "refusal",
            Self::Cancelled => "cancelled",
        }
    }
}

/// Follows one squad session for the client.
pub struct Translator {
    pub session_id: String,
    root: AgentId,
    /// The workspace root: ACP's locations are absolute paths.
    workspace: PathBuf,
    rpc: Rpc,
    ops: mpsc::UnboundedSender<Op>,
    /// The root's text streamed since its last assistant item (so the item is not sent twice).
    streamed: bool,
    /// Tool calls of the root announced and not finished: id → tool name.
    open_calls: BTreeMap<String, String>,
    /// The board, for the plan.
    tasks: BTreeMap<String, Task>,
    /// What the current prompt has seen.
    pub turn: TurnState,
}

/// What decides a prompt's stop reason.
#[derive(Debug, Default)]
pub struct TurnState {
    pub started: bool,
    pub cancelled: bool,
    last_end: Option<TurnEnd>,
    refused: Option<String>,
    last_error: Option<String>,
}

impl TurnState {
    /// The stop reason; a refusal's reason is said in the last message first.
    fn stop_reason(&self) -> (StopReason, Option<String>) {
        if self.cancelled {
            return (StopReason::Cancelled, None);
        }
        if let Some(why) = &self.refused {
            return (StopReason::Refusal, Some(why.clone()));
        }
        match self.last_end {
            Some(TurnEnd::MaxIterations) => (StopReason::MaxTurnRequests, self.last_error.clone()),
            Some(TurnEnd::Cancelled | TurnEnd::Interrupted) => (StopReason::Cancelled, None),
            Some(TurnEnd::Error) => (
                StopReason::Refusal,
                Some(
                    self.last_error
                        .clone()
                        .unwrap_or_else(|| "the turn failed".into()),
                ),
            ),
            _ => (StopReason::EndTurn, None),
        }
    }
}

impl Translator {
    pub fn new(
        session_id: String,
        root: AgentId,
        workspace: PathBuf,
        rpc: Rpc,
        ops: mpsc::UnboundedSender<Op>,
    ) -> Self {
        Self {
            session_id,
            root,
            workspace,
            rpc,
            ops,
            streamed: false,
            open_calls: BTreeMap::new(),
            tasks: BTreeMap::new(),
            turn: TurnState::default(),
        }
    }

    fn update(&self, update: Value) {
        self.rpc.update(&self.session_id, update);
    }

    fn say(&self, text: &str) {
        self.update(json!({
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": text},
        }));
    }

    /// Replays one event of a loaded session's log: its conversation only.
    pub fn replay(&mut self, event: &Event) {
        if event.agent_id != self.root {
            return;
        }
        match &event.kind {
            EventKind::ItemAdded {
                item: HistoryItem::User { text },
            } => self.update(json!({
                "sessionUpdate": "user_message_chunk",
                "content": {"type": "text", "text": text},
            })),
            EventKind::ItemAdded { item } => self.item(item),
            EventKind::TaskUpdated { task } => self.plan(task),
            _ => {}
        }
    }

    /// One live event. Returns the stop reason when the prompt under way has ended: the
    /// whole tree is idle after the root's turn started.
    pub fn event(&mut self, event: &Event) -> Option<StopReason> {
        let root = event.agent_id == self.root;
        match &event.kind {
            EventKind::TurnStarted if root => self.turn.started = true,
            EventKind::TurnFinished { end } if root => self.turn.last_end = Some(*end),
            EventKind::TextDelta { delta } if root => {
                self.streamed = true;
                self.say(delta);
            }
            EventKind::ItemAdded { item } if root => self.item(item),
            EventKind::ToolCallBegin { call_id } if self.open_calls.contains_key(call_id) => {
                self.update(json!({
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": call_id,
                    "status": "in_progress",
                }));
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
            } => self.ask_approval(event.agent_id, *request_id, tool, action),
            EventKind::QuestionAsked {
                request_id,
                question,
                options,
                ..
            } => self.ask_question(*request_id, question, options),
            EventKind::Idle if self.turn.started => {
                let (reason, why) = self.turn.stop_reason();
                if let Some(why) = why {
                    self.say(&format!("\n\nsquad stopped: {why}"));
                }
                self.turn = TurnState::default();
                return Some(reason);
            }
            _ => {}
        }
        None
    }

    /// A history item of the root: its text (unless streamed), its tool calls and results.
    fn item(&mut self, item: &HistoryItem) {
        match item {
            HistoryItem::Assistant { text, tool_calls } => {
                if !std::mem::replace(&mut self.streamed, false) && !text.trim().is_empty() {
                    self.say(text);
                }
                for call in tool_calls {
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
                    self.open_calls.insert(call.id.clone(), call.name.clone());
                    self.update(update);
                }
            }
            HistoryItem::ToolResult {
                call_id,
                output,
                is_error,
                ..
            } => {
                self.open_calls.remove(call_id);
                self.update(json!({
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": call_id,
                    "status": if *is_error { "failed" } else { "completed" },
                    "content": [{"type": "content", "content": {"type": "text", "text": output}}],
                }));
            }
            HistoryItem::Handoff {
                from, to, reason, ..
            } => {
                self.say(&format!("\n[{from} hands over to {to}: {reason}]\n"));
            }
            _ => {}
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
        self.update(json!({"sessionUpdate": "plan", "entries": entries}));
    }

    /// `session/request_permission` for an approval; the answer goes back as `Op::Approval`.
    fn ask_approval(&self, agent: AgentId, request_id: u64, tool: &str, action: &ApprovalAction) {
        // The call waiting for this is the root's open call of that tool; a worker's calls
        // are not shown, so its request gets a call of its own.
        let call_id = (agent == self.root)
            .then(|| {
                self.open_calls
                    .iter()
                    .rev()
                    .find(|(_, name)| name.as_str() == tool)
                    .map(|(id, _)| id.clone())
            })
            .flatten()
            .unwrap_or_else(|| format!("approval-{request_id}"));
        let (title, detail) = describe(tool, action);
        let params = json!({
            "sessionId": self.session_id,
            "toolCall": {
                "toolCallId": call_id,
                "title": title,
                "kind": kind(tool),
                "status": "pending",
                "content": [{"type": "content", "content": {"type": "text", "text": detail}}],
            },
            "options": [
                {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
                {"optionId": "allow_always", "name": "Allow for this session", "kind": "allow_always"},
                {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
            ],
        });
        let rpc = self.rpc.clone();
        let ops = self.ops.clone();
        tokio::spawn(async move {
            let answer = rpc.request("session/request_permission", params).await;
            let decision = match selected(&answer) {
                Some("allow_once") => ApprovalDecision::Approve,
                Some("allow_always") => ApprovalDecision::ApproveForSession,
                _ => ApprovalDecision::Deny,
            };
            let _ = ops.send(Op::Approval {
                request_id,
                decision,
            });
        });
    }

    /// An `ask_user` question with options goes through the permission request; one
    /// without options is declined, as `exec` does (ACP has no free-text request).
    fn ask_question(&self, request_id: u64, question: &str, options: &[String]) {
        if options.is_empty() {
            let _ = self.ops.send(Op::Answer {
                request_id,
                answer: None,
            });
            return;
        }
        let choices: Vec<Value> = options
            .iter()
            .enumerate()
            .map(|(i, o)| json!({"optionId": i.to_string(), "name": o, "kind": "allow_once"}))
            .collect();
        let params = json!({
            "sessionId": self.session_id,
            "toolCall": {
                "toolCallId": format!("question-{request_id}"),
                "title": question,
                "kind": "think",
                "status": "pending",
            },
            "options": choices,
        });
        let rpc = self.rpc.clone();
        let ops = self.ops.clone();
        let options = options.to_vec();
        tokio::spawn(async move {
            let answer = rpc.request("session/request_permission", params).await;
            let answer = selected(&answer)
                .and_then(|i| i.parse::<usize>().ok())
                .and_then(|i| options.get(i).cloned());
            let _ = ops.send(Op::Answer { request_id, answer });
        });
    }
}

/// The option the client chose; `None` when it cancelled or failed.
fn selected(answer: &Result<Value, super::rpc::RpcError>) -> Option<&str> {
    let outcome = answer.as_ref().ok()?.get("outcome")?;
    (outcome.get("outcome")?.as_str()? == "selected")
        .then(|| outcome.get("optionId")?.as_str())
        .flatten()
}

/// ACP's tool kind for a squad tool.
fn kind(tool: &str) -> &'static str {
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

/// The title and text of a permission request.
fn describe(tool: &str, action: &ApprovalAction) -> (String, String) {
    match action {
        ApprovalAction::Command { command } | ApprovalAction::SandboxedCommand { command, .. } => {
            (format!("Run `{command}`"), command.clone())
        }
        ApprovalAction::Escalation { command, reason } => (
            format!("Run `{command}` outside the sandbox"),
            reason.clone(),
        ),
        ApprovalAction::FileChange { path, diff } => (format!("Edit {path}"), diff.clone()),
        ApprovalAction::Patch { paths, diff } => {
            (format!("Patch {}", paths.join(", ")), diff.clone())
        }
        ApprovalAction::Spawn { role, task, .. } => (format!("Spawn a {role}"), task.clone()),
        ApprovalAction::McpTool {
            server,
            tool: name,
            arguments,
        } => (format!("{server}: {name}"), arguments.clone()),
        #[allow(unreachable_patterns)]
        _ => (tool.to_string(), String::new()),
    }
}
