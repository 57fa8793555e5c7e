//! `squad doctor`: checks the setup a session needs and says, one line per check, what is
//! fine and how to fix what is not. It reads config and roles the way a session does and
//! asks the server for its models (`GET /models`); it starts no session, and sends a
//! model request only with `--probe` (one tiny request per wire in use). With `--demo` it
//! checks the demo session instead: no key, no server, nothing leaves the machine.

mod checks;
mod protocol;
mod wire;

use crate::config::{ConfigOverrides, ConfigSources};
use crate::logging::Dirs;
use serde::Serialize;
use std::fmt::Write;
use std::path::PathBuf;

/// What the doctor looks at.
#[derive(Clone, Debug)]
pub struct DoctorInput {
    /// Where the config layers come from (the workspace among them).
    pub sources: ConfigSources,
    /// The command line's `--config`, `--profile`, `--base-url`, `--model`, `--approval`.
    pub overrides: ConfigOverrides,
    pub dirs: Dirs,
    /// Tool names the runtime serves, to catch role files naming others.
    pub tool_names: Vec<String>,
    /// `--probe`: send each wire in use a one-token request.
    pub probe: bool,
    /// `--oss`: a local server is wanted even with a key.
    pub oss: bool,
    /// `--demo`: the session would run squad's built-in demo model, so no server, key or
    /// wire is checked, and nothing leaves the machine.
    pub demo: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    Fail,
    /// Not checked (it depends on a failed check, or there is nothing to check yet).
    Skip,
    /// Works, but not as it reads: said with what will happen. Not a failure.
    Warn,
}

