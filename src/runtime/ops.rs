//! Serving the front end's requests (`Op`s) for the life of the session: the session's
//! own here (messages, the persona, the model, files, commands, the user's control of the
//! team's agents); every other is heard by the policies, and the one that owns it serves
//! it (`Policy::on_op`: pause, budget, goal, isolation, checkpoint).

use super::cx::Policies;
use super::policies::hooks::layer::HooksPolicy;
use super::policies::isolation::IsolationPolicy;
use super::refused::Refused;
use super::session::Session;
use super::team::{AgentInput, Steer};
use crate::protocol::{AgentId, AgentStatus, EventKind, Op};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Why an agent rests `interrupted`, as the front ends show it.
pub const INTERRUPTED_REASON: &str = "squad stopped while it was at work";

pub async fn serve_ops(
    session: Arc<Session>,
    policies: Arc<Policies>,
    mut ops: mpsc::UnboundedReceiver<Op>,
) {
    while let Some(op) = ops.recv().await {
        match op {
            Op::Shutdown => {
                shut_down(&session, &policies).await;
                break;
            }
            // The one op that starts agents: it needs the policies they run with.
            Op::Review { target } => super::review::serve(&session, &policies, target),
            Op::Batch { spec } => super::batch::serve(&session, &policies, *spec),
            op => serve(&session, &policies, op),
        }
    }
    // Also when the front end just went away.
    session.tools.mcp().shutdown().await;
}

/// One request; what it cannot do is said as an error on the agent it named.
fn serve(session: &Arc<Session>, policies: &Arc<Policies>, op: Op) {
    let root = session.root();
    let refused = match op {
        Op::UserMessage { to, text } => {
            remember_prompt(session, &text);
            let text = crate::workspace::attach_mentions(&session.workspace, &text);
            let target = to.unwrap_or(root);
            deliver_user_message(session, target, text)
                .err()
                .map(|e| (target, e.to_string()))
        }
        Op::Approval {
            request_id,
            decision,
        } => {
            session.gate.resolve(request_id, decision);
            None
        }
        Op::Answer { request_id, answer } => {
            session.questions.answer(request_id, answer);
            None
        }
        Op::SwitchPersona { role } => switch(session, role).err().map(|e| (root, e.to_string())),
        op @ (Op::SaveRole { .. } | Op::ListFiles | Op::ListModels | Op::RunCommand { .. }) => {
            answer(session, op);
            None
        }
        Op::SetModel { model } => super::settings::set_model(session, model)
            .err()
            .map(|e| (root, e.to_string())),
        Op::SetApproval { approval } => super::settings::set_approval(session, approval)
            .err()
            .map(|e| (root, e.to_string())),
        op @ (Op::Interrupt { .. }
        | Op::Despawn { .. }
        | Op::Compact { .. }
        | Op::Continue { .. }) => control(session, &op),
        Op::DecidePlan {
            agent_id,
            approve,
            reason,
        } => (session.plans)
            .decide(&session.team, agent_id, approve, &reason, None)
            .err()
            .map(|e| (root, e.to_string())),
        Op::SetCoordinateOnly { on } => {
            session.plans.set_coordinate_only(&session.team, on, true);
            None
        }
        // Pause, resume, stop, /budget, /goal, diff, merge, undo, rewind: the policies'.
        other => {
            let refused = policies.on_op(session, &other);
            refused.into_iter().next().map(|e| (root, e.to_string()))
        }
    };
    if let Some((agent, message)) = refused {
        session.team.emit(agent, EventKind::Error { message });
    }
}

/// Requests the core answers with an event of its own (or an error), off the ops loop
/// where they take a while.
fn answer(session: &Arc<Session>, op: Op) {
    match op {
        Op::SaveRole { agent_id, name } => super::save_role::serve(session, agent_id, &name),
        Op::ListFiles => list_files(session),
        Op::ListModels => super::settings::list_models(session),
        Op::RunCommand { command } => super::user_command::serve(session, command),
        _ => {}
    }
}

/// The user's control of the team's agents: interrupt, cancel, compact, continue.
/// Returns what it cannot do, and on which agent.
fn control(session: &Session, op: &Op) -> Option<(AgentId, String)> {
    let team = &session.team;
    let root = session.root();
    match *op {
        Op::Interrupt { agent_id } => {
            team.interrupt(agent_id);
            None
        }
        Op::Despawn { agent_id } if agent_id == root => Some((
            agent_id,
            "the active persona cannot be cancelled; use Esc to interrupt its turn".into(),
        )),
        Op::Despawn { agent_id } => {
            team.cancel_subtree(agent_id, "cancelled by the user");
            None
        }
        Op::Compact { agent_id } => (!team.deliver(agent_id, AgentInput::Compact)).then(|| {
            let why = "this agent has stopped; there is nothing to compact";
            (agent_id, why.to_string())
        }),
        Op::Continue { agent_id } => {
            continue_agents(session, agent_id);
            None
        }
        _ => None,
    }
}

/// The user's switch of persona, to a role the session knows.
fn switch(session: &Session, role: String) -> Result<(), Refused> {
    if session.role(&role).is_none() {
        let known = session.roles.names().join(", ");
        return Err(Refused::UnknownRole { role, known });
    }
    session
        .team
        .deliver(session.root(), AgentInput::SwitchPersona(role));
    Ok(())
}

