//! Roles (personas): what an agent is told, which tools it gets, whom it may spawn and hand
//! off to. Built-ins are embedded; user files in `<config dir>/squad/roles/` and
//! `.squad/roles/` override them by name.

mod agent_files;
mod agents;
mod load;
mod save;

pub use agents::{availability, command_line, find_command, install_hint, listing};
pub use load::{DEFAULT_ROLE, RoleError, RoleSet, load_roles, load_roles_from, load_roles_with};
pub use save::{SaveRoleError, save_role};

impl RoleSet {
    /// Warns about role files that name tools no handler serves (the names come from the
    /// runtime's tool registry) or MCP servers the config does not have. The role is kept:
    /// it just will not get a tool that does not exist. A built-in naming one is a bug,
    /// caught by the runtime's tests. An MCP tool (`NAME__TOOL`, `NAME__*`) passes when
    /// its server is configured: which tools a server has is known only once it runs.
    pub fn check_tools(&mut self, known: &[String], mcp_servers: &[String]) {
        let mcp_tool = |t: &str| {
            mcp_servers.iter().any(|s| {
                t.strip_prefix(s.as_str()).is_some_and(|rest| {
                    rest.len() > MCP_SEPARATOR.len() && rest.starts_with(MCP_SEPARATOR)
                })
            })
        };
        let mut found = Vec::new();
        for role in self.iter() {
            let RoleSource::File(path) = &role.source else {
                continue;
            };
            let lists = [
                ("tools", role.tools.as_deref().unwrap_or_default()),
                ("excluded_tools", role.excluded_tools.as_slice()),
            ];
            for (key, list) in lists {
                if let Some(bad) = list.iter().find(|t| !known.contains(t) && !mcp_tool(t)) {
                    let mut known = known.join(", ");
                    for s in mcp_servers {
                        known.push_str(&format!(", {s}{MCP_SEPARATOR}*"));
                    }
                    found.push(format!(
                        "role file {}: {key}: unknown tool '{bad}' is ignored (known tools: {known})",
                        path.display(),
                    ));
                    break;
                }
            }
            let servers = role.mcp_servers.as_deref().unwrap_or_default();
            if let Some(bad) = servers.iter().find(|s| !mcp_servers.contains(s)) {
                let known = if mcp_servers.is_empty() {
                    "none configured".to_string()
                } else {
                    mcp_servers.join(", ")
                };
                found.push(format!(
                    "role file {}: mcp_servers: unknown MCP server '{bad}' is ignored (known servers: {known})",
                    path.display(),
                ));
            }
        }
        self.warnings.extend(found);
    }

    /// Warns about role files whose `environment` the config does not define: their
    /// workers cannot be placed (never run here instead, which the role did not ask for).
    pub fn check_environments(&mut self, known: &[String]) {
        let mut found = Vec::new();
        for role in self.iter() {
            let (RoleSource::File(path), Some(env)) = (&role.source, &role.environment) else {
                continue;
            };
            if !known.contains(env) {
                let known = if known.is_empty() {
                    "none configured: add an [environments.NAME] table to a config file".into()
                } else {
                    format!("known environments: {}", known.join(", "))
                };
                found.push(format!(
                    "role file {}: environment: unknown environment '{env}', its workers cannot be spawned ({known})",
                    path.display(),
                ));
            }
        }
        self.warnings.extend(found);
    }
}

