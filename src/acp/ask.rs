//! Approvals and `ask_user` questions as `session/request_permission` requests; the
//! client's choice goes back to the runtime as `Op::Approval` / `Op::Answer`.

use super::rpc::Rpc;
use super::updates::{kind, text_content};
use crate::protocol::{ApprovalAction, ApprovalDecision, Op};
use agent_client_protocol::Error;
use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
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
    let call = ToolCallUpdate::new(
        call_id,
        ToolCallUpdateFields::new()
            .title(title)
            .kind(kind(tool))
            .status(ToolCallStatus::Pending)
            .content(vec![text_content(detail)]),
    );
    let options = vec![
        PermissionOption::new("allow_once", "Allow once", PermissionOptionKind::AllowOnce),
        PermissionOption::new(
            "allow_always",
            "Allow for this session",
            PermissionOptionKind::AllowAlways,
        ),
        PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
    ];
    let request = RequestPermissionRequest::new(session_id.to_string(), call, options);
    let rpc = rpc.clone();
    let ops = ops.clone();
    tokio::spawn(async move {
        let answer = rpc.request(request).await;
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
    let choices = options
        .iter()
        .enumerate()
        .map(|(i, o)| {
            PermissionOption::new(i.to_string(), o.as_str(), PermissionOptionKind::AllowOnce)
        })
        .collect();
    let call = ToolCallUpdate::new(
        format!("question-{request_id}"),
        ToolCallUpdateFields::new()
            .title(question)
            .kind(ToolKind::Think)
            .status(ToolCallStatus::Pending),
    );
    let request = RequestPermissionRequest::new(session_id.to_string(), call, choices);
    let rpc = rpc.clone();
    let ops = ops.clone();
    let options = options.to_vec();
    tokio::spawn(async move {
        let answer = rpc.request(request).await;
        let answer = selected(&answer)
            .and_then(|i| i.parse::<usize>().ok())
            .and_then(|i| options.get(i).cloned());
        let _ = ops.send(Op::Answer { request_id, answer });
    });
}

/// The option the client chose; `None` when it cancelled or failed.
fn selected(answer: &Result<RequestPermissionResponse, Error>) -> Option<&str> {
    match &answer.as_ref().ok()?.outcome {
        RequestPermissionOutcome::Selected(s) => Some(&s.option_id.0),
        _ => None,
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
