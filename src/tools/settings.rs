//! What the coding tools need from config and role, decided here rather than in config so
//! config stays the bottom layer that knows nothing of tools.

use crate::config::Config;
use std::time::Duration;

/// Settings the coding tools need, taken from config and role.
#[derive(Clone, Debug)]
pub struct ToolSettings {
    pub command_timeout: Duration,
    /// Cap on combined command output kept for the model, in bytes.
    pub max_output_bytes: usize,
    /// Cap on what `read_file` returns, in bytes.
    pub read_max_bytes: usize,
    /// Shell command `run_tests` runs; `None` means the tool explains how to set one.
    pub test_command: Option<String>,
}

impl Default for ToolSettings {
    fn default() -> Self {
        Self {
            command_timeout: Duration::from_secs(120),
            max_output_bytes: 32 * 1024,
            read_max_bytes: 256 * 1024,
            test_command: None,
        }
    }
}

impl ToolSettings {
    /// From `[tools]`; the role's test command wins over the config's.
    pub fn from_config(config: &Config, role_test_command: Option<&str>) -> Self {
        Self {
            command_timeout: Duration::from_secs(config.tools.command_timeout_s),
            max_output_bytes: config.tools.max_output_bytes,
            read_max_bytes: config.tools.read_max_bytes,
            test_command: role_test_command
                .map(str::to_string)
                .or_else(|| config.tools.test_command.clone())
                .filter(|c| !c.trim().is_empty()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_settings_map_tools_section_and_role_wins() {
        let mut c = Config::default();
        c.tools.command_timeout_s = 7;
        c.tools.max_output_bytes = 100;
        c.tools.read_max_bytes = 200;
        let s = ToolSettings::from_config(&c, None);
        assert_eq!(s.command_timeout, std::time::Duration::from_secs(7));
        assert_eq!((s.max_output_bytes, s.read_max_bytes), (100, 200));
        assert_eq!(s.test_command, None);
        c.tools.test_command = Some("make test".into());
        assert_eq!(
            ToolSettings::from_config(&c, None).test_command.as_deref(),
            Some("make test")
        );
        assert_eq!(
            ToolSettings::from_config(&c, Some("cargo test"))
                .test_command
                .as_deref(),
            Some("cargo test")
        );
    }
}
