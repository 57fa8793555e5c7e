//! `[mcp_servers.NAME]`: the MCP servers whose tools squad's agents may use. Only the
//! settings live here (config is the bottom layer); `crate::mcp` starts and talks to them.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Longest server name: `NAME__TOOL` must leave room for the tool within 64 characters.
pub const MAX_SERVER_NAME: usize = 32;

/// One MCP server: a command speaking MCP on stdio, or a streamable HTTP `url`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpServerConfig {
    /// Program to start (stdio transport), found on `PATH` unless a path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    pub args: Vec<String>,
    /// Added to squad's own environment for the server process.
    pub env: BTreeMap<String, String>,
    /// Working directory of the process; relative to the workspace root (default: it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// Streamable HTTP endpoint, instead of `command`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Name of the environment variable holding a bearer token for `url` (never the token).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bearer_token_env: Option<String>,
    pub enabled: bool,
    /// Longest the server may take to start and list its tools.
    pub startup_timeout_s: u64,
    /// Longest one tool call may take.
    pub tool_timeout_s: u64,
    /// Only these tools (server's own names); absent means all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled_tools: Option<Vec<String>>,
    /// Never these tools (server's own names).
    pub disabled_tools: Vec<String>,
}

impl Default for McpServerConfig {
    fn default() -> Self {
        Self {
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
            url: None,
            bearer_token_env: None,
            enabled: true,
            startup_timeout_s: 30,
            tool_timeout_s: 120,
            enabled_tools: None,
            disabled_tools: Vec::new(),
        }
    }
}

impl McpServerConfig {
    /// Whether the server offers its tool `name` (the server's own name).
    pub fn allows_tool(&self, name: &str) -> bool {
        self.enabled_tools
            .as_ref()
            .is_none_or(|list| list.iter().any(|t| t == name))
            && !self.disabled_tools.iter().any(|t| t == name)
    }

    /// The working directory of a stdio server in `workspace`.
    pub fn cwd_in(&self, workspace: &Path) -> PathBuf {
        match &self.cwd {
            Some(dir) if dir.is_absolute() => dir.clone(),
            Some(dir) => workspace.join(dir),
            None => workspace.to_path_buf(),
        }
    }
}

/// Problems one file can show on its own, as `(key, what is expected)`. Whether a server
/// has a transport at all is checked after merging ([`missing_transport`]): a project file
/// may just switch off a server the user file defines.
pub(crate) fn problems(servers: &BTreeMap<String, McpServerConfig>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (name, server) in servers {
        let key = |k: &str| format!("mcp_servers.{name}{k}");
        if let Err(message) = check_name(name) {
            out.push((key(""), message));
        }
        if server.command.is_some() && server.url.is_some() {
            out.push((
                key(""),
                "expected either `command` (stdio) or `url` (streamable HTTP), found both"
                    .to_string(),
            ));
        }
        if server
            .command
            .as_deref()
            .is_some_and(|c| c.trim().is_empty())
        {
            out.push((
                key(".command"),
                "expected a program to run, found an empty string".to_string(),
            ));
        }
        if let Some(url) = &server.url
            && let Err(e) = super::check_base_url(url)
        {
            out.push((
                key(".url"),
                e.replace(" (e.g. https://api.openai.com/v1)", ""),
            ));
        }
        if server.bearer_token_env.is_some() && server.command.is_some() {
            out.push((
                key(".bearer_token_env"),
                "only for a `url` server; give a stdio server its token in `env`".to_string(),
            ));
        }
        for (k, v) in [
            (".startup_timeout_s", server.startup_timeout_s),
            (".tool_timeout_s", server.tool_timeout_s),
        ] {
            if v == 0 {
                out.push((key(k), "expected at least 1, found 0".to_string()));
            }
        }
    }
    out
}

/// Enabled servers with neither `command` nor `url` once every layer is merged.
pub(crate) fn missing_transport(servers: &BTreeMap<String, McpServerConfig>) -> Option<String> {
    servers
        .iter()
        .find(|(_, s)| s.enabled && s.command.is_none() && s.url.is_none())
        .map(|(name, _)| name.clone())
}

