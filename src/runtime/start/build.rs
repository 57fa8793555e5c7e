//! Building the session: the tools (coding, skills, MCP, the agent tools), what the model
//! server allows, the policies' state (each handed to the policy that owns it, not to the
//! session), and the policies in their order.

use super::RuntimeError;
use super::log::Opened;
use crate::config::Config;
use crate::context::load_instructions;
use crate::isolation::Removed;
use crate::mcp::{McpHub, ServerStatus};
use crate::protocol::{ApprovalPolicy, EventKind};
use crate::roles::RoleSet;
use crate::runtime::approval::ApprovalGate;
use crate::runtime::cx::Policies;
use crate::runtime::events::EventSink;
use crate::runtime::handle::SessionOptions;
use crate::runtime::policies::budget::{SessionBudget, SessionLimits};
use crate::runtime::policies::checkpoint::Checkpoints;
use crate::runtime::policies::compaction::compactor::Compactor;
use crate::runtime::policies::goal::Goals;
use crate::runtime::policies::hooks::service::Hooks;
use crate::runtime::policies::isolation::confinement::Confinement;
use crate::runtime::policies::isolation::worker::WorkerIsolation;
use crate::runtime::policies::pause::gate::PauseGate;
use crate::runtime::policies::verification::checks::Checks;
use crate::runtime::policies::{self, Parts};
use crate::runtime::session::Session;
use crate::runtime::team::Team;
use crate::runtime::toolbox::ToolBox;
use crate::workspace::Workspace;
use std::sync::Arc;
use tokio::sync::mpsc;

/// The session and what start still has to tell or start.
pub struct Built {
    pub session: Arc<Session>,
    pub policies: Arc<Policies>,
    /// What to tell first, in order: setup warnings, no sandbox, hook problems, workspace
    /// hooks waiting for the user's approval, role files skipped.
    pub notes: Vec<EventKind>,
    /// Worktrees of old sessions removed at start.
    pub stale: Vec<Removed>,
    pub mcp_statuses: mpsc::UnboundedReceiver<ServerStatus>,
}

/// Where typed prompts are kept: only when a person types, and squad has a data dir.
fn prompt_history(opts: &SessionOptions) -> Option<crate::session::PromptHistory> {
    let data_dir = opts.store.as_ref().and_then(|s| s.data_dir())?;
    opts.can_ask
        .then(|| crate::session::PromptHistory::new(data_dir))
}

/// What the session's services are made of besides the config.
struct Services {
    isolation: Arc<WorkerIsolation>,
    stale: Vec<Removed>,
    sandbox: Arc<crate::sandbox::Sandbox>,
    confinement: Arc<Confinement>,
    pause: Arc<PauseGate>,
    limits: SessionLimits,
    gate: Arc<ApprovalGate>,
    hooks: Arc<Hooks>,
    goals: Arc<Goals>,
    notes: (Option<String>, Vec<String>),
    checkpoints: Option<Arc<Checkpoints>>,
}

pub async fn build(
    mut opts: SessionOptions,
    workspace: Workspace,
    opened: &Opened,
    sink: EventSink,
) -> Result<Built, RuntimeError> {
    let windows = crate::context::ContextWindows::new(&opts.config);
    let in_flight = in_flight(&opts, &windows).await;
    let (tools, roles, mcp_statuses) = tools(&mut opts, &workspace, &windows);
    let services = services(&opts, &roles, &workspace, opened).await?;
    let prompts = prompt_history(&opts);
    let config = Arc::new(opts.config);
    let model_slots = crate::model::limiter::Limiter::new(in_flight.limit, in_flight.adapt);
    let compactor = Arc::new(Compactor {
        config: config.clone(),
        scales: Default::default(),
    });
    let checks = Arc::new(Checks::new(config.verify.enabled, &roles));
    let board = Arc::new(crate::runtime::tasks::TaskBoard::default());
    let policies = in_order(&config, &services, &compactor, &checks, &board);
    let notes = notes(opts.warnings, opts.notices, &services, &config, &roles);
    let session = Arc::new(Session {
        windows,
        instructions: load_instructions(workspace.root(), config.context.max_instructions_bytes),
        agent_tasks: Default::default(),
        model_slots,
        team: Team::new(sink, opened.root)
            .release_after(config.team.release_after())
            .session_limit(services.limits.budget.limit()),
        config,
        roles,
        model: opts.model,
        tools,
        workspace: Arc::new(workspace),
        gate: services.gate,
        questions: crate::runtime::questions::Questions::new(opts.can_ask),
        plans: Default::default(),
        tasks: board,
        places: services.confinement,
        sandbox: services.sandbox,
        editor: opts.editor,
        prompts,
        batches: Default::default(),
    });
    if let Some(r) = &opened.resumed {
        *crate::sync::lock(&session.batches) = r.replayed.batches.clone();
    }
    Ok(Built {
        session,
        policies,
        notes,
        stale: services.stale,
        mcp_statuses,
    })
}