use crate::config::Config;
use crate::config::parse::TomlProblem;
// Between an MCP server's name and its tool's (`everything__echo`); `NAME__*` in a role's
// `tools` or `excluded_tools` means every tool of server NAME.
use crate::mcp::SEPARATOR as MCP_SEPARATOR;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Who a tool is meant for. Each tool's handler says; a role decides within that.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Audience {
    /// Any agent whose role lists it (or lists no tools at all).
    Everyone,
    /// Agents that manage workers: offered exactly when the role has `enabled_agents`.
    Supervisors,
    /// Workers only (`return_results`).
    Workers,
    /// The session's persona, when its role has `handoffs` (`handoff_to`).
    Persona,
    /// Supervisors whose role's `tools` names it (`spawn_batch`): never offered by
    /// default, so the first request of a role that does not ask for it stays as it was.
    Named,
    /// Never by the role's lists: the plan states offer it (`runtime/plan/gate.rs`:
    /// `submit_plan`, `review_plan`), so no other role's requests carry it.
    Plan,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Role {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// A level from `[models]` (`fast`, `base`, `smart`); ignored when `model` is set.
    #[serde(default)]
    pub level: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    /// Required, except for an agent role (`agent`), whose agent has its own.
    #[serde(default)]
    pub system_prompt: String,
    /// Allow-list; absent means every tool except `excluded_tools`.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    #[serde(default)]
    pub excluded_tools: Vec<String>,
    /// Roles this one may spawn as workers.
    #[serde(default)]
    pub enabled_agents: Vec<String>,
    /// Roles this one may hand the session to.
    #[serde(default)]
    pub handoffs: Vec<String>,
    /// Whom its agents may message (`message_agent`): `siblings`, `supervisor`,
    /// `workers`, `team`, or role names. Absent: its siblings and its supervisor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub may_message: Option<Vec<String>>,
    /// Its workers get only their reading tools until their plan (`submit_plan`) is
    /// approved by their supervisor (`review_plan`) or the user (issue 54 part 4).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub plan_first: bool,
    /// As the session's persona, it starts coordinating only: no writing tools, only its
    /// reading and team tools (as `/lead` and Ctrl+L toggle; a handoff to it applies it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub coordinate_only: bool,
    #[serde(default)]
    pub max_iterations: Option<u32>,
    /// Overrides the config's test command for `run_tests`.
    #[serde(default)]
    pub test_command: Option<String>,
    /// `false`: this role's results are not checked (`[verify]` decides otherwise).
    #[serde(default)]
    pub verify: Option<bool>,
    /// Checks added to `[verify] rules` for this role's results.
    #[serde(default)]
    pub verify_rules: Vec<crate::config::CommandRule>,
    /// The MCP servers whose tools this role's agents get; absent means every server
    /// (within `tools` / `excluded_tools`).
    #[serde(default)]
    pub mcp_servers: Option<Vec<String>>,
    /// Where this role's workers write when they may (`[team] isolation` decides
    /// otherwise; `spawn_agent`'s `isolation` wins over both).
    #[serde(default)]
    pub isolation: Option<crate::config::IsolationMode>,
    /// Narrows the session's sandbox for this role's agents (`mode`, `network`); never
    /// widens it.
    #[serde(default, skip_serializing_if = "crate::config::RoleSandbox::is_unset")]
    pub sandbox: crate::config::RoleSandbox,
    /// The environment (`[environments.NAME]`) this role's workers run in; absent: this
    /// machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
    /// Another agent speaking ACP over stdio that this role's workers are, instead of a
    /// squad model loop: `agent = { command = "opencode", args = ["acp"] }` (issue 53).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<crate::acp_client::AgentCommand>,
    /// Where the role came from; filled by the loader, never read from the file.
    #[serde(skip)]
    pub source: RoleSource,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum RoleSource {
    #[default]
    BuiltIn,
    File(PathBuf),
}

impl std::fmt::Display for RoleSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::BuiltIn => f.write_str("built-in"),
            Self::File(p) => write!(f, "{}", p.display()),
        }
    }
}

impl Role {
    /// Why this role cannot run as the persona: it is another agent, which squad runs
    /// only as a worker (`spawn_agent`, `runtime/agent_worker`); its empty prompt would
    /// otherwise make a native agent with no instructions.
    pub fn not_runnable(&self) -> Option<String> {
        let agent = self.agent.as_ref()?;
        Some(format!(
            "role `{}` is another agent (`{}`); squad runs agent roles only as workers \
             (spawn_agent), not as the persona",
            self.name, agent.command
        ))
    }

    /// The model this role's agents call: `--model`/`SQUAD_MODEL` first, then the role's
    /// `model`, then its `level`, then the config's `default_level`.
    /// An agent role's is its command line (`acp: opencode acp`): it calls its own.
    pub fn model(&self, config: &Config) -> String {
        if let Some(agent) = &self.agent {
            return format!("acp: {}", command_line(agent));
        }
        if let Some(model) = &config.model_override {
            return model.clone();
        }
        if let Some(model) = self.model.as_deref().filter(|m| !m.is_empty()) {
            return model.to_string();
        }
        let level = self
            .level
            .as_deref()
            .filter(|l| !l.is_empty())
            .unwrap_or(&config.default_level);
        config.model_for_level(level)
    }