/// Keeps what the person typed for recall in later sessions (where there is a history).
fn remember_prompt(session: &Session, text: &str) {
    if let Some(history) = &session.prompts {
        history.append(text);
    }
}

/// Off the ops loop: a large tree takes a while to walk.
fn list_files(session: &Arc<Session>) {
    let session = session.clone();
    tokio::spawn(async move {
        let root = session.workspace.root().to_path_buf();
        let max = crate::workspace::MAX_LISTED;
        let walk = tokio::task::spawn_blocking(move || crate::workspace::list_files(&root, max));
        let paths = walk.await.unwrap_or_default();
        session
            .team
            .emit(session.root(), EventKind::Files { paths });
    });
}

/// How long shutdown lets agents write the results of calls it cut short.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// Continues `only`, or every agent read back `interrupted`; says so when there is none.
fn continue_agents(session: &Session, only: Option<AgentId>) {
    let team = &session.team;
    let root = session.root();
    let targets: Vec<AgentId> = match only {
        Some(id) => vec![id],
        None => team.with_status(AgentStatus::Interrupted),
    };
    let mut continued = 0;
    for id in &targets {
        if team.status(*id) == Some(AgentStatus::Interrupted)
            && team.deliver(*id, AgentInput::Continue)
        {
            continued += 1;
        }
    }
    if only.is_none() {
        continued += team.wake_for_owed_mail();
    }
    if continued == 0 {
        let message = match only {
            Some(id) => format!(
                "agent {} was not interrupted: there is nothing to continue (send it a message instead)",
                id.short()
            ),
            None => "no agent was interrupted: there is nothing to continue".to_string(),
        };
        team.emit(only.unwrap_or(root), EventKind::Error { message });
        team.announce_if_idle();
    }
}

/// Ends the session so that it can be resumed: every call in flight is cut short and
/// gets its result, agents that had work under way are marked `interrupted` (the log
/// says so, and `--resume` offers to continue them), MCP servers stop, and the summary
/// is the last event. A pause is kept: the session comes back paused.
async fn shut_down(session: &Session, policies: &Policies) {
    let team = &session.team;
    let root = session.root();
    let busy = team.with_status_where(|s| !s.is_idle());
    let isolation = policies.get::<IsolationPolicy>().map(|p| &p.isolation);
    // Workers stopping now are not despawned: their worktrees stay for a resume.
    if let Some(iso) = isolation {
        iso.begin_closing();
    }
    team.cancel_all();
    session.agent_tasks.close();
    if tokio::time::timeout(SHUTDOWN_GRACE, session.agent_tasks.wait())
        .await
        .is_err()
    {
        tracing::warn!("agents still busy {SHUTDOWN_GRACE:?} after shutdown began");
    }
    for id in busy {
        team.set_status(
            id,
            AgentStatus::Interrupted,
            Some(INTERRUPTED_REASON.into()),
        );
    }
    if let Some(iso) = isolation {
        iso.close(&session.team).await;
    }
    // Placed workers' containers and roots there go (`policies/placement`).
    if let Some(placed) = policies.get::<super::policies::placement::PlacementPolicy>() {
        placed.0.close_all().await;
    }
    // The user's `session_end` hooks, after every agent stopped.
    if let Some(hooks) = policies.get::<HooksPolicy>() {
        let cancel = tokio_util::sync::CancellationToken::new();
        let at = super::policies::hooks::service::Caller {
            team,
            agent: root,
            role: team.role(root).unwrap_or_default(),
            root: session.workspace_for(root),
            cancel: &cancel,
        };
        hooks.0.session_end(&at).await;
    }
    // Servers stop before the last event: a front end may exit on it.
    session.tools.mcp().shutdown().await;
    let (agents, totals) = team.summary();
    let (quotes, waste) = team.events().spend(|s| (s.quote_vs_actual(), s.waste()));
    let summary = EventKind::Summary {
        agents,
        totals,
        quotes,
        waste,
    };
    team.events().emit_last(root, summary);
}

/// The user's message to an agent: the root any time (queued if busy); a worker the way
/// `speak_to_agent` does, but not when it failed or was cancelled.
fn deliver_user_message(session: &Session, target: AgentId, text: String) -> Result<(), Refused> {
    let team = &session.team;
    let status = team
        .status(target)
        .ok_or_else(|| Refused::NoAgent(target.to_string()))?;
    if target != session.root() && team.release_if_due(target, std::time::Instant::now()) {
        return Err(Refused::Released);
    }
    if target != session.root() && matches!(status, AgentStatus::Failed | AgentStatus::Cancelled) {
        return Err(Refused::Settled(status));
    }
    // Mid-turn, it is taken up at the turn's next model call; otherwise it starts a turn.
    let Err(steer) = team.steer(target, Steer { text, taken: None }) else {
        return Ok(());
    };
    if !team.deliver(
        target,
        AgentInput::Message {
            text: steer.text,
            reply: None,
        },
    ) {
        return Err(Refused::Stopped);
    }
    Ok(())
}
