//! Starting (or resuming) a session and serving the front end's `Op`s.

use super::agent::{NewAgent, spawn_agent_task};
use super::agent_tools;
use super::approval::ApprovalGate;
use super::events::EventSink;
use super::registry::{AgentInput, AgentStats, Registry};
use super::{SessionHandle, SessionInfo, Shared};
use crate::config::Config;
use crate::model::ModelClient;
use crate::protocol::{AgentId, AgentStatus, ApprovalPolicy, EventKind, HistoryItem, Op};
use crate::roles::RoleSet;
use crate::session::{SessionLog, SessionStore, read_events, replay};
use crate::tools::ToolRegistry;
use crate::workspace::Workspace;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::{Semaphore, mpsc};

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("cannot use workspace {path}: {source}")]
    Workspace {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Role(#[from] crate::roles::RoleError),
    #[error("{0}")]
    Store(#[from] crate::session::StoreError),
    #[error("cannot open the session log {path}: {source}")]
    Log {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("session log {0} holds no session to resume")]
    EmptyLog(PathBuf),
}

pub struct SessionOptions {
    pub config: Config,
    pub roles: RoleSet,
    pub workspace: PathBuf,
    /// Starting persona; on resume, `None` keeps the persona the session had.
    pub role: Option<String>,
    pub approval: ApprovalPolicy,
    /// Whether a front end can answer approval requests.
    pub can_ask: bool,
    pub model: Arc<dyn ModelClient>,
    pub tools: ToolRegistry,
    /// Where logs go; `None` keeps no log (and cannot resume).
    pub store: Option<SessionStore>,
    /// `last` or a session id.
    pub resume: Option<String>,
    /// On resume, send the old events to the front end first (the TUI redraws from them).
    pub replay_to_frontend: bool,
    /// Problems found while setting up (e.g. no API key) shown as the session's first errors.
    pub warnings: Vec<String>,
}

pub async fn start_session(opts: SessionOptions) -> Result<SessionHandle, RuntimeError> {
    let workspace = Workspace::new(&opts.workspace).map_err(|source| RuntimeError::Workspace {
        path: opts.workspace.clone(),
        source,
    })?;
    let (event_tx, event_rx) = mpsc::unbounded_channel();

    let resumed = match (&opts.resume, &opts.store) {
        (Some(which), Some(store)) => {
            let meta = store.resolve(which)?;
            let (events, _skipped) =
                read_events(&meta.path).map_err(|source| RuntimeError::Log {
                    path: meta.path.clone(),
                    source,
                })?;
            let session =
                replay(&events).ok_or_else(|| RuntimeError::EmptyLog(meta.path.clone()))?;
            Some((meta.path, events, session))
        }
        (Some(_), None) => None,
        _ => None,
    };

    let (session_id, root, first_seq) = match &resumed {
        Some((_, _, s)) => (s.session_id.clone(), s.root, s.last_seq),
        None => (new_session_id(), AgentId::new(), 0),
    };
    let log_path = opts.store.as_ref().map(|s| match &resumed {
        Some((path, _, _)) => path.clone(),
        None => s.path_for(&session_id),
    });
    let log = match &log_path {
        Some(p) => Some(SessionLog::open(p).map_err(|source| RuntimeError::Log {
            path: p.clone(),
            source,
        })?),
        None => None,
    };
    let sink = EventSink::new(log, first_seq, event_tx);
    if opts.replay_to_frontend
        && let Some((_, events, _)) = &resumed
    {
        for ev in events {
            sink.forward(ev.clone());
        }
    }

    let active_role = match (&opts.role, &resumed) {
        (Some(r), _) => r.clone(),
        (None, Some((_, _, s))) => s.active_role.clone(),
        (None, None) => "copilot".to_string(),
    };
    let role = opts.roles.require(&active_role)?.clone();
    let model_name = role.model(&opts.config);

    let shared = Arc::new(Shared {
        session_id: session_id.clone(),
        model_slots: Semaphore::new(opts.config.limits.max_concurrent_requests.max(1) as usize),
        config: opts.config,
        roles: opts.roles,
        model: opts.model,
        tools: opts.tools,
        workspace: Arc::new(workspace),
        events: sink,
        gate: ApprovalGate::new(opts.can_ask),
        registry: Registry::new(),
        root,
        spec_cache: Default::default(),
    });

    shared.events.emit(
        root,
        EventKind::SessionStarted {
            session_id: session_id.clone(),
            workspace: shared.workspace.root().to_path_buf(),
            model: model_name.clone(),
            role: role.name.clone(),
            approval: opts.approval,
            resumed: resumed.is_some(),
            roles: shared.roles.names(),
        },
    );
    for message in opts.warnings {
        shared.events.emit(root, EventKind::Error { message });
    }
    for warning in &shared.roles.warnings {
        shared.events.emit(
            root,
            EventKind::Error {
                message: format!("role file skipped: {warning}"),
            },
        );
    }

    match resumed {
        Some((_, _, session)) => restore_agents(&shared, session, opts.approval),
        None => {
            let tools = shared.tools_for(&role, false, None);
            spawn_agent_task(
                &shared,
                NewAgent {
                    id: root,
                    parent: None,
                    role: role.name.clone(),
                    model: model_name.clone(),
                    depth: 0,
                    task: String::new(),
                    policy: opts.approval,
                    tools,
                    history: Vec::new(),
                    status: AgentStatus::Inactive,
                    stats: AgentStats::default(),
                    first_message: None,
                    announce: true,
                },
            );
        }
    }
    // A resumed persona switch from the flag is recorded like any other.
    if let Some(current) = shared.registry.with(root, |a| a.role.clone())
        && current != role.name
    {
        let _ = switch_persona(&shared, &role.name, "chosen with --role on resume", "");
    }

    let (op_tx, op_rx) = mpsc::unbounded_channel();
    tokio::spawn(serve_ops(shared.clone(), op_rx));
    Ok(SessionHandle {
        ops: op_tx,
        events: event_rx,
        info: SessionInfo {
            session_id,
            workspace: shared.workspace.root().to_path_buf(),
            model: model_name,
            approval: opts.approval,
            role: role.name.clone(),
            root_agent: root,
            log_path,
        },
    })
}

fn new_session_id() -> String {
    format!(
        "{}-{}",
        chrono::Utc::now().format("%Y%m%d-%H%M%S"),
        &uuid::Uuid::new_v4().simple().to_string()[..6]
    )
}

/// Brings the logged agents back (root first), idle, with their histories.
fn restore_agents(
    shared: &Arc<Shared>,
    session: crate::session::ReplayedSession,
    policy: ApprovalPolicy,
) {
    for agent in session.agents {
        let is_root = agent.id == session.root;
        let role_name = if is_root {
            session.active_role.clone()
        } else {
            agent.role.clone()
        };
        let Some(role) = shared.role(&role_name).cloned() else {
            continue;
        };
        let ceiling = agent
            .parent_id
            .and_then(|p| shared.registry.with(p, |a| a.tools.clone()));
        let tools = shared.tools_for(&role, !is_root, ceiling.as_deref());
        let model = if is_root {
            role.model(&shared.config)
        } else {
            agent.model.clone()
        };
        spawn_agent_task(
            shared,
            NewAgent {
                id: agent.id,
                parent: agent.parent_id,
                role: role.name.clone(),
                model,
                depth: agent.depth,
                task: agent.task,
                policy,
                tools,
                history: agent.history,
                status: agent.status,
                stats: AgentStats {
                    prompt_tokens: agent.prompt_tokens,
                    completion_tokens: agent.completion_tokens,
                    cost_usd: agent.cost_usd,
                    ..AgentStats::default()
                },
                first_message: None,
                announce: false,
            },
        );
        shared.registry.with(agent.id, |a| a.result = agent.result);
    }
    // A worker's outcome was delivered if its supervisor's history carries a report of it
    // (a wait, a follow-up's reply or a fan-in notice names the worker's id); one that
    // finished just before the process ended is still owed.
    let mut agents = shared.registry.lock();
    let owed: Vec<(AgentId, bool)> = agents
        .values()
        .filter_map(|a| {
            let parent = agents.get(&a.parent?)?;
            let id = a.id.to_string();
            let reported = parent.history.iter().any(|item| match item {
                HistoryItem::ToolResult { name, output, .. } => {
                    matches!(name.as_str(), "wait_for_agents" | "speak_to_agent")
                        && output.contains(&id)
                }
                HistoryItem::Notice { text } => text.contains(&id),
                _ => false,
            });
            let finished = matches!(
                a.status,
                AgentStatus::Completed | AgentStatus::Inactive | AgentStatus::Failed
            );
            Some((a.id, !finished || reported))
        })
        .collect();
    for (id, delivered) in owed {
        if let Some(a) = agents.get_mut(&id) {
            a.delivered = delivered;
        }
    }
}

/// Makes `to` the active persona: a notice in the transcript, an event, and from the next
/// model call its prompt, tools and model.
pub fn switch_persona(
    shared: &Arc<Shared>,
    to: &str,
    reason: &str,
    context: &str,
) -> Result<String, String> {
    let Some(role) = shared.role(to).cloned() else {
        let message = format!(
            "unknown role `{to}`; known roles: {}",
            shared.roles.names().join(", ")
        );
        shared.events.emit(
            shared.root,
            EventKind::Error {
                message: message.clone(),
            },
        );
        return Err(message);
    };
    let tools = shared.tools_for(&role, false, None);
    let model = role.model(&shared.config);
    let from = shared
        .registry
        .with(shared.root, |a| {
            let from = std::mem::replace(&mut a.role, role.name.clone());
            a.tools = tools;
            a.model = model;
            from
        })
        .unwrap_or_default();
    shared.push_item(
        shared.root,
        HistoryItem::Handoff {
            from: from.clone(),
            to: role.name.clone(),
            reason: reason.to_string(),
            context: context.to_string(),
        },
    );
    shared.events.emit(
        shared.root,
        EventKind::Handoff {
            from,
            to: role.name.clone(),
            reason: reason.to_string(),
        },
    );
    Ok(role.name)
}

async fn serve_ops(shared: Arc<Shared>, mut ops: mpsc::UnboundedReceiver<Op>) {
    while let Some(op) = ops.recv().await {
        match op {
            Op::UserMessage { to, text } => {
                let target = to.unwrap_or(shared.root);
                if let Err(message) = deliver_user_message(&shared, target, text) {
                    shared.events.emit(target, EventKind::Error { message });
                }
            }
            Op::Approval {
                request_id,
                decision,
            } => {
                shared.gate.resolve(request_id, decision);
            }
            Op::Interrupt { agent_id } => {
                shared.registry.with(agent_id, |a| {
                    a.turn_cancel.cancel();
                    a.hold = true;
                });
                // Wake it if it rests waiting on workers, so it stops waiting.
                shared.registry.bump();
            }
            Op::Despawn { agent_id } => {
                if agent_id == shared.root {
                    shared.events.emit(
                        agent_id,
                        EventKind::Error {
                            message: "the active persona cannot be cancelled; use Esc to interrupt its turn".into(),
                        },
                    );
                } else {
                    agent_tools::cancel_agent(&shared, agent_id, "cancelled by the user");
                }
            }
            Op::SwitchPersona { role } => {
                if shared.role(&role).is_none() {
                    let message = format!(
                        "unknown role `{role}`; known roles: {}",
                        shared.roles.names().join(", ")
                    );
                    shared
                        .events
                        .emit(shared.root, EventKind::Error { message });
                    continue;
                }
                shared
                    .registry
                    .deliver(shared.root, AgentInput::SwitchPersona(role));
            }
            Op::Shutdown => {
                let (agents, totals) = shared.summary();
                shared
                    .events
                    .emit(shared.root, EventKind::Summary { agents, totals });
                let ids: Vec<AgentId> = shared.registry.lock().keys().copied().collect();
                for id in ids {
                    shared.registry.with(id, |a| a.cancel.cancel());
                }
                break;
            }
        }
    }
}

/// The user's message to an agent: the root any time (queued if busy); a worker the way
/// `speak_to_agent` does, but not when it failed or was cancelled.
fn deliver_user_message(shared: &Arc<Shared>, target: AgentId, text: String) -> Result<(), String> {
    let status = shared
        .registry
        .with(target, |a| a.status)
        .ok_or_else(|| format!("no agent {target} in this session"))?;
    if target != shared.root && matches!(status, AgentStatus::Failed | AgentStatus::Cancelled) {
        return Err(format!(
            "this worker is {status} and cannot take messages; talk to the supervisor or spawn a new worker"
        ));
    }
    if !shared
        .registry
        .deliver(target, AgentInput::Message { text, reply: None })
    {
        return Err("this agent has stopped and cannot take messages".to_string());
    }
    Ok(())
}