/// The tools: the coding ones, Agent Skills' (only when there are some: the first request
/// stays small), the MCP servers' and the agent tools; the roles checked against them.
fn tools(
    opts: &mut SessionOptions,
    workspace: &Workspace,
    windows: &crate::context::ContextWindows,
) -> (ToolBox, RoleSet, mpsc::UnboundedReceiver<ServerStatus>) {
    let (mcp_status, mcp_statuses) = mpsc::unbounded_channel();
    let mcp = McpHub::new(&opts.config.mcp_servers, workspace.root(), Some(mcp_status));
    let skills = Arc::new(skills(opts, workspace, windows));
    if !skills.skills.is_empty() {
        (opts.tools).register(Arc::new(crate::tools::UseSkill(skills.clone())));
    }
    let tools = ToolBox::new(&opts.tools, Arc::new(mcp));
    let mut roles = std::mem::take(&mut opts.roles);
    roles.check_tools(&tools.names(), &tools.mcp().server_names());
    (tools, roles, mcp_statuses)
}

/// The skills found, listed within their share of the smallest window of the models in
/// use, the ones used last (as the data dir remembers) first.
fn skills(
    opts: &SessionOptions,
    workspace: &Workspace,
    windows: &crate::context::ContextWindows,
) -> crate::skills::SkillSet {
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let mut set = crate::skills::discover(&crate::skills::skill_dirs(
        workspace.root(),
        crate::config::user_config_dir().as_deref(),
        home.as_deref(),
    ));
    let config = &opts.config;
    let window = (config.models.keys())
        .map(|level| windows.window(&config.model_for_level(level)))
        .min()
        .unwrap_or(config.context.default_window);
    set.budget = Some(crate::skills::budget(window));
    if let Some(data_dir) = opts.store.as_ref().and_then(|s| s.data_dir()) {
        let file = crate::skills::usage::file(data_dir);
        set.last_used = crate::skills::usage::load(&file);
        set.usage_file = Some(file);
    }
    set
}

/// Model calls in flight at once: configured, what the server says it serves, or where an
/// adaptive limit starts; the server's context window learned on the way.
async fn in_flight(
    opts: &SessionOptions,
    windows: &crate::context::ContextWindows,
) -> crate::model::in_flight::InFlight {
    let props = opts.model.server_props().await;
    if let Some(tokens) = props.window {
        windows.set_server_window(tokens);
    }
    let in_flight = crate::model::in_flight::in_flight(
        opts.config.limits.max_concurrent_requests,
        crate::config::is_local(&opts.config.provider.base_url),
        props,
    );
    tracing::info!(limit = %in_flight.describe(), "model requests in flight");
    in_flight
}

/// Isolation, the sandbox, the pause gate and the session's limit, the approval gate and
/// the user's hooks.
async fn services(
    opts: &SessionOptions,
    roles: &RoleSet,
    workspace: &Workspace,
    opened: &Opened,
) -> Result<Services, RuntimeError> {
    let config: &Config = &opts.config;
    let data_dir = opts.store.as_ref().and_then(|s| s.data_dir());
    let (isolation, stale) = WorkerIsolation::open(
        config.team.isolation,
        roles,
        workspace.root(),
        data_dir,
        &opened.session_id,
    );
    let isolation = Arc::new(isolation);
    sweep_placed(config, workspace.root(), data_dir, &opened.session_id).await;
    let replayed = opened.resumed.as_ref().map(|r| &r.replayed);
    let pause = Arc::new(PauseGate::new(replayed.is_some_and(|r| r.paused)));
    let limit = replayed.and_then(|r| r.session_budget);
    let limits = SessionLimits {
        budget: Arc::new(SessionBudget::new(
            limit.unwrap_or(config.limits.max_session_cost_usd),
        )),
        pause: pause.clone(),
    };
    let (sandbox, sandbox_note) = super::open_sandbox(config, data_dir, opts.approval).await?;
    let confinement = Arc::new(Confinement::new(sandbox.clone(), roles, isolation.clone()));
    let gate = Arc::new(ApprovalGate::new(opts.can_ask));
    let trust = data_dir.map(crate::hooks::TrustStore::new);
    let waiting = super::waiting_hooks(&config.hooks, trust.as_ref(), workspace.root());
    let facts = crate::hooks::SessionFacts {
        session_id: opened.session_id.clone(),
        transcript_path: opened.log_path.clone(),
        permission_mode: permission_mode(opts.approval),
    };
    let hooks = Hooks::new(
        config.hooks.list.clone(),
        facts,
        workspace.root().to_path_buf(),
        trust,
        confinement.clone(),
        gate.clone(),
    );
    Ok(Services {
        isolation,
        stale,
        sandbox,
        confinement,
        pause,
        limits,
        gate,
        hooks: Arc::new(hooks),
        goals: Arc::new(Goals::new(replayed.map(|r| r.goal.clone()))),
        notes: (sandbox_note, waiting),
        checkpoints: checkpoints(opts, workspace, opened),
    })
}

