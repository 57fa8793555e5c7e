//! Starting a session, or resuming one from its log: the session, the root persona (or
//! the whole restored team), and the task that serves the front end's `Op`s.

mod build;
mod log;
mod restore;

use super::agent::start_agent;
use super::cx::Policies;
use super::handle::{SessionHandle, SessionInfo, SessionOptions};
use super::mcp::start_servers;
use super::ops::serve_ops;
use super::persona::switch_persona;
use super::session::Session;
use super::team::{AgentStats, NewAgent};
use crate::protocol::{AgentId, AgentStatus, ApprovalPolicy, Budget, EventKind};
use crate::roles::Role;
use crate::workspace::Workspace;
use log::Opened;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::mpsc;

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("cannot use workspace {path}: {source}")]
    Workspace {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Role(#[from] crate::roles::RoleError),
    #[error(transparent)]
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
    #[error("{0}; choose another with --role (`squad roles` lists them)")]
    AgentRole(String),
}

pub async fn start_session(mut opts: SessionOptions) -> Result<SessionHandle, RuntimeError> {
    let workspace = Workspace::new(&opts.workspace).map_err(|source| RuntimeError::Workspace {
        path: opts.workspace.clone(),
        source,
    })?;
    let (event_tx, event_rx) = mpsc::unbounded_channel();
    let (opened, sink) = log::open(&opts, event_tx)?;
    let role = choose_role(&opts, &opened)?;
    let chosen = kept_choices(&mut opts, &opened);
    let approval = opts.approval;
    let built = build::build(opts, workspace, &opened, sink).await?;
    let (session, policies) = (built.session, built.policies);
    if let Some(model) = chosen {
        session.team.choose_model(model);
    }
    let model_name = (session.team.model_choice()).unwrap_or_else(|| role.model(&session.config));
    announce(&session, &opened, &role, &model_name, approval);
    for note in built.notes {
        session.team.emit(opened.root, note);
    }
    super::policies::isolation::worker::announce(&session.team, &built.stale);
    // In the background: the first prompt does not wait for them.
    start_servers(&session, built.mcp_statuses);
    let root = opened.root;
    match opened.resumed {
        Some(r) => restore::restore_agents(&session, &policies, r.replayed, approval),
        None => start_persona(&session, &policies, root, &role, approval),
    }
    // A resumed persona switch from the flag is recorded like any other.
    if let Some(current) = session.team.role(root)
        && current != role.name
    {
        let _ = switch_persona(&session, &role.name, "chosen with --role on resume", "");
    }
    let releases = session.clone();
    tokio::spawn(async move { releases.team.run_releases().await });
    let (op_tx, op_rx) = mpsc::unbounded_channel();
    tokio::spawn(serve_ops(session.clone(), policies.clone(), op_rx));
    Ok(SessionHandle {
        ops: op_tx,
        events: event_rx,
        info: SessionInfo {
            session_id: opened.session_id,
            workspace: session.workspace.root().to_path_buf(),
            model: model_name,
            approval,
            role: role.name.clone(),
            root_agent: root,
            log_path: opened.log_path,
            replayed_seq: opened.first_seq,
            prompts: session
                .prompts
                .as_ref()
                .map(|p| p.load())
                .unwrap_or_default(),
        },
    })
}

/// The user's `/approval` and `/model` of a resumed session stay: the policy in force is
/// the one the sandbox, hooks and gate are set up for. Returns the model chosen.
fn kept_choices(opts: &mut SessionOptions, opened: &Opened) -> Option<String> {
    let replayed = opened.resumed.as_ref().map(|r| &r.replayed)?;
    if let Some(approval) = replayed.approval {
        opts.approval = approval;
    }
    replayed.model_choice.clone()
}

/// The persona to start as: the one asked for, else the resumed session's, else the
/// default; a configured reviewer role must exist too.
fn choose_role(opts: &SessionOptions, opened: &Opened) -> Result<Role, RuntimeError> {
    let active = match (&opts.role, &opened.resumed) {
        (Some(r), _) => r.clone(),
        (None, Some(r)) => r.replayed.active_role.clone(),
        (None, None) => crate::roles::DEFAULT_ROLE.to_string(),
    };
    let role = opts.roles.require(&active)?.clone();
    if let Some(why) = role.not_runnable() {
        return Err(RuntimeError::AgentRole(why));
    }
    if let Some(reviewer) = &opts.config.verify.reviewer {
        opts.roles
            .require(reviewer)
            .map_err(RuntimeError::Reviewer)?;
    }
    Ok(role)
}

/// The session's first events: it started (or resumed), and the project's instructions.
fn announce(
    session: &Session,
    opened: &Opened,
    role: &Role,
    model: &str,
    approval: ApprovalPolicy,
) {
    let (team, root) = (&session.team, opened.root);
    team.emit(
        root,
        EventKind::SessionStarted {
            session_id: opened.session_id.clone(),
            workspace: session.workspace.root().to_path_buf(),
            model: model.to_string(),
            role: role.name.clone(),
            approval,
            resumed: opened.resumed.is_some(),
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
}

/// A new session's persona, idle until the user speaks.
fn start_persona(
    session: &Arc<Session>,
    policies: &Arc<Policies>,
    root: AgentId,
    role: &Role,
    approval: ApprovalPolicy,
) {
    let model = role.model(&session.config);
    let tools = session.tools.tools_for_model(role, false, None, &model);
    let persona = NewAgent {
        id: root,
        parent: None,
        role: role.name.clone(),
        model,
        depth: 0,
        task: String::new(),
        policy: approval,
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
    };
    start_agent(session, policies, persona);
    session.plans.follow_persona(&session.team, role);
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
