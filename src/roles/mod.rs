//! Roles (personas): what an agent is told, which tools it gets, whom it may spawn and hand
//! off to. Built-ins are embedded; user files in `<config dir>/squad/roles/` and
//! `.squad/roles/` override them by name.

mod load;

pub use load::{DEFAULT_ROLE, RoleError, RoleSet, load_roles, load_roles_from};

use crate::config::Config;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Every tool a role may name in `tools` / `excluded_tools`.
pub const TOOL_NAMES: [&str; 14] = [
    "read_file",
    "write_file",
    "edit_file",
    "list_files",
    "search_files",
    "run_command",
    "run_tests",
    "spawn_agent",
    "wait_for_agents",
    "speak_to_agent",
    "get_agents",
    "despawn_agent",
    "return_results",
    "handoff_to",
];

/// The tools that act on the team rather than on files: the runtime runs them itself.
pub const AGENT_TOOLS: [&str; 7] = [
    "spawn_agent",
    "wait_for_agents",
    "speak_to_agent",
    "get_agents",
    "despawn_agent",
    "return_results",
    "handoff_to",
];

/// Tools for managing workers: offered exactly when the role has `enabled_agents`.
pub const WORKER_TOOLS: [&str; 5] = [
    "spawn_agent",
    "wait_for_agents",
    "speak_to_agent",
    "get_agents",
    "despawn_agent",
];

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
    #[serde(default)]
    pub max_iterations: Option<u32>,
    /// Overrides the config's test command for `run_tests`.
    #[serde(default)]
    pub test_command: Option<String>,
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
    /// The model this role's agents call: `--model`/`SQUAD_MODEL` first, then the role's
    /// `model`, then its `level`, then the config's `default_level`.
    pub fn model(&self, config: &Config) -> String {
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

    /// Whether an agent of this role gets tool `name`, with the agent-tool rules applied:
    /// the worker tools only with `enabled_agents`, `return_results` only to workers,
    /// `handoff_to` only to the session's persona and only with `handoffs`. These do not
    /// depend on `tools`; `excluded_tools` still removes any tool.
    pub fn offers_tool(&self, name: &str, is_worker: bool) -> bool {
        if self.excluded_tools.iter().any(|t| t == name) {
            return false;
        }
        if WORKER_TOOLS.contains(&name) {
            return !self.enabled_agents.is_empty();
        }
        match name {
            "return_results" => is_worker,
            "handoff_to" => !is_worker && !self.handoffs.is_empty(),
            _ => self.allows_tool(name),
        }
    }

    /// Whether this role offers a tool named `name` (before the agent-tool rules apply).
    pub fn allows_tool(&self, name: &str) -> bool {
        if self.excluded_tools.iter().any(|t| t == name) {
            return false;
        }
        match &self.tools {
            Some(list) => list.iter().any(|t| t == name),
            None => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_lists_agree() {
        assert!(AGENT_TOOLS.iter().all(|t| TOOL_NAMES.contains(t)));
        assert!(WORKER_TOOLS.iter().all(|t| AGENT_TOOLS.contains(t)));
        assert_eq!(
            TOOL_NAMES.len(),
            AGENT_TOOLS.len() + 7,
            "seven coding tools"
        );
    }
}
