//! Approvals and `ask_user` questions as `session/request_permission` requests; the
//! client's choice goes back to the runtime as `Op::Approval` / `Op::Answer`.

use super::rpc::{Rpc, RpcError};
use super::updates::kind;
use crate::protocol::{ApprovalAction, ApprovalDecision, Op};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// Asks the client about an approval on the tool call `call_id` of `session_id`.
pub fn approval(
    rpc: &Rpc,
    ops: &mpsc::UnboundedSender<Op>,
    session_id: &str,
    call_id: String,
    request_id: u64,
    tool: &str,
    action: &ApprovalAction,
) {
    let (title, detail) = describe(tool, action);
    let params = json!({
        "sessionId": session_id,
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
    let rpc = rpc.clone();
    let ops = ops.clone();
    tokio::spawn(async move {
        let answer = rpc.request("session/request_permission", params).await;
        let decision = match selected(&answer) {
            Some("allow_once") => ApprovalDecision::Approve,
            Some("allow_always") => ApprovalDecision::ApproveForSession,
            // Rejected, cancelled, or the client failed: nothing runs unapproved.
            _ => ApprovalDecision::Deny,
        };
        let _ = ops.send(Op::Approval {
            request_id,
            decision,
        });
    });
}

/// An `ask_user` question with options goes through the permission request; one without
/// options is declined, as `exec` does (ACP has no free-text request).
pub fn question(
    rpc: &Rpc,
    ops: &mpsc::UnboundedSender<Op>,
    session_id: &str,
    request_id: u64,
    question: &str,
    options: &[String],
) {
    if options.is_empty() {
        let _ = ops.send(Op::Answer {
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
        "sessionId": session_id,
        "toolCall": {
            "toolCallId": format!("question-{request_id}"),
            "title": question,
            "kind": "think",
            "status": "pending",
        },
        "options": choices,
    });
    let rpc = rpc.clone();
    let ops = ops.clone();
    let options = options.to_vec();
    tokio::spawn(async move {
        let answer = rpc.request("session/request_permission", params).await;
        let answer = selected(&answer)
            .and_then(|i| i.parse::<usize>().ok())
            .and_then(|i| options.get(i).cloned());
        let _ = ops.send(Op::Answer { request_id, answer });
    });
}

/// The option the client chose; `None` when it cancelled or failed.
fn selected(answer: &Result<Value, RpcError>) -> Option<&str> {
    let outcome = answer.as_ref().ok()?.get("outcome")?;
    (outcome.get("outcome")?.as_str()? == "selected")
        .then(|| outcome.get("optionId")?.as_str())
        .flatten()
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
