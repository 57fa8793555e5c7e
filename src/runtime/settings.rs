//! `Op::SetModel` and `Op::SetApproval`: the user's switches for the rest of the session,
//! each told as a durable event so the front ends show it and a resume keeps it.

use super::refused::Refused;
use super::session::Session;
use crate::protocol::{ApprovalPolicy, EventKind};
use std::sync::Arc;

/// `/model` with no name: the models the server lists (`GET /models`, off the ops loop),
/// for the front end to offer; the front end never asks the server itself.
pub fn list_models(session: &Arc<Session>) {
    let session = session.clone();
    tokio::spawn(async move {
        let (models, error) = match session.model.list_models().await {
            Ok(models) => (models, None),
            Err(e) => (Vec::new(), Some(e.to_string())),
        };
        let answer = EventKind::Models { models, error };
        session.team.emit(session.root(), answer);
    });
}

/// `/model NAME`: the persona's model from its next call; a name the server does not
/// know fails that call, with the server's word.
pub fn set_model(session: &Session, model: String) -> Result<(), Refused> {
    let model = model.trim().to_string();
    if model.is_empty() || model.contains(char::is_whitespace) {
        return Err(Refused::ModelUsage);
    }
    session.team.choose_model(model.clone());
    session
        .team
        .emit(session.root(), EventKind::ModelSet { model });
    Ok(())
}

/// `/approval ask|auto|read-only`: every agent's policy, and new workers' after them.
/// `auto` needs the sandbox, as `--approval auto` does: without one, every command would
/// run with all of the user's rights, unasked.
pub fn set_approval(session: &Session, approval: ApprovalPolicy) -> Result<(), Refused> {
    let wanted = session.config.sandbox.mode != crate::config::SandboxMode::Off;
    if let Some(why) = &session.sandbox.support().unavailable
        && wanted
        && approval == ApprovalPolicy::Auto
    {
        return Err(Refused::NoSandbox(why.clone()));
    }
    session.team.set_policy_all(approval);
    session
        .team
        .emit(session.root(), EventKind::ApprovalSet { approval });
    Ok(())
}
