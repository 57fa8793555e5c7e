//! Approvals and `ask_user` questions as `session/request_permission` requests; the
//! client's choice goes back to the runtime as `Op::Approval` / `Op::Answer`.

use super::rpc::Rpc;
use super::tool_calls::{kind, text_content};
use crate::protocol::{ApprovalAction, ApprovalDecision, Op};
use agent_client_protocol::Error;
use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SessionUpdate, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
    ToolKind,
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
    // The call's own title and content (an edit's structured diff) stay as its
    // `tool_call` showed them; only what the call does not show is added.
    let mut fields = ToolCallUpdateFields::new()
        .kind(kind(tool, &serde_json::Value::Null))
        .status(ToolCallStatus::Pending);
    if let Some((title, detail)) = describe(action) {
        fields = fields.title(title).content(vec![text_content(detail)]);
    }
    let call = ToolCallUpdate::new(call_id.clone(), fields);
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
    let session_id = session_id.to_string();
    tokio::spawn(async move {
        let answer = rpc.request(request).await;
        let decision = match selected(&answer) {
            Some("allow_once") => ApprovalDecision::Approve,
            Some("allow_always") => ApprovalDecision::ApproveForSession,
            // Rejected, cancelled, or the client failed: nothing runs unapproved.
            _ => ApprovalDecision::Deny,
        };
        if decision != ApprovalDecision::Deny {
            // Granted: it runs now, no longer waits.
            let fields = ToolCallUpdateFields::new().status(ToolCallStatus::InProgress);
            rpc.update(
                &session_id,
                SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(call_id, fields)),
            );
        }
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

/// The title and text of a permission request that says more than the call itself: a
/// command to run outside the sandbox, and why. Every other request keeps the call's.
fn describe(action: &ApprovalAction) -> Option<(String, String)> {
    match action {
        ApprovalAction::Escalation { command, reason } => Some((
            format!("Run `{command}` outside the sandbox"),
            reason.clone(),
        )),
        ApprovalAction::Hook {
            command,
            source,
            files,
        } => {
            let mut text = format!(
                "A workspace hook ({source}) is new or changed since you approved it; it \
                 runs with your rights, outside the sandbox."
            );
            for (path, content) in files {
                text.push_str(&format!("\n\n{path}:\n{content}"));
            }
            Some((format!("Run the workspace hook `{command}`"), text))
        }
        _ => None,
    }
}
