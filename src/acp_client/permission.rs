//! The agent's `session/request_permission`, put to squad as a question with a typed
//! answer (the runtime's agent workers put it through squad's approval flow, labelled with
//! the worker) and given back to the agent as the option of the kind that answer names,
//! never by position or name.

use super::updates::ToolDetail;
use agent_client_protocol::v1::schema::{
    PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SelectedPermissionOutcome,
};
use futures::future::BoxFuture;
use std::sync::Arc;

/// What the agent asks to do.
#[derive(Clone, Debug, PartialEq)]
pub struct PermissionAsk {
    pub tool_call_id: String,
    pub title: Option<String>,
    /// The call's kind (`edit`, `execute`...), where the request says.
    pub kind: Option<String>,
    /// What the request itself says the call acts on (the call's earlier updates may say
    /// more).
    pub detail: ToolDetail,
    /// The kinds of answer it offers (`allow_once`, `reject_once`...).
    pub offered: Vec<String>,
}

/// squad's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    AllowOnce,
    AllowAlways,
    RejectOnce,
    RejectAlways,
    /// No answer: the turn is being cancelled.
    Cancel,
}

/// Who answers the agent's permission requests.
pub type Permissions = Arc<dyn Fn(PermissionAsk) -> BoxFuture<'static, Decision> + Send + Sync>;

fn kind_name(kind: &PermissionOptionKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn kind_name_of(kind: &agent_client_protocol::v1::schema::ToolKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

pub(super) fn ask_of(request: &RequestPermissionRequest) -> PermissionAsk {
    PermissionAsk {
        tool_call_id: request.tool_call.tool_call_id.0.to_string(),
        title: request.tool_call.fields.title.clone(),
        kind: request.tool_call.fields.kind.as_ref().map(kind_name_of),
        detail: ToolDetail::of(&request.tool_call.fields),
        offered: request.options.iter().map(|o| kind_name(&o.kind)).collect(),
    }
}

/// The answer for the agent: the option of the decided kind; a reject where the agent
/// offers only the other reject; cancelled when nothing fits.
pub(super) fn response(
    request: &RequestPermissionRequest,
    decision: Decision,
) -> RequestPermissionResponse {
    use PermissionOptionKind as K;
    let kinds: &[K] = match decision {
        Decision::AllowOnce => &[K::AllowOnce],
        Decision::AllowAlways => &[K::AllowAlways, K::AllowOnce],
        Decision::RejectOnce => &[K::RejectOnce, K::RejectAlways],
        Decision::RejectAlways => &[K::RejectAlways, K::RejectOnce],
        Decision::Cancel => &[],
    };
    let chosen = kinds.iter().find_map(|kind| {
        request
            .options
            .iter()
            .find(|o| o.kind == *kind)
            .map(|o| o.option_id.clone())
    });
    let outcome = match chosen {
        Some(id) => RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id)),
        None => RequestPermissionOutcome::Cancelled,
    };
    RequestPermissionResponse::new(outcome)
}
