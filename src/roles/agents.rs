//! Agent roles (issue 53): a role with `agent = { command, args, env, cwd }` is another
//! agent speaking the Agent Client Protocol over stdio, not a squad model loop. The
//! built-ins are the agents users have; each is looked up on `PATH` when listed, so
//! `squad roles` and `squad doctor` can say whether it is installed and how to install it.
//! `spawn_agent` starts one as a worker (`runtime/agent_worker`).

use super::{Role, RoleSource};
use crate::acp_client::AgentCommand;
use std::path::{Path, PathBuf};

/// One built-in agent: role name, description, command, arguments, how to install it.
struct BuiltInAgent {
    name: &'static str,
    description: &'static str,
    command: &'static str,
    args: &'static [&'static str],
    install: &'static str,
}

const BUILT_IN_AGENTS: [BuiltInAgent; 5] = [
    // squad's own ACP agent (`squad acp`, src/acp/): a second squad as a worker.
    BuiltInAgent {
        name: "squad_acp",
        description: "Another squad as a worker, over ACP",
        command: "squad",
        args: &["acp"],
        install: "put the squad binary on PATH (`cargo install --path .` in squad's repository)",
    },
    // OpenCode's ACP mode, `opencode acp` (npm `opencode-ai`, opencode.ai/docs/acp).
    BuiltInAgent {
        name: "opencode",
        description: "OpenCode, over ACP",
        command: "opencode",
        args: &["acp"],
        install: "npm install -g opencode-ai",
    },
    // Gemini CLI's ACP mode (npm `@google/gemini-cli`, its docs/cli/acp-mode.md): `--acp`;
    // releases before 0.50 called it `--experimental-acp`, now deprecated.
    BuiltInAgent {
        name: "gemini",
        description: "Gemini CLI, over ACP",
        command: "gemini",
        args: &["--acp"],
        install: "npm install -g @google/gemini-cli",
    },
    // Zed's ACP adapter for Claude Code (github.com/zed-industries/claude-code-acp, npm
    // `@zed-industries/claude-code-acp`), whose binary is `claude-code-acp`.
    BuiltInAgent {
        name: "claude_code",
        description: "Claude Code, through Zed's ACP adapter",
        command: "claude-code-acp",
        args: &[],
        install: "npm install -g @zed-industries/claude-code-acp",
    },
    // Zed's ACP adapter for Codex (github.com/zed-industries/codex-acp, npm
    // `@zed-industries/codex-acp`), whose binary is `codex-acp`.
    BuiltInAgent {
        name: "codex",
        description: "Codex, through Zed's ACP adapter",
        command: "codex-acp",
        args: &[],
        install: "npm install -g @zed-industries/codex-acp",
    },
];

/// The built-in agent roles.
pub(super) fn built_in_agents() -> Vec<Role> {
    BUILT_IN_AGENTS
        .iter()
        .map(|a| Role {
            name: a.name.to_string(),
            description: a.description.to_string(),
            level: None,
            model: None,
            system_prompt: String::new(),
            tools: None,
            excluded_tools: Vec::new(),
            enabled_agents: Vec::new(),
            handoffs: Vec::new(),
            may_message: None,
            plan_first: false,
            coordinate_only: false,
            max_iterations: None,
            test_command: None,
            verify: None,
            verify_rules: Vec::new(),
            mcp_servers: None,
            isolation: None,
            sandbox: Default::default(),
            environment: None,
            agent: Some(AgentCommand {
                command: a.command.to_string(),
                args: a.args.iter().map(|s| s.to_string()).collect(),
                ..AgentCommand::default()
            }),
            source: RoleSource::BuiltIn,
        })
        .collect()
}

/// How to install `command`: the built-in's hint, or a generic one for a user's agent.
pub fn install_hint(command: &str) -> String {
    match BUILT_IN_AGENTS.iter().find(|a| a.command == command) {
        Some(a) => a.install.to_string(),
        None => format!("install `{command}` or give its full path in the role's agent.command"),
    }
}

/// Where `command` would be run from: itself when it names a path, else the first
/// executable file of that name on `PATH`.
pub fn find_command(command: &str) -> Option<PathBuf> {
    if command.contains(std::path::MAIN_SEPARATOR) {
        let path = PathBuf::from(command);
        return is_executable(&path).then_some(path);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(command))
        .find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `opencode acp`: the command line an agent role starts.
pub fn command_line(agent: &AgentCommand) -> String {
    std::iter::once(agent.command.as_str())
        .chain(agent.args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether the agent of `agent` is installed, in words: `installed (PATH)` or
/// `not installed — HINT`.
pub fn availability(agent: &AgentCommand) -> (bool, String) {
    match find_command(&agent.command) {
        Some(path) => (true, format!("installed ({})", path.display())),
        None => (
            false,
            format!("not installed — {}", install_hint(&agent.command)),
        ),
    }
}

/// `squad roles`: one line per role (name, description, where it came from); an agent
/// role adds its command line and whether it is installed.
pub fn listing(roles: &super::RoleSet) -> String {
    let width = roles.iter().map(|r| r.name.len()).max().unwrap_or(4);
    let mut out = String::new();
    for role in roles.iter() {
        out.push_str(&format!(
            "{:<width$}  {}  [{}]",
            role.name, role.description, role.source
        ));
        if let Some(agent) = &role.agent {
            let (_, state) = availability(agent);
            out.push_str(&format!("  agent: `{}`, {state}", command_line(agent)));
        }
        out.push('\n');
    }
    out
}
