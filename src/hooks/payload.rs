//! The one JSON object a hook reads on stdin. The field names are Claude Code's
//! (`session_id`, `cwd`, `hook_event_name`, `tool_name`, `tool_input`, `tool_response`,
//! `stop_hook_active`), so scripts written for its hooks work; squad adds `agent_id` and
//! `role`, and what the event is about (`result`, `task`, `last_message`).

use super::HookEvent;
use serde::Serialize;
use serde_json::Value;
use std::path::Path;

#[derive(Debug, Serialize)]
pub struct Payload<'a> {
    pub session_id: &'a str,
    pub cwd: &'a Path,
    pub hook_event_name: &'static str,
    pub agent_id: String,
    pub role: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_input: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_response: Option<Value>,
    /// `stop`: the agent already goes on because a stop hook asked it to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_hook_active: Option<bool>,
    /// `stop`: what the agent said last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_message: Option<String>,
    /// `agent_stop`: the worker's result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// `task_completed`: the task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<Value>,
}

impl<'a> Payload<'a> {
    pub fn new(
        event: HookEvent,
        session_id: &'a str,
        cwd: &'a Path,
        agent_id: String,
        role: &'a str,
    ) -> Self {
        Self {
            session_id,
            cwd,
            hook_event_name: event.claude_name(),
            agent_id,
            role,
            tool_name: None,
            tool_input: None,
            tool_response: None,
            stop_hook_active: None,
            last_message: None,
            result: None,
            task: None,
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{}".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_post_tool_use_payload_carries_claude_codes_field_names() {
        let input = serde_json::json!({"command": "ls"});
        let mut p = Payload::new(
            HookEvent::PostToolUse,
            "s1",
            Path::new("/ws"),
            "a1".into(),
            "implementer",
        );
        p.tool_name = Some("run_command".into());
        p.tool_input = Some(input);
        p.tool_response = Some(serde_json::json!({"output": "x", "is_error": false}));
        let v: Value = serde_json::from_str(&p.to_json()).unwrap();
        assert_eq!(v["hook_event_name"], "PostToolUse");
        assert_eq!(v["session_id"], "s1");
        assert_eq!(v["cwd"], "/ws");
        assert_eq!(v["tool_name"], "run_command");
        assert_eq!(v["tool_input"]["command"], "ls");
        assert_eq!(v["tool_response"]["output"], "x");
        assert_eq!(v["role"], "implementer");
        assert!(v.get("task").is_none());
    }
}
