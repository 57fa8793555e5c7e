//! A worker's first request, built by the session the way its requests will be built
//! (`Session::request_from`) before the worker exists, and sized.

use super::{Draft, FirstRequest};
use crate::context::estimate_item;
use crate::protocol::{AgentId, HistoryItem};
use crate::runtime::session::Session;
use crate::runtime::team::RequestView;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// Builds `draft`'s first request as `caller`'s worker would send it, and sizes it.
pub fn first_request(session: &Session, caller: AgentId, draft: &Draft<'_>) -> FirstRequest {
    let card = session.team.card(caller);
    let view = RequestView {
        role: draft.role.name.clone(),
        model: draft.model.to_string(),
        tools: draft.tools.iter().cloned().collect(),
        history: Arc::new(vec![HistoryItem::user(draft.first_message)]),
        depth: card.as_ref().map_or(1, |c| c.depth + 1),
        parent_role: card.map(|c| c.role),
        instructions: draft.instructions.map(str::to_string),
    };
    let tools: Arc<[String]> = view.tools.clone();
    let Some(setup) = session.request_from(view, &tools) else {
        return FirstRequest::message_only(draft.first_message);
    };
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (&setup.request.model, &setup.request.system_prompt, &*tools).hash(&mut h);
    let history: u64 = setup.request.history.iter().map(estimate_item).sum();
    FirstRequest {
        tokens: setup.fixed_tokens + history,
        prefix_tokens: setup.fixed_tokens,
        prefix: h.finish(),
    }
}
