use anyhow::{Context, Result, anyhow, bail};
use clap::{CommandFactory, Parser};
use squad::config::{Config, ConfigOverrides, ConfigSources, SandboxMode, WireApi, load_config};
use squad::doctor::DoctorInput;
use squad::exec::exit;
use squad::hooks::listing;
use squad::logging::{self, Dirs};
use squad::model::{ClientSettings, ModelClient, OpenAiClient, discover};
use squad::protocol::ApprovalPolicy;
use squad::roles::{RoleSet, load_roles};
use squad::runtime::{SessionOptions, start_session};
use squad::session::{SessionMeta, SessionStore};
use squad::text::one_line;
use squad::tools::{ToolRegistry, coding_tools};
use squad::tui::Exit;
use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

mod cli;
use cli::{Cli, Command, Common, HooksCommand, McpCommand};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("squad: {}", squad::text::error_chain(&e));
            ExitCode::from(exit::USAGE)
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    // The far side of an environment: no config, no logs, stdout is the protocol.
    if let Some(Command::ToolServer(args)) = &cli.command {
        runtime()?.block_on(squad::environments::server::run(
            args.root.clone(),
            args.hold,
        ))?;
        return Ok(ExitCode::SUCCESS);
    }
    // Said before anything else: without a terminal the TUI has nothing to draw on.
    let has_tty = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    if cli.command.is_none() && !has_tty {
        bail!(
            "the full-screen interface needs a terminal (stdin and stdout must be a tty); \
             for scripts and pipes use `squad exec \"PROMPT\"`"
        );
    }
    let dirs = Dirs::discover();
    let _log_guard = logging::init(&dirs.logs);
    let workspace = match &cli.common.workspace {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let workspace = workspace
        .canonicalize()
        .with_context(|| format!("workspace {} does not exist", workspace.display()))?;

    match cli.command {
        Some(Command::Skills) => {
            let home = std::env::var_os("HOME").map(PathBuf::from);
            let dirs = squad::skills::skill_dirs(
                &workspace,
                squad::config::user_config_dir().as_deref(),
                home.as_deref(),
            );
            print!("{}", squad::skills::discover(&dirs).listing());
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Roles) => {
            let mut roles = load_roles(&workspace)?;
            // What starting a session would say about role files naming unknown tools.
            let servers: Vec<String> = load_config(&workspace, &config_overrides(&cli.common)?)
                .map(|c| c.mcp_servers.into_keys().collect())
                .unwrap_or_default();
            roles.check_tools(&squad::runtime::tool_names(&coding_registry()), &servers);
            print_roles(&roles);
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Mcp {
            command: McpCommand::List,
        }) => {
            let config = load_config(&workspace, &config_overrides(&cli.common)?)?;
            let (listing, all_up) =
                runtime()?.block_on(squad::mcp::list_servers(&config.mcp_servers, &workspace));
            print!("{listing}");
            Ok(if all_up {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Some(Command::Hooks { command }) => {
            let config = load_config(&workspace, &config_overrides(&cli.common)?)?;
            let store = squad::hooks::TrustStore::new(&dirs.data);
            match command.unwrap_or(HooksCommand::List) {
                HooksCommand::List => {
                    // A matcher may name a tool as squad does or as Claude Code does.
                    let mut names = squad::runtime::tool_names(&coding_registry());
                    let claude = names.iter().map(|t| squad::tools::claude::claude_name(t));
                    let claude: Vec<String> = claude.collect();
                    names.extend(claude);
                    print!(
                        "{}",
                        listing::list(&config.hooks, &store, &workspace, &names)
                    )
                }
                HooksCommand::Trust => print!(
                    "{}",
                    listing::trust_workspace(&config.hooks, &store, &workspace)
                        .map_err(anyhow::Error::msg)?
                ),
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Sessions(args)) if args.prune => {
            let config = load_config(&workspace, &config_overrides(&cli.common)?)?;
            let pruned = squad::checkpoint::prune(
                &dirs.data,
                squad::checkpoint::Keep::from_config(&config.checkpoints),
                true,
            );
            print!("{}", squad::checkpoint::pruned_text(&pruned));
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Sessions(args)) => {
            print_sessions(&SessionStore::new(dirs.sessions()), &workspace, &args)?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Doctor(args)) => {
            let input = DoctorInput {
                sources: ConfigSources::from_process(&workspace),
                overrides: config_overrides(&cli.common)?,
                dirs,
                tool_names: squad::runtime::tool_names(&coding_registry()),
                probe: args.probe,
                oss: cli.common.oss,
                demo: cli.common.demo,
            };
            let report = runtime()?.block_on(squad::doctor::run(&input));
            if args.json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{}", report.text());
            }
            Ok(ExitCode::from(if report.ok { 0 } else { 1 }))
        }
        Some(Command::Sandbox(args)) => {
            let config = load_config(&workspace, &config_overrides(&cli.common)?)?;
            let roles = load_roles(&workspace)?;
            let role = cli
                .common
                .role
                .as_deref()
                .unwrap_or(squad::roles::DEFAULT_ROLE);
            let role = roles.require(role)?;
            let sandbox = squad::sandbox::Sandbox::new(
                &config.sandbox,
                Some(&dirs.data),
                squad::sandbox::support(),
            );
            let level = sandbox.level().narrowed(&role.sandbox);
            // A `local` environment runs here, as without `--env`.
            if let Some(name) = args
                .env
                .as_ref()
                .filter(|n| !squad::environments::check::runs_here(&config, n))
            {
                let run = squad::environments::check::sandbox_command(
                    &config,
                    name,
                    level,
                    &args.command,
                );
                let (code, out) = runtime()?.block_on(run)?;
                print!("{out}");
                return Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)));
            }
            eprintln!(
                "squad: {} (root {})",
                sandbox.describe(level),
                workspace.display()
            );
            let code = squad::sandbox::run_one(&sandbox, level, &workspace, &args.command)?;
            Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
        }
        Some(Command::Completions(args)) => {
            let mut command = Cli::command();
            clap_complete::generate(args.shell, &mut command, "squad", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Exec(args)) => {
            if let Some(Err(why)) = args.goal().map(|g| g.validate()) {
                bail!("--goal: {why}");
            }
            // `--continue` alone goes on with this folder's last session.
            let mut common = cli.common.clone();
            if args.continue_run && common.resume.is_none() {
                common.resume = Some("last".into());
            }
            if let Some(n) = args.rewind {
                // Named before anything is rewound, once.
                let which = common.resume.as_deref().unwrap_or("last");
                let store = SessionStore::new(dirs.sessions());
                let meta = resumed_here(&store, which, &workspace, false, &mut Vec::new())?;
                common.resume = Some(meta.id.clone());
                common.resume_named = true;
                if let Some(refused) = rewind(&meta, &dirs, n, &args)? {
                    eprintln!("squad: {refused}");
                    return Ok(ExitCode::from(exit::REWIND_REFUSED));
                }
                if args.prompt.is_empty() && args.goal.is_none() {
                    return Ok(ExitCode::SUCCESS);
                }
            }
            let start = if let Some(spec) = args.batch.spec()? {
                squad::exec::Start::Batch(Box::new(spec))
            } else if args.continue_run {
                squad::exec::Start::Continue
            } else {
                let mut prompt = args.prompt.join(" ");
                if prompt == "-" {
                    prompt.clear();
                    std::io::stdin()
                        .read_to_string(&mut prompt)
                        .context("cannot read the prompt from stdin")?;
                }
                if prompt.trim().is_empty() && args.goal.is_none() {
                    return Err(anyhow!("the prompt is empty"));
                }
                squad::exec::Start::Prompt(prompt)
            };
            let rt = runtime()?;
            rt.block_on(async {
                let opts = session_options(&common, workspace, &dirs, false)?;
                let handle = start_session(opts).await?;
                // On a worker of the runtime, not on this thread: events then reach it
                // without waking a parked thread per burst (a tenth of a model request's
                // CPU, issue 28).
                let outcome = tokio::spawn(squad::exec::run(handle, start, args.goal(), args.json))
                    .await
                    .context("the exec front end stopped")?;
                if let Some(reason) = &outcome.failure {
                    eprintln!("squad: {}", one_line(reason));
                }
                Ok(ExitCode::from(outcome.exit_code()))
            })
        }
        Some(Command::Merge(args)) => {
            let mut common = cli.common.clone();
            common.resume = Some(args.session.clone());
            runtime()?.block_on(async {
                let opts = session_options(&common, workspace, &dirs, false)?;
                let handle = start_session(opts).await?;
                let outcome = tokio::spawn(squad::exec::merge::run(handle, args.worker))
                    .await
                    .context("the merge front end stopped")?;
                if let Some(reason) = &outcome.failure {
                    eprintln!("squad: {}", one_line(reason));
                }
                Ok(ExitCode::from(outcome.exit_code()))
            })
        }
        Some(Command::Review(args)) => {
            let rt = runtime()?;
            rt.block_on(async {
                let opts = session_options(&cli.common, workspace, &dirs, false)?;
                let handle = start_session(opts).await?;
                let run = squad::exec::review::run(handle, args.target(), args.json);
                let outcome = tokio::spawn(run)
                    .await
                    .context("the review front end stopped")?;
                if let Some(reason) = &outcome.failure {
                    eprintln!("squad: {}", one_line(reason));
                }
                Ok(ExitCode::from(outcome.exit_code()))
            })
        }
        Some(Command::ToolServer(_)) => Ok(ExitCode::SUCCESS),
        Some(Command::Acp) => {
            let common = cli.common.clone();
            let launcher: squad::acp::Launcher = Arc::new(move |cwd, resume| {
                let mut common = common.clone();
                // A loaded session keeps its own persona.
                if resume.is_some() {
                    common.role = None;
                }
                common.resume = resume;
                session_options(&common, cwd, &dirs, true)
            });
            runtime()?.block_on(squad::acp::run(launcher))?;
            Ok(ExitCode::SUCCESS)
        }
        None => {
            let rt = runtime()?;
            rt.block_on(interactive(cli, workspace, dirs))
        }
    }
}

/// The full-screen session; `/new` and `/resume` start another one in its place.
async fn interactive(cli: Cli, workspace: PathBuf, dirs: Dirs) -> Result<ExitCode> {
    let opts = session_options(&cli.common, workspace.clone(), &dirs, true)?;
    let handle = start_session(opts).await?;
    let launch = |exit: Exit, current: String| {
        let mut common = cli.common.clone();
        let workspace = workspace.clone();
        let dirs = dirs.clone();
        async move {
            common.resume = match exit {
                Exit::Resume(Some(id)) => Some(id),
                // This folder's latest other session (reviews are none to go on with).
                Exit::Resume(None) => {
                    let store = SessionStore::new(dirs.sessions());
                    let previous = store
                        .list()?
                        .into_iter()
                        .find(|s| s.id != current && !s.review && s.is_of(&workspace));
                    Some(previous.map_or(current, |s| s.id))
                }
                Exit::NewSession | Exit::Quit => None,
            };
            // A resumed session keeps its own persona.
            if common.resume.is_some() {
                common.role = None;
            }
            // The session named may not exist (or be of another folder): resolving it is
            // part of starting, and either failure is said in a fresh session.
            let started = match session_options(&common, workspace.clone(), &dirs, true) {
                Ok(opts) => start_session(opts).await.map_err(anyhow::Error::from),
                Err(e) => Err(e),
            };
            match started {
                Ok(handle) => Ok(handle),
                Err(e) => {
                    // Say why on the screen, in a fresh session, rather than leave the user.
                    common.resume = None;
                    let mut opts = session_options(&common, workspace, &dirs, true)?;
                    opts.warnings.push(format!("cannot resume: {e}"));
                    Ok(start_session(opts).await?)
                }
            }
        }
    };
    // The terminal is the user's again: say how to come back to this session.
    if let Some(id) = squad::tui::run(handle, cli.prompt, launch).await? {
        eprintln!("squad: to go on with this session: squad --resume {id}");
    }
    Ok(ExitCode::SUCCESS)
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Loads config and roles and builds the model client, for `exec` and the TUI alike.
fn session_options(
    common: &Common,
    workspace: PathBuf,
    dirs: &Dirs,
    interactive: bool,
) -> Result<SessionOptions> {
    let mut config: Config = load_config(&workspace, &config_overrides(common)?)?;
    let roles = load_roles(&workspace)?;
    if let Some(role) = &common.role {
        roles.require(role)?;
    }
    let (mut warnings, mut notices) = (Vec::new(), Vec::new());
    let model: Arc<dyn ModelClient> = if common.demo {
        config.force_model(squad::model::demo::DEMO_MODEL);
        Arc::new(squad::model::demo::DemoModel)
    } else {
        remote_model(
            &mut config,
            common.oss,
            interactive,
            &mut warnings,
            &mut notices,
        )?
    };
    let tools = coding_registry();
    let store = SessionStore::new(dirs.sessions());
    let resume = match &common.resume {
        Some(id) if common.resume_named => Some(id.clone()),
        Some(which) => Some(resumed_here(&store, which, &workspace, interactive, &mut notices)?.id),
        None => None,
    };
    Ok(SessionOptions {
        approval: config.approval,
        config,
        roles,
        workspace,
        role: common.role.clone(),
        can_ask: interactive,
        model,
        tools,
        store: Some(store),
        resume,
        replay_to_frontend: interactive,
        warnings,
        notices,
        editor: None,
    })
}

/// The id of the session `--resume` names (`last`: this folder's newest). Another
/// folder's session is taken only by its id, and named with its folder before it goes on
/// here: on stderr for exec, on screen in the TUI.
fn resumed_here(
    store: &SessionStore,
    which: &str,
    workspace: &std::path::Path,
    interactive: bool,
    notices: &mut Vec<String>,
) -> Result<SessionMeta> {
    let meta = store.resolve(which, workspace)?;
    if let Some(other) = meta.workspace.as_ref().filter(|_| !meta.is_of(workspace)) {
        let line = format!(
            "session {} is of another folder, {}: its history and team go on here, in {}",
            meta.id,
            other.display(),
            workspace.display()
        );
        if interactive {
            notices.push(line);
        } else {
            eprintln!("squad: {line}");
        }
    }
    Ok(meta)
}

/// The client of the configured server, or of a local one found by itself.
fn remote_model(
    config: &mut Config,
    oss: bool,
    interactive: bool,
    warnings: &mut Vec<String>,
    notices: &mut Vec<String>,
) -> Result<Arc<dyn ModelClient>> {
    match discover::apply(config, oss) {
        discover::Outcome::NotTried => {}
        discover::Outcome::Using(found) => {
            // One line: on stderr for exec (stdout is the answer), on screen in the TUI.
            if interactive {
                notices.push(found.describe());
            } else {
                eprintln!("squad: {}", found.describe());
            }
        }
        discover::Outcome::NoneFound(ports) if oss => bail!(
            "--oss: no local server answered on 127.0.0.1 ports {}; start one (llama-server, \
             ollama serve, LM Studio, vllm serve) or give --base-url",
            discover::port_list(&ports)
        ),
        discover::Outcome::NoneFound(_) => {}
    }
    // No request can work: `exec` stops before sending one (exit 2); the TUI says the same
    // on screen, and its model client refuses to send without the key.
    if let Some(fix) = config.missing_key() {
        if !interactive {
            bail!("{fix}");
        }
        warnings.push(fix);
    }
    let settings = ClientSettings::from_config(config);
    Ok(Arc::new(OpenAiClient::new(settings)?))
}

/// What the command line sets over the config layers.
fn config_overrides(common: &Common) -> Result<ConfigOverrides> {
    let approval = match &common.approval {
        Some(s) => Some(
            ApprovalPolicy::parse(s)
                .ok_or_else(|| anyhow!("--approval must be ask, auto or read-only (got `{s}`)"))?,
        ),
        None => None,
    };
    let sandbox = match &common.sandbox {
        Some(s) => Some(SandboxMode::parse(s).ok_or_else(|| {
            anyhow!("--sandbox must be workspace-write, read-only or off (got `{s}`)")
        })?),
        None => None,
    };
    let wire_api = match &common.wire_api {
        Some(s) => Some(
            WireApi::parse(s)
                .ok_or_else(|| anyhow!("--wire-api must be chat or responses (got `{s}`)"))?,
        ),
        None => None,
    };
    Ok(ConfigOverrides {
        sandbox,
        wire_api,
        config_file: common.config.clone(),
        base_url: common.base_url.clone(),
        model: common.model.clone(),
        approval,
        profile: common.profile.clone(),
    })
}

/// The coding tools every session gets (the runtime adds the agent tools).
fn coding_registry() -> ToolRegistry {
    let mut tools = ToolRegistry::new();
    for tool in coding_tools() {
        tools.register(tool);
    }
    tools
}

fn print_roles(roles: &RoleSet) {
    for warning in &roles.warnings {
        eprintln!("warning: {warning}");
    }
    print!("{}", squad::roles::listing(roles));
}

fn print_sessions(
    store: &SessionStore,
    workspace: &std::path::Path,
    args: &cli::SessionsArgs,
) -> Result<()> {
    let shown = squad::session::Shown {
        all: args.all,
        reviews: args.reviews,
    };
    let (out, note) = squad::session::listing(&store.list()?, workspace, shown);
    print!("{out}");
    eprint!("{note}");
    Ok(())
}

/// `squad exec --resume ID --rewind N`: done before the session starts, so the resumed
/// session reads the rewound conversation from its log. `Some(why)`: refused, because
/// files changed since and not by squad (exit [`exit::REWIND_REFUSED`], not a usage error).
fn rewind(
    meta: &SessionMeta,
    dirs: &Dirs,
    message: u32,
    args: &cli::ExecArgs,
) -> Result<Option<String>> {
    use cli::RewindWhat as Asked;
    use squad::checkpoint::RewindWhat;
    let what = RewindWhat {
        files: args.rewind_what != Asked::Conversation,
        conversation: args.rewind_what != Asked::Files,
    };
    let done = squad::checkpoint::rewind(&meta.path, &dirs.data, message, what, args.force)?;
    if let Some(files) = done.files.as_ref().filter(|f| f.refused()) {
        return Ok(Some(format!(
            "not rewound: {} changed since message {message} and not by squad: {}; \
             nothing was changed. Run again with --force to overwrite them, or \
             --rewind-what conversation to leave the files",
            plural(files.conflicts.len(), "file"),
            files.conflicts.join(", ")
        )));
    }
    let mut said = Vec::new();
    if let Some(f) = &done.files {
        said.push(format!(
            "files: {} written back, {} removed{}",
            f.written.len(),
            f.removed.len(),
            if f.conflicts.is_empty() {
                String::new()
            } else {
                format!(" ({} of yours overwritten: --force)", f.conflicts.len())
            }
        ));
    }
    if let Some(kept) = done.conversation {
        said.push(format!("conversation: {kept} items kept"));
    }
    eprintln!(
        "squad: rewound session {} to before message {message}: {}",
        meta.id,
        said.join("; ")
    );
    Ok(None)
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}