/// One line of the report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Check {
    /// What kind of check: `config`, `profile`, `roles`, `agent`, `local`, `key`, `server`, `model`,
    /// `wire`, `assist`, `tool_protocol`, `context_window`, `mcp`, `environment`, `dirs`, `sandbox`,
    /// `agents_md`.
    pub check: &'static str,
    pub status: Status,
    pub message: String,
    /// What to do about a failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Check {
    fn new(check: &'static str, status: Status, message: impl Into<String>) -> Self {
        Self {
            check,
            status,
            message: message.into(),
            fix: None,
        }
    }

    fn pass(check: &'static str, message: impl Into<String>) -> Self {
        Self::new(check, Status::Pass, message)
    }

    fn skip(check: &'static str, message: impl Into<String>) -> Self {
        Self::new(check, Status::Skip, message)
    }

    fn warn(check: &'static str, message: impl Into<String>) -> Self {
        Self::new(check, Status::Warn, message)
    }

    fn fail(check: &'static str, message: impl Into<String>, fix: impl Into<String>) -> Self {
        let fix: String = fix.into();
        Self {
            fix: (!fix.is_empty()).then_some(fix),
            ..Self::new(check, Status::Fail, message)
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// True when no check failed: the exit code is 0 exactly then.
    pub ok: bool,
    pub workspace: PathBuf,
    /// The profile applied (`--profile` / `SQUAD_PROFILE`), if any.
    pub profile: Option<String>,
    /// The server the session would call, once the config loads.
    pub base_url: Option<String>,
    pub checks: Vec<Check>,
}

/// Runs every check. Never fails: whatever goes wrong is a failed check.
pub async fn run(input: &DoctorInput) -> Report {
    let mut checks = Vec::new();
    let mut config = checks::config(input, &mut checks);
    if let Some(config) = config.as_mut() {
        match input.demo {
            true => config.force_model(crate::model::demo::DEMO_MODEL),
            false => checks::local_server(config, input.oss, &mut checks),
        }
    }
    let roles = checks::roles(input, config.as_ref(), &mut checks);
    agents(roles.as_ref(), &mut checks);
    if let Some(config) = &config {
        if input.demo {
            checks.push(demo_model());
        } else {
            let reached = checks::provider(config, roles.as_ref(), &mut checks).await;
            wire::wires(config, roles.as_ref(), input.probe && reached, &mut checks).await;
        }
        checks::assist(config, roles.as_ref(), &mut checks);
        if !input.demo {
            protocol::protocols(config, roles.as_ref(), &mut checks);
            checks::context_windows(config, roles.as_ref(), &mut checks).await;
        }
        checks::mcp_servers(config, &input.sources.workspace, &mut checks).await;
        environments(config, &mut checks).await;
        hooks(config, &input.tool_names, &mut checks);
    } else {
        checks.push(Check::skip(
            "server",
            "server, key, models, context windows and MCP servers: not checked until the \
             config loads",
        ));
    }
    checks::dirs(&input.dirs, &mut checks);
    if let Some(config) = &config {
        checks.push(sandbox(config, &input.dirs));
    }
    checks::agents_md(
        &input.sources.workspace,
        config.as_ref().map(|c| c.context.max_instructions_bytes),
        &mut checks,
    );
    Report {
        ok: checks.iter().all(|c| c.status != Status::Fail),
        workspace: input.sources.workspace.clone(),
        profile: config.as_ref().and_then(|c| c.profile.clone()),
        // The demo model is in the process: no server is called.
        base_url: config.filter(|_| !input.demo).map(|c| c.provider.base_url),
        checks,
    }
}

/// One line per configured environment: its tool server reached the way a worker's would
/// be (so squad runs there), and git there.
async fn environments(config: &crate::config::Config, out: &mut Vec<Check>) {
    let level = crate::sandbox::Level::of_session(&config.sandbox);
    for (name, env) in &config.environments {
        let probe = crate::environments::check::probe(name, env, level).await;
        out.push(match probe.ok {
            true => Check::pass("environment", probe.message),
            false => Check::fail("environment", probe.message, probe.fix.unwrap_or_default()),
        });
    }
}

/// One line per agent role (another agent over ACP): `✓` when its command is found, `·`
/// with how to install it when not (not a failure: a role not used needs nothing).
fn agents(roles: Option<&crate::roles::RoleSet>, out: &mut Vec<Check>) {
    for role in roles.iter().flat_map(|r| r.iter()) {
        let Some(agent) = &role.agent else {
            continue;
        };
        let line = crate::roles::command_line(agent);
        let check = match crate::roles::find_command(&agent.command) {
            Some(path) => Check::pass(
                "agent",
                format!(
                    "agent role {}: `{line}` installed ({})",
                    role.name,
                    path.display()
                ),
            ),
            None => Check {
                fix: Some(crate::roles::install_hint(&agent.command)),
                ..Check::skip(
                    "agent",
                    format!("agent role {}: `{line}` not installed", role.name),
                )
            },
        };
        out.push(check);
    }
}

/// What `--demo` runs instead of a server's model.
fn demo_model() -> Check {
    Check::pass(
        "model",
        format!(
            "model {}: squad's built-in demo model, in the process: no server, no key, \
             nothing leaves the machine (say `team` or `write` to it; for a first look, not \
             for work)",
            crate::model::demo::DEMO_MODEL
        ),
    )
}

/// The hooks' problems and matchers that match no tool (by squad's name or Claude Code's):
/// each would never run.
fn hooks(config: &crate::config::Config, tools: &[String], out: &mut Vec<Check>) {
    let mut names = tools.to_vec();
    names.extend(tools.iter().map(|t| crate::tools::claude::claude_name(t)));
    let warnings = crate::hooks::listing::matcher_warnings(&config.hooks, &names);
    for w in config.hooks.problems.iter().chain(&warnings) {
        out.push(Check::warn("hooks", w.clone()));
    }
}

impl Report {
    /// One line per check: `✓`, `✗` (with ` — ` and the fix), `!` (works, but not as it
    /// reads) or `·` (not checked).
    pub fn text(&self) -> String {
        let mut out = String::new();
        for c in &self.checks {
            let mark = match c.status {
                Status::Pass => '✓',
                Status::Fail => '✗',
                Status::Skip => '·',
                Status::Warn => '!',
            };
            let _ = write!(out, "{mark} {}", c.message);
            if let Some(fix) = &c.fix {
                let _ = write!(out, " — {fix}");
            }
            out.push('\n');
        }
        let failed = self
            .checks
            .iter()
            .filter(|c| c.status == Status::Fail)
            .count();
        match failed {
            0 => out.push_str("all checks passed\n"),
            1 => out.push_str("1 check failed\n"),
            n => {
                let _ = writeln!(out, "{n} checks failed");
            }
        }
        out
    }
}

/// The sandbox commands would get: `✓` with what it confines, `!` where it is off or
/// cannot cut the network (commands then ask under `ask`), `✗` where `auto` cannot start.
fn sandbox(config: &crate::config::Config, dirs: &Dirs) -> Check {
    use crate::config::SandboxMode;
    let sandbox =
        crate::sandbox::Sandbox::new(&config.sandbox, Some(&dirs.data), crate::sandbox::support());
    let level = sandbox.level();
    let line = sandbox.describe(level);
    let auto = config.approval == crate::protocol::ApprovalPolicy::Auto;
    match (&sandbox.support().unavailable, level.mode) {
        (_, SandboxMode::Off) => Check::warn("sandbox", line),
        (Some(_), _) if auto => Check::fail(
            "sandbox",
            line,
            "--approval auto will not start without a sandbox: add --sandbox off, or use \
             --approval ask (every command then asks)",
        ),
        (Some(_), _) => Check::warn(
            "sandbox",
            format!("{line}; every command will ask for approval"),
        ),
        (None, _)
            if !level.network && sandbox.support().net_cut != crate::sandbox::NetCut::Namespace =>
        {
            Check::warn("sandbox", line)
        }
        (None, _) => Check::pass("sandbox", line),
    }
}