/// Server names end up in tool names (`NAME__TOOL`), which OpenAI limits to letters,
/// digits, `_` and `-`; a `__` inside would make the split ambiguous.
fn check_name(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name.len() <= MAX_SERVER_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !name.contains("__")
        && !name.ends_with('_');
    if valid {
        Ok(())
    } else {
        Err(format!(
            "expected a server name of at most {MAX_SERVER_NAME} letters, digits, '_' or '-' \
             (no '__', not ending in '_'), found {name:?}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(name: &str, server: McpServerConfig) -> BTreeMap<String, McpServerConfig> {
        [(name.to_string(), server)].into_iter().collect()
    }

    #[test]
    fn names_and_transports_are_checked() {
        let stdio = McpServerConfig {
            command: Some("node".into()),
            ..Default::default()
        };
        assert!(problems(&one("everything", stdio.clone())).is_empty());
        let p = problems(&one("a__b", stdio.clone()));
        assert_eq!(p[0].0, "mcp_servers.a__b");
        let both = McpServerConfig {
            url: Some("http://127.0.0.1:1/mcp".into()),
            ..stdio.clone()
        };
        assert!(problems(&one("x", both))[0].1.contains("found both"));
        let bad_url = McpServerConfig {
            url: Some("127.0.0.1/mcp".into()),
            ..Default::default()
        };
        assert_eq!(problems(&one("x", bad_url))[0].0, "mcp_servers.x.url");
        let zero = McpServerConfig {
            tool_timeout_s: 0,
            ..stdio
        };
        assert_eq!(
            problems(&one("x", zero))[0],
            (
                "mcp_servers.x.tool_timeout_s".to_string(),
                "expected at least 1, found 0".to_string()
            )
        );
    }

    #[test]
    fn a_layer_may_only_switch_a_server_off() {
        let off = McpServerConfig {
            enabled: false,
            ..Default::default()
        };
        assert!(problems(&one("git", off.clone())).is_empty());
        assert_eq!(missing_transport(&one("git", off)), None);
        assert_eq!(
            missing_transport(&one("git", McpServerConfig::default())).as_deref(),
            Some("git")
        );
    }

    /// Loads a user file and a workspace file through the real layering.
    fn load(user: &str, workspace: &str) -> Result<crate::config::Config, String> {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("ws/.squad")).unwrap();
        std::fs::write(tmp.path().join("config.toml"), user).unwrap();
        std::fs::write(tmp.path().join("ws/.squad/config.toml"), workspace).unwrap();
        let sources = crate::config::ConfigSources {
            user_dir: Some(tmp.path().to_path_buf()),
            workspace: tmp.path().join("ws"),
            env: Default::default(),
        };
        crate::config::load_config_from(&sources, &Default::default()).map_err(|e| {
            e.to_string()
                .replace(&tmp.path().display().to_string(), "T")
        })
    }

    #[test]
    fn servers_layer_key_by_key_and_errors_name_file_and_key() {
        let user = "[mcp_servers.git]\ncommand = \"uvx\"\nargs = [\"mcp-server-git\"]\n";
        let c = load(user, "[mcp_servers.git]\ntool_timeout_s = 5\n").unwrap();
        let git = &c.mcp_servers["git"];
        assert_eq!(git.command.as_deref(), Some("uvx"));
        assert_eq!((git.tool_timeout_s, git.startup_timeout_s), (5, 30));
        // A project may switch off a server of the user's.
        let c = load(user, "[mcp_servers.git]\nenabled = false\n").unwrap();
        assert!(!c.mcp_servers["git"].enabled);

        let err = load("", "[mcp_servers.git]\nargs = \"x\"\n").unwrap_err();
        assert_eq!(
            err,
            "config error in T/ws/.squad/config.toml: mcp_servers.git.args: expected an array, \
             found a string \"x\" (line 2, column 8)"
        );
        let err = load("", "[mcp_servers.git]\ncomand = \"x\"\n").unwrap_err();
        assert!(
            err.starts_with(
                "config error in T/ws/.squad/config.toml: mcp_servers.git: unknown key 'comand' \
                 (known keys: command, args, env, cwd, url, bearer_token_env,"
            ),
            "{err}"
        );
        let err = load("", "[mcp_servers.git]\nstartup_timeout_s = 0\n").unwrap_err();
        assert_eq!(
            err,
            "config error in T/ws/.squad/config.toml: mcp_servers.git.startup_timeout_s: \
             expected at least 1, found 0"
        );
        let err = load("[mcp_servers.git]\nargs = []\n", "").unwrap_err();
        assert!(
            err.starts_with("config error in T/config.toml: mcp_servers.git: expected `command`"),
            "{err}"
        );
    }

    #[test]
    fn tool_filters() {
        let s = McpServerConfig {
            enabled_tools: Some(vec!["echo".into(), "get-sum".into()]),
            disabled_tools: vec!["get-sum".into()],
            ..Default::default()
        };
        assert!(s.allows_tool("echo"));
        assert!(!s.allows_tool("get-sum"));
        assert!(!s.allows_tool("get-env"));
    }
}
