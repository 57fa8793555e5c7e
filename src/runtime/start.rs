//! Starting a session, or resuming one from its log: the session, the root persona (or
//! the whole restored team), and the task that serves the front end's `Op`s.

use super::agent::start_agent;
use super::approval::ApprovalGate;
use super::cx::Policies;
use super::events::EventSink;
use super::inbox::Notice;
use super::mcp::start_servers;
use super::ops::serve_ops;
use super::persona::switch_persona;
use super::session::Session;
use super::team::{AgentStats, NewAgent, Team};
use super::toolbox::ToolBox;
use super::{SessionHandle, SessionInfo, SessionOptions};
use crate::mcp::McpHub;
use crate::protocol::{AgentId, AgentStatus, ApprovalPolicy, Budget, EventKind};
use crate::session::{LogWriter, ReplayedSession, SessionLog, read_events, replay};
use crate::workspace::Workspace;
use std::collections::HashMap;
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
    #[error("[verify] reviewer: {0}; set it to one of those roles or remove it")]
    Reviewer(crate::roles::RoleError),
    #[error(
        "--approval auto runs every command in the sandbox, and there is none here: {0}. \
         Add --sandbox off to run commands with all of your rights, or use --approval ask"
    )]
    NoSandbox(String),
}

pub async fn start_session(mut opts: SessionOptions) -> Result<SessionHandle, RuntimeError> {
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
        Some(p) => Some(
            SessionLog::open(p)
                .and_then(LogWriter::spawn)
                .map_err(|source| RuntimeError::Log {
                    path: p.clone(),
                    source,
                })?,
        ),
        None => None,
    };
    let sink = EventSink::new(log, first_seq, event_tx);
    if let Some((_, events, _)) = &resumed {
        sink.observe_replayed(events);
    }
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
        (None, None) => crate::roles::DEFAULT_ROLE.to_string(),
    };
    let role = opts.roles.require(&active_role)?.clone();
    if let Some(reviewer) = &opts.config.verify.reviewer {
        opts.roles
            .require(reviewer)
            .map_err(RuntimeError::Reviewer)?;
    }
    let model_name = role.model(&opts.config);
    let (mcp_status, mcp_statuses) = mpsc::unbounded_channel();
    let mcp = McpHub::new(&opts.config.mcp_servers, workspace.root(), Some(mcp_status));
    // Agent Skills: their tool only when there are some (the first request stays small).
    let skills = Arc::new(crate::skills::discover(&crate::skills::skill_dirs(
        workspace.root(),
        crate::config::user_config_dir().as_deref(),
        std::env::var_os("HOME")
            .map(std::path::PathBuf::from)
            .as_deref(),
    )));
    if !skills.skills.is_empty() {
        opts.tools
            .register(Arc::new(crate::tools::UseSkill(skills.clone())));
    }
    let tools = ToolBox::new(&opts.tools, Arc::new(mcp));
    let mut roles = opts.roles;
    roles.check_tools(&tools.names(), &tools.mcp().server_names());

    let windows = crate::context::ContextWindows::new(&opts.config);
    let props = opts.model.server_props().await;
    if let Some(tokens) = props.window {
        windows.set_server_window(tokens);
    }
    let in_flight = crate::model::in_flight::in_flight(
        opts.config.limits.max_concurrent_requests,
        crate::config::is_local(&opts.config.provider.base_url),
        props,
    );
    tracing::info!(
        limit = in_flight.limit,
        source = in_flight.source,
        "model requests in flight"
    );
    let (isolation, stale) = super::policies::isolation::worker::WorkerIsolation::open(
        opts.config.team.isolation,
        &roles,
        workspace.root(),
        opts.store.as_ref().and_then(|s| s.data_dir()),
        &session_id,
    );
    let instructions = crate::context::load_instructions(
        workspace.root(),
        opts.config.context.max_instructions_bytes,
    );
    let release_after = opts.config.team.release_after();
    let pause = Arc::new(super::policies::pause::gate::PauseGate::new(
        resumed.as_ref().is_some_and(|(_, _, s)| s.paused),
    ));
    let session_limits = super::policies::budget::SessionLimits {
        budget: Arc::new(super::policies::budget::SessionBudget::new(
            resumed
                .as_ref()
                .and_then(|(_, _, s)| s.session_budget)
                .unwrap_or(opts.config.limits.max_session_cost_usd),
        )),
        pause: pause.clone(),
    };
    let data_dir = opts.store.as_ref().and_then(|s| s.data_dir());
    let (sandbox, sandbox_note) = open_sandbox(&opts.config, data_dir, opts.approval).await?;
    let trust = data_dir.map(crate::hooks::TrustStore::new);
    let hook_notes = waiting_hooks(&opts.config.hooks, trust.as_ref(), workspace.root());
    let hook_session = crate::hooks::SessionFacts {
        session_id: session_id.clone(),
        transcript_path: log_path.clone(),
        permission_mode: match opts.approval {
            ApprovalPolicy::Ask => "default",
            ApprovalPolicy::Auto => "bypassPermissions",
            ApprovalPolicy::ReadOnly => "plan",
        },
    };
    let config = Arc::new(opts.config);
    let model_slots = Arc::new(Semaphore::new(in_flight.limit as usize));
    let compactor = Arc::new(super::policies::compaction::compactor::Compactor {
        model: opts.model.clone(),
        slots: model_slots.clone(),
        config: config.clone(),
        scales: Default::default(),
    });
    let checks = Arc::new(super::policies::verification::checks::Checks::new(
        config.verify.enabled,
        &roles,
    ));
    let isolation = Arc::new(isolation);
    let confinement = Arc::new(super::confinement::Confinement::new(
        sandbox.clone(),
        &roles,
        isolation.clone(),
    ));
    let board = Arc::new(super::tasks::TaskBoard::default());
    let gate = Arc::new(ApprovalGate::new(opts.can_ask));
    let hooks = Arc::new(super::policies::hooks::service::Hooks::new(
        config.hooks.list.clone(),
        hook_session,
        workspace.root().to_path_buf(),
        trust,
        confinement.clone(),
        gate.clone(),
    ));
    let policies = Arc::new(super::policies::in_order(super::policies::Parts {
        pause: pause.clone(),
        session: session_limits.clone(),
        compactor: compactor.clone(),
        guards: config.guards,
        max_turn_calls: config.limits.max_turn_calls,
        hooks: hooks.clone(),
        isolation: isolation.clone(),
        checks: checks.clone(),
        board: board.clone(),
        assist: {
            let config = config.clone();
            Arc::new(move |model: Option<&str>| config.assists(model))
        },
    }));
    let session = Arc::new(Session {
        windows,
        instructions,
        pause,
        session_limits,
        hooks,
        agent_tasks: Default::default(),
        model_slots,
        compactor,
        config,
        roles,
        model: opts.model,
        tools,
        workspace: Arc::new(workspace),
        gate,
        questions: super::questions::Questions::new(opts.can_ask),
        team: Team::new(sink, root).release_after(release_after),
        checks,
        tasks: board,
        isolation,
        sandbox,
        confinement,
        editor: opts.editor,
    });
    let team = &session.team;

    team.emit(
        root,
        EventKind::SessionStarted {
            session_id: session_id.clone(),
            workspace: session.workspace.root().to_path_buf(),
            model: model_name.clone(),
            role: role.name.clone(),
            approval: opts.approval,
            resumed: resumed.is_some(),
            roles: session.roles.names(),
        },
    );
    if let Some(i) = &session.instructions {
        team.emit(
            root,
            EventKind::InstructionsLoaded {
                files: i.files.clone(),
                bytes: i.bytes,
                cut: i.cut,
            },
        );
    }
    for message in opts.warnings.into_iter().chain(sandbox_note) {
        team.emit(root, EventKind::Error { message });
    }
    for message in session.config.hooks.problems.clone() {
        team.emit(root, EventKind::Error { message });
    }
    for message in hook_notes {
        team.emit(root, EventKind::Notice { message });
    }
    for warning in &session.roles.warnings {
        team.emit(
            root,
            EventKind::Error {
                message: format!("role file skipped: {warning}"),
            },
        );
    }
    super::policies::isolation::worker::announce(&session.team, &stale);
    // In the background: the first prompt does not wait for them.
    start_servers(&session, mcp_statuses);

    match resumed {
        Some((_, _, replayed)) => restore_agents(&session, &policies, replayed, opts.approval),
        None => {
            let tools = session
                .tools
                .tools_for_model(&role, false, None, &model_name);
            start_agent(
                &session,
                &policies,
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
                    // The persona is bounded by the session's budget, not a worker's.
                    budget: Budget::default(),
                    result: None,
                    first_message: None,
                    announce: true,
                    options: Default::default(),
                    released: false,
                },
            );
        }
    }
    // A resumed persona switch from the flag is recorded like any other.
    if let Some(current) = team.role(root)
        && current != role.name
    {
        let _ = switch_persona(&session, &role.name, "chosen with --role on resume", "");
    }

    let releases = session.clone();
    tokio::spawn(async move { releases.team.run_releases().await });
    let (op_tx, op_rx) = mpsc::unbounded_channel();
    tokio::spawn(serve_ops(session.clone(), op_rx));
    Ok(SessionHandle {
        ops: op_tx,
        events: event_rx,
        info: SessionInfo {
            session_id,
            workspace: session.workspace.root().to_path_buf(),
            model: model_name,
            approval: opts.approval,
            role: role.name.clone(),
            root_agent: root,
            log_path,
            replayed_seq: first_seq,
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

/// Brings the logged agents back (root first), idle, with their histories; outcomes and
/// workers' messages the log does not show as delivered are still owed to their
/// supervisors.
fn restore_agents(
    session: &Arc<Session>,
    policies: &Arc<Policies>,
    replayed: ReplayedSession,
    policy: ApprovalPolicy,
) {
    session.tasks.restore(replayed.tasks);
    let mut delivered = HashMap::new();
    let mut interrupted = Vec::new();
    let roles: HashMap<AgentId, String> = replayed
        .agents
        .iter()
        .map(|a| (a.id, a.role.clone()))
        .collect();
    for agent in replayed.agents {
        let is_root = agent.id == replayed.root;
        let role_name = if is_root {
            replayed.active_role.clone()
        } else {
            agent.role.clone()
        };
        let Some(role) = session.role(&role_name) else {
            continue;
        };
        let ceiling = agent.parent_id.and_then(|p| session.team.tools(p));
        let model = if is_root {
            role.model(&session.config)
        } else {
            agent.model.clone()
        };
        let mut tools = session
            .tools
            .tools_for_model(role, !is_root, ceiling.as_deref(), &model);
        // Narrowed by its spawn: the same tools again, never more than the role's now.
        if let Some(only) = &agent.options.tools {
            tools.retain(|t| only.contains(t));
        }
        delivered.insert(agent.id, agent.delivered);
        if agent.status == AgentStatus::Interrupted {
            interrupted.push((agent.id, agent.parent_id));
        }
        let messages: Vec<Notice> = agent
            .messages
            .iter()
            .map(|m| {
                let role = roles.get(&m.from).map_or("worker", String::as_str);
                Notice::message(m.from, role, m.kind, &m.text)
            })
            .collect();
        if !is_root {
            // Its snapshot is gone with the old process; its next message takes a new one.
            session
                .checks
                .restore_attempts(agent.id, agent.attempts, agent.task_closed);
            session.isolation.reopen(agent.id);
        }
        start_agent(
            session,
            policies,
            NewAgent {
                id: agent.id,
                parent: agent.parent_id,
                role: role.name.clone(),
                model,
                depth: agent.depth,
                task: agent.task,
                policy,
                tools,
                // A released worker's conversation stays in the log only.
                history: if agent.released {
                    Vec::new()
                } else {
                    agent.history
                },
                status: agent.status,
                stats: AgentStats {
                    prompt_tokens: agent.prompt_tokens,
                    completion_tokens: agent.completion_tokens,
                    cost_usd: agent.cost_usd,
                    ..AgentStats::default()
                },
                budget: agent.budget,
                result: agent.result,
                first_message: None,
                announce: false,
                options: agent.options,
                released: agent.released,
            },
        );
        if !messages.is_empty() {
            session.team.restore_notices(agent.id, messages);
        }
    }
    session
        .team
        .restore_delivery(|id, _| delivered.get(&id).copied().unwrap_or(true));
    session.team.restore_releases();
    // The log may end with them running (the process was killed): say what they are now.
    for (id, parent_id) in interrupted {
        session.team.emit(
            id,
            EventKind::AgentStatus {
                parent_id,
                status: AgentStatus::Interrupted,
                reason: Some(super::ops::INTERRUPTED_REASON.into()),
            },
        );
    }
}

/// The workspace hook files with a hook that does not run now: new, or changed since the
/// user approved it (it, or a file its command runs). Each is said once at the start; the
/// hook layer checks again before every run.
fn waiting_hooks(
    hooks: &crate::hooks::Hooks,
    trust: Option<&crate::hooks::TrustStore>,
    project: &std::path::Path,
) -> Vec<String> {
    let mut waiting: Vec<&std::path::Path> = Vec::new();
    for hook in &hooks.list {
        let ok = trust.is_some_and(|t| crate::hooks::listing::approved(hook, t, project));
        if !ok && hook.source.workspace && !waiting.contains(&hook.source.file.as_path()) {
            waiting.push(&hook.source.file);
        }
    }
    waiting
        .iter()
        .map(|file| {
            let n = hooks.list.iter().filter(|h| h.source.file == *file).count();
            format!(
                "{n} hook(s) in {} came with the workspace and do not run until you approve \
                 them: read the file and the scripts it runs, then run `squad hooks trust` in \
                 the workspace (a change to any of them needs a new approval)",
                file.display()
            )
        })
        .collect()
}

/// The session's sandbox, and the line to show at start when none can be had. Never
/// silently unsandboxed: `ask` then asks about every command, `auto` does not start.
async fn open_sandbox(
    config: &crate::config::Config,
    data_dir: Option<&std::path::Path>,
    approval: ApprovalPolicy,
) -> Result<(Arc<crate::sandbox::Sandbox>, Option<String>), RuntimeError> {
    let support = tokio::task::spawn_blocking(crate::sandbox::support)
        .await
        .unwrap_or_else(|e| crate::sandbox::Support::none(&e.to_string()));
    let sandbox = crate::sandbox::Sandbox::new(&config.sandbox, data_dir, support);
    let wanted = config.sandbox.mode != crate::config::SandboxMode::Off;
    let note = match &sandbox.support().unavailable {
        Some(why) if wanted && approval == ApprovalPolicy::Auto => {
            return Err(RuntimeError::NoSandbox(why.clone()));
        }
        Some(why) if wanted => Some(format!(
            "no sandbox for commands: {why}; every command asks for your approval \
             (--sandbox off runs them unconfined)"
        )),
        _ => None,
    };
    Ok((Arc::new(sandbox), note))
}
