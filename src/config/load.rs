//! PLACEHOLDER — to be replaced by the config loader (layering, env, errors).
use super::Config;
use crate::protocol::ApprovalPolicy;
use std::path::{Path, PathBuf};

/// What the command line sets; applied last.
#[derive(Clone, Debug, Default)]
pub struct ConfigOverrides {
    pub config_file: Option<PathBuf>,
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub approval: Option<ApprovalPolicy>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{0}")]
    Invalid(String),
}

pub fn load_config(_workspace: &Path, _overrides: &ConfigOverrides) -> Result<Config, ConfigError> {
    Ok(Config::default())
}

impl Config {
    pub fn tool_settings(&self, role_test_command: Option<&str>) -> crate::tools::ToolSettings {
        crate::tools::ToolSettings {
            command_timeout: std::time::Duration::from_secs(self.tools.command_timeout_s),
            max_output_bytes: self.tools.max_output_bytes,
            read_max_bytes: self.tools.read_max_bytes,
            test_command: role_test_command
                .map(str::to_string)
                .or_else(|| self.tools.test_command.clone()),
        }
    }
}
