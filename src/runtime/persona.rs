//! Switching the session's persona: a `handoff_to` from the model, `/role` from the user,
//! or `--role` on resume.

use super::engine::Engine;
use crate::protocol::{EventKind, HistoryItem};

/// Makes `to` the active persona: a handoff item in the transcript (the one record of it)
/// and, from the next model call, its prompt, tools and model.
pub fn switch_persona(
    engine: &Engine,
    to: &str,
    reason: &str,
    context: &str,
) -> Result<String, String> {
    let root = engine.root();
    let Some(role) = engine.role(to) else {
        let message = format!(
            "unknown role `{to}`; known roles: {}",
            engine.roles.names().join(", ")
        );
        engine.team.emit(
            root,
            EventKind::Error {
                message: message.clone(),
            },
        );
        return Err(message);
    };
    let model = role.model(&engine.config);
    let tools = engine.tools.tools_for_model(role, false, None, &model);
    let from = engine.team.switch_root(role.name.clone(), tools, model);
    engine.announce_sandbox(root);
    engine.team.push_item(
        root,
        HistoryItem::Handoff {
            from,
            to: role.name.clone(),
            reason: reason.to_string(),
            context: context.to_string(),
        },
    );
    Ok(role.name.clone())
}
