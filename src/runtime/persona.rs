//! Switching the session's persona: a `handoff_to` from the model, `/role` from the user,
//! or `--role` on resume.

use super::refused::Refused;
use super::session::Session;
use crate::protocol::{EventKind, HistoryItem};

/// Makes `to` the active persona: a handoff item in the transcript (the one record of it)
/// and, from the next model call, its prompt, tools and model.
pub fn switch_persona(
    session: &Session,
    to: &str,
    reason: &str,
    context: &str,
) -> Result<String, Refused> {
    let root = session.root();
    let Some(role) = session.role(to) else {
        let refused = Refused::UnknownRole {
            role: to.to_string(),
            known: session.roles.names().join(", "),
        };
        let message = refused.to_string();
        session.team.emit(root, EventKind::Error { message });
        return Err(refused);
    };
    if let Some(why) = role.not_runnable() {
        let refused = Refused::AgentRole(why);
        let message = refused.to_string();
        session.team.emit(root, EventKind::Error { message });
        return Err(refused);
    }
    let model = (session.team.model_choice()).unwrap_or_else(|| role.model(&session.config));
    let tools = session.tools.tools_for_model(role, false, None, &model);
    let from = session.team.switch_root(role.name.clone(), tools, model);
    session.plans.follow_persona(&session.team, role);
    session.announce_sandbox(root);
    session.team.push_item(
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
