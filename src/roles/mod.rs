//! Roles (personas): what an agent is told, which tools it gets, whom it may spawn and hand
//! off to. Built-ins are embedded; user files in `<config dir>/squad/roles/` and
//! `.squad/roles/` override them by name.

mod load;

pub use load::{RoleError, RoleSet, load_roles};

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

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