/// The approval policy in the words of Claude Code's hooks (`permission_mode`).
fn permission_mode(approval: ApprovalPolicy) -> &'static str {
    match approval {
        ApprovalPolicy::Ask => "default",
        ApprovalPolicy::Auto => "bypassPermissions",
        ApprovalPolicy::ReadOnly => "plan",
    }
}

/// The containers this session starts carry it; those a killed session of this data dir
/// left behind are removed first (`environments::sweep`; a few seconds at most: an engine
/// that does not answer is passed by), then the refs placed workers no one needs.
async fn sweep_placed(
    config: &Config,
    repo: &std::path::Path,
    data_dir: Option<&std::path::Path>,
    session: &str,
) {
    // Only where workers can be placed: a session without environments starts no engine
    // call and no git process for them (tests/worktrees.rs counts them).
    let Some(data) = data_dir.filter(|_| !config.environments.is_empty()) else {
        return;
    };
    crate::environments::sweep::set_owner(data, session);
    let sweep = crate::environments::sweep::sweep_all(&config.environments, data);
    let removed = tokio::time::timeout(std::time::Duration::from_secs(5), sweep).await;
    for name in removed.unwrap_or_default() {
        tracing::info!("removed container {name}, left by a session that no longer runs");
    }
    crate::environments::refs::prune_at_start(repo, Some(data), session).await;
}

/// The session's policies in their order.
fn in_order(
    config: &Arc<Config>,
    services: &Services,
    compactor: &Arc<Compactor>,
    checks: &Arc<Checks>,
    board: &Arc<crate::runtime::tasks::TaskBoard>,
) -> Arc<Policies> {
    let assist = {
        let config = config.clone();
        Arc::new(move |model: Option<&str>| config.assists(model))
    };
    Arc::new(policies::in_order(Parts {
        pause: services.pause.clone(),
        session: services.limits.clone(),
        compactor: compactor.clone(),
        guards: config.guards,
        max_turn_calls: config.limits.max_turn_calls,
        hooks: services.hooks.clone(),
        isolation: services.isolation.clone(),
        checks: checks.clone(),
        board: board.clone(),
        assist,
        checkpoints: services.checkpoints.clone(),
        goals: services.goals.clone(),
        placements: Arc::new(policies::placement::Placements::new(
            !config.environments.is_empty(),
        )),
    }))
}

/// The workspace's checkpoints (none without a data dir), numbering the user's messages on
/// from the resumed log's.
fn checkpoints(
    opts: &SessionOptions,
    workspace: &Workspace,
    opened: &Opened,
) -> Option<Arc<Checkpoints>> {
    let data = opts.store.as_ref()?.data_dir()?;
    let last = opened.resumed.as_ref().map_or(0, |r| {
        let numbers = r.events.iter().filter_map(|e| {
            let EventKind::CheckpointStarted { message, .. } = e.kind else {
                return None;
            };
            Some(message)
        });
        numbers.max().unwrap_or(0)
    });
    let keep = crate::checkpoint::Keep::from_config(&opts.config.checkpoints);
    let made = Checkpoints::new(data, workspace.root(), last, keep);
    Some(Arc::new(made.with_log(opened.log_path.clone())))
}

/// What to tell first, in order: setup warnings, no sandbox, hook problems, what the setup
/// found (the local server), workspace hooks waiting for approval, role files skipped.
fn notes(
    warnings: Vec<String>,
    found: Vec<String>,
    services: &Services,
    config: &Config,
    roles: &RoleSet,
) -> Vec<EventKind> {
    let error = |message: String| EventKind::Error { message };
    let (sandbox, waiting) = &services.notes;
    let notices = found
        .into_iter()
        .chain(waiting.iter().cloned())
        .map(|message| EventKind::Notice { message });
    (warnings.into_iter().chain(sandbox.clone()))
        .chain(config.hooks.problems.iter().cloned())
        .map(error)
        .chain(notices)
        // Each says what it is about ("skipped role file …", "agent file …: …").
        .chain(roles.warnings.iter().cloned().map(error))
        .collect()
}