    /// Whether an agent of this role gets tool `name`, meant for `audience`: supervisor
    /// tools only with `enabled_agents`, worker tools only to workers, persona tools only
    /// to the session's persona and only with `handoffs`. These do not depend on `tools`;
    /// `excluded_tools` still removes any tool.
    pub fn offers(&self, name: &str, audience: Audience, is_worker: bool) -> bool {
        if self.excluded_tools.iter().any(|t| names_tool(t, name)) {
            return false;
        }
        match audience {
            Audience::Supervisors => !self.enabled_agents.is_empty(),
            Audience::Workers => is_worker,
            Audience::Persona => !is_worker && !self.handoffs.is_empty(),
            Audience::Everyone => self.allows_tool(name),
            Audience::Named => {
                !self.enabled_agents.is_empty()
                    && (self.tools.iter().flatten()).any(|t| names_tool(t, name))
            }
            Audience::Plan => false,
        }
    }

    /// Whether this role offers a tool named `name` (before the agent-tool rules apply).
    pub fn allows_tool(&self, name: &str) -> bool {
        if self.excluded_tools.iter().any(|t| names_tool(t, name)) {
            return false;
        }
        match &self.tools {
            Some(list) => list.iter().any(|t| names_tool(t, name)),
            None => true,
        }
    }

    /// Whether this role offers tool `name` of MCP server `server`: never when
    /// `excluded_tools` names it; with `mcp_servers`, exactly the tools of the servers
    /// listed (listing a server asks for its tools); otherwise as `tools` says.
    pub fn offers_mcp(&self, server: &str, name: &str) -> bool {
        if self.excluded_tools.iter().any(|t| names_tool(t, name)) {
            return false;
        }
        match &self.mcp_servers {
            Some(servers) => servers.iter().any(|s| s == server),
            None => self.allows_tool(name),
        }
    }
}

/// Checks serde cannot express: names usable on the command line, a real prompt, verify
/// rules with a command and globs that parse.
fn check_fields(role: &Role) -> Result<(), TomlProblem> {
    let problem = |key: &str, message: String| TomlProblem {
        line: None,
        column: None,
        key: key.to_string(),
        message,
    };
    let valid_name = !role.name.is_empty()
        && role
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !valid_name {
        return Err(problem(
            "name",
            format!(
                "expected a name of letters, digits, '_' or '-', found {:?}",
                role.name
            ),
        ));
    }
    if role.system_prompt.trim().is_empty() && role.agent.is_none() {
        return Err(problem(
            "system_prompt",
            "expected the role's instructions (needed unless it has an `agent`), found an empty string or none".into(),
        ));
    }
    if role
        .agent
        .as_ref()
        .is_some_and(|a| a.command.trim().is_empty())
    {
        return Err(problem(
            "agent.command",
            "expected the agent's program (`opencode`, a path), found an empty string".into(),
        ));
    }
    if role
        .environment
        .as_deref()
        .is_some_and(|e| e.trim().is_empty())
    {
        return Err(problem(
            "environment",
            "expected the name of an [environments.NAME] table, found an empty string".into(),
        ));
    }
    if role.coordinate_only && role.enabled_agents.is_empty() {
        return Err(problem(
            "coordinate_only",
            "a persona that coordinates only needs workers: expected enabled_agents to name \
             the roles it spawns (or coordinate_only = false)"
                .into(),
        ));
    }
    if role.max_iterations == Some(0) {
        return Err(problem(
            "max_iterations",
            "expected at least 1, found 0".to_string(),
        ));
    }
    for (i, rule) in role.verify_rules.iter().enumerate() {
        crate::config::check_rule(rule)
            .map_err(|message| problem(&format!("verify_rules[{i}]"), message))?;
    }
    Ok(())
}

/// Whether an entry of `tools` / `excluded_tools` names tool `name`: the same name, or
/// `SERVER__*` for every tool of an MCP server.
fn names_tool(entry: &str, name: &str) -> bool {
    match entry.strip_suffix('*') {
        Some(prefix) if prefix.ends_with(MCP_SEPARATOR) => name.starts_with(prefix),
        _ => entry == name,
    }
}
