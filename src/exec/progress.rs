//! Human progress lines on stderr for `exec` text mode.

use crate::protocol::{AgentId, ApprovalAction, Event, EventKind};
use crate::runtime::{agent_tools::describe_result, clip};
use std::collections::HashMap;
use std::io::Write;

pub struct Progress {
    root: AgentId,
    roles: HashMap<AgentId, String>,
}

impl Progress {
    pub fn new(root: AgentId) -> Self {
        Self {
            root,
            roles: HashMap::new(),
        }
    }

    fn who(&self, id: AgentId) -> String {
        let role = self.roles.get(&id).map_or("agent", String::as_str);
        if id == self.root {
            role.to_string()
        } else {
            format!("{role} {}", id.short())
        }
    }

    pub fn show(&mut self, event: &Event, out: &mut impl Write) {
        let id = event.agent_id;
        let line = match &event.kind {
            EventKind::AgentSpawned {
                role,
                task,
                parent_id,
                ..
            } => {
                self.roles.insert(id, role.clone());
                parent_id.map(|_| format!("+ spawned {} — {}", self.who(id), clip(task, 100)))
            }
            EventKind::Handoff { from, to, reason } => {
                self.roles.insert(id, to.clone());
                Some(format!("⇄ {from} → {to}: {reason}"))
            }
            EventKind::ToolCallBegin {
                name, arguments, ..
            } => Some(format!(
                "→ [{}] {name} {}",
                self.who(id),
                key_argument(arguments)
            )),
            EventKind::ToolCallEnd {
                name,
                output,
                is_error: true,
                ..
            } => Some(format!(
                "  ✗ {name}: {}",
                clip(output.lines().next().unwrap_or(""), 200)
            )),
            EventKind::Retrying {
                attempt,
                max_attempts,
                delay_ms,
                reason,
            } => Some(format!(
                "  … [{}] retrying ({attempt}/{max_attempts}) in {delay_ms} ms: {reason}",
                self.who(id)
            )),
            EventKind::Error { message } => Some(format!("! [{}] {message}", self.who(id))),
            EventKind::ApprovalRequested { tool, action, .. } => Some(format!(
                "? [{}] {tool} needs approval: {}",
                self.who(id),
                match action {
                    ApprovalAction::Command { command } => command.clone(),
                    ApprovalAction::FileChange { path, .. } => path.clone(),
                    ApprovalAction::Spawn { role, .. } => format!("spawn {role}"),
                }
            )),
            EventKind::ResultReturned { result, .. } => Some(format!(
                "✓ [{}] result — {}",
                self.who(id),
                describe_result(result)
            )),
            EventKind::AgentStatus {
                status,
                reason: Some(reason),
                ..
            } => Some(format!("  [{}] {status}: {reason}", self.who(id))),
            _ => None,
        };
        if let Some(line) = line {
            let _ = writeln!(out, "{line}");
        }
    }
}

/// The argument that says most about a call (a path, a command, a role).
pub fn key_argument(arguments: &str) -> String {
    let Ok(serde_json::Value::Object(map)) = serde_json::from_str::<serde_json::Value>(arguments)
    else {
        return clip(arguments, 80);
    };
    for key in [
        "path",
        "command",
        "pattern",
        "role_name",
        "agent_id",
        "target_agent",
    ] {
        if let Some(v) = map.get(key).and_then(|v| v.as_str()) {
            return clip(v, 100);
        }
    }
    String::new()
}
