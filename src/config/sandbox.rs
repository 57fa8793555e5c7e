//! `[sandbox]`: the OS sandbox `run_command`, `run_tests` and verification commands run in
//! (`crate::sandbox` applies it). Config only says what the user asked for; what the machine
//! can give is probed at start.

use serde::{Deserialize, Serialize};

/// How far a command may reach. Ordered from the narrowest to the widest, so a worker's
/// mode is the `min` of its supervisor's and its role's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Reads everywhere but `deny_read`; writes only to the command's private temp dir.
    ReadOnly,
    /// Also writes in the agent's root (its worktree, or the workspace) and `writable`.
    #[default]
    WorkspaceWrite,
    /// No sandbox: commands run with all of the user's rights (the old behaviour).
    Off,
}

impl SandboxMode {
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim() {
            "workspace-write" => Some(Self::WorkspaceWrite),
            "read-only" => Some(Self::ReadOnly),
            "off" => Some(Self::Off),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::WorkspaceWrite => "workspace-write",
            Self::ReadOnly => "read-only",
            Self::Off => "off",
        }
    }
}

/// `[sandbox]` in a config file or a profile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    pub mode: SandboxMode,
    /// More paths commands may write (`~/` is the home directory), in `workspace-write`.
    pub writable: Vec<String>,
    /// Paths commands may not read (squad's own data dir is always added).
    pub deny_read: Vec<String>,
    /// Whether commands may use the network.
    pub network: bool,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        Self {
            mode: SandboxMode::default(),
            writable: Vec::new(),
            deny_read: ["~/.ssh", "~/.aws", "~/.config/gcloud"]
                .map(String::from)
                .to_vec(),
            network: false,
        }
    }
}

/// A role file's `[sandbox]`: it may only narrow what the session (and the supervisor)
/// has, never widen it, so a role file that came with a repository cannot lift the sandbox.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RoleSandbox {
    pub mode: Option<SandboxMode>,
    pub network: Option<bool>,
}

impl RoleSandbox {
    pub fn is_unset(&self) -> bool {
        self.mode.is_none() && self.network.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_order_from_narrow_to_wide_and_parse_their_names() {
        assert!(SandboxMode::ReadOnly < SandboxMode::WorkspaceWrite);
        assert!(SandboxMode::WorkspaceWrite < SandboxMode::Off);
        for mode in [
            SandboxMode::ReadOnly,
            SandboxMode::WorkspaceWrite,
            SandboxMode::Off,
        ] {
            assert_eq!(SandboxMode::parse(mode.as_str()), Some(mode));
        }
        assert_eq!(SandboxMode::parse("none"), None);
    }
}
