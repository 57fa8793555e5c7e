//! Serving the front end's requests (`Op`s) for the life of the session.

use super::engine::Engine;
use super::team::AgentInput;
use crate::protocol::{AgentId, AgentStatus, EventKind, Op};
use std::sync::Arc;
use tokio::sync::mpsc;

pub async fn serve_ops(engine: Arc<Engine>, mut ops: mpsc::UnboundedReceiver<Op>) {
    let team = &engine.team;
    let root = engine.root();
    while let Some(op) = ops.recv().await {
        match op {
            Op::UserMessage { to, text } => {
                let target = to.unwrap_or(root);
                if let Err(message) = deliver_user_message(&engine, target, text) {
                    team.emit(target, EventKind::Error { message });
                }
            }
            Op::Approval {
                request_id,
                decision,
            } => {
                engine.gate.resolve(request_id, decision);
            }
            Op::Answer { request_id, answer } => {
                engine.questions.answer(request_id, answer);
            }
            Op::Interrupt { agent_id } => team.interrupt(agent_id),
            Op::Despawn { agent_id } => {
                if agent_id == root {
                    team.emit(
                        agent_id,
                        EventKind::Error {
                            message: "the active persona cannot be cancelled; use Esc to interrupt its turn".into(),
                        },
                    );
                } else {
                    team.cancel_subtree(agent_id, "cancelled by the user");
                }
            }
            Op::Compact { agent_id } => {
                if !team.deliver(agent_id, AgentInput::Compact) {
                    team.emit(
                        agent_id,
                        EventKind::Error {
                            message: "this agent has stopped; there is nothing to compact".into(),
                        },
                    );
                }
            }
            Op::SwitchPersona { role } => {
                if engine.role(&role).is_none() {
                    let message = format!(
                        "unknown role `{role}`; known roles: {}",
                        engine.roles.names().join(", ")
                    );
                    team.emit(root, EventKind::Error { message });
                    continue;
                }
                team.deliver(root, AgentInput::SwitchPersona(role));
            }
            Op::Shutdown => {
                // Servers stop before the last event: a front end may exit on it.
                engine.tools.mcp().shutdown().await;
                let (agents, totals) = team.summary();
                team.events()
                    .emit_last(root, EventKind::Summary { agents, totals });
                team.cancel_all();
                break;
            }
        }
    }
    // Also when the front end just went away.
    engine.tools.mcp().shutdown().await;
}

/// The user's message to an agent: the root any time (queued if busy); a worker the way
/// `speak_to_agent` does, but not when it failed or was cancelled.
fn deliver_user_message(engine: &Engine, target: AgentId, text: String) -> Result<(), String> {
    let team = &engine.team;
    let status = team
        .status(target)
        .ok_or_else(|| format!("no agent {target} in this session"))?;
    if target != engine.root() && matches!(status, AgentStatus::Failed | AgentStatus::Cancelled) {
        return Err(format!(
            "this worker is {status} and cannot take messages; talk to the supervisor or spawn a new worker"
        ));
    }
    if !team.deliver(target, AgentInput::Message { text, reply: None }) {
        return Err("this agent has stopped and cannot take messages".to_string());
    }
    Ok(())
}
