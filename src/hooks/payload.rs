//! The one JSON object a hook reads on stdin. The field names are Claude Code's
//! (`session_id`, `transcript_path`, `cwd`, `permission_mode`, `hook_event_name`,
//! `tool_name`, `tool_input`, `tool_response`, `prompt`, `stop_hook_active`…) and so are the
//! tool names and arguments (`Bash` and `command`, `Edit` and an absolute `file_path`, see
//! `crate::tools::claude`), so scripts written for its hooks work unchanged; squad's own
//! names stay beside them (`squad_tool_name`, `squad_tool_input`), with `agent_id`, `role`
//! and what the event is about (`result`, `task`, `last_message`).

use super::HookEvent;
use serde::Serialize;
use serde_json::Value;
use std::path::Path;

#[derive(Debug, Serialize)]
pub struct Payload<'a> {
    pub session_id: &'a str,
    /// The session's log (squad's JSONL events, not Claude's transcript format).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transcript_path: Option<&'a Path>,
    pub cwd: &'a Path,
    /// Claude Code's name for the approval policy (`default`, `bypassPermissions`, `plan`).
    pub permission_mode: &'a str,
    pub hook_event_name: &'static str,
    pub agent_id: String,
    pub role: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_input: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_response: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub squad_tool_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub squad_tool_input: Option<Value>,
    /// `user_prompt_submit`: the user's message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// `session_start`: `startup`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<&'static str>,
    /// `stop`: the agent already goes on because a stop hook asked it to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_hook_active: Option<bool>,
    /// `stop`: what the agent said last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_message: Option<String>,
    /// `agent_stop`: the worker's result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// `task_created`, `task_completed`: the task, as squad's board holds it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<Value>,
    /// `task_created`, `task_completed`: Claude Code's names for the task's id, title and
    /// description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_subject: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_description: Option<String>,
    /// The team hooks: the worker (its spawn name, else its id) and the team (the
    /// session's id).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub teammate_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub team_name: Option<String>,
    /// `session_end`: why (`prompt_input_exit`, `other`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
    /// `pre_compact`: `manual` (`/compact`) or `auto`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger: Option<&'static str>,
    /// `pre_compact`: the user's instructions for the summary (squad takes none: empty).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub custom_instructions: Option<&'static str>,
    /// `notification`: what the user is waited on for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `notification`: `permission_prompt` or `elicitation_dialog`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notification_type: Option<&'static str>,
}

/// What every payload of a session shares.
#[derive(Clone, Debug)]
pub struct SessionFacts {
    pub session_id: String,
    pub transcript_path: Option<std::path::PathBuf>,
    pub permission_mode: &'static str,
}

impl<'a> Payload<'a> {
    pub fn new(
        event: HookEvent,
        session: &'a SessionFacts,
        cwd: &'a Path,
        agent_id: String,
        role: &'a str,
    ) -> Self {
        Self {
            session_id: &session.session_id,
            transcript_path: session.transcript_path.as_deref(),
            cwd,
            permission_mode: session.permission_mode,
            hook_event_name: event.claude_name(),
            agent_id,
            role,
            tool_name: None,
            tool_input: None,
            tool_response: None,
            squad_tool_name: None,
            squad_tool_input: None,
            prompt: None,
            source: None,
            stop_hook_active: None,
            last_message: None,
            result: None,
            task: None,
            task_id: None,
            task_subject: None,
            task_description: None,
            teammate_name: None,
            team_name: None,
            reason: None,
            trigger: None,
            custom_instructions: None,
            message: None,
            notification_type: None,
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
        let session = SessionFacts {
            session_id: "s1".into(),
            transcript_path: Some("/data/s1.jsonl".into()),
            permission_mode: "default",
        };
        let mut p = Payload::new(
            HookEvent::PostToolUse,
            &session,
            Path::new("/ws"),
            "a1".into(),
            "implementer",
        );
        p.tool_name = Some("Bash".into());
        p.tool_input = Some(input);
        p.tool_response = Some(serde_json::json!({"output": "x", "is_error": false}));
        let v: Value = serde_json::from_str(&p.to_json()).unwrap();
        assert_eq!(v["hook_event_name"], "PostToolUse");
        assert_eq!(v["session_id"], "s1");
        assert_eq!(v["cwd"], "/ws");
        assert_eq!(v["tool_name"], "Bash");
        assert_eq!(v["transcript_path"], "/data/s1.jsonl");
        assert_eq!(v["permission_mode"], "default");
        assert_eq!(v["tool_input"]["command"], "ls");
        assert_eq!(v["tool_response"]["output"], "x");
        assert_eq!(v["role"], "implementer");
        assert!(v.get("task").is_none());
    }
}
