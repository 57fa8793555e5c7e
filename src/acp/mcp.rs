//! The client's MCP servers (`mcpServers` of `session/new` and `session/load`) join the
//! session's own from the config.

use crate::config::McpServerConfig;
use serde_json::Value;
use std::collections::BTreeMap;

/// Adds the client's servers; one named like a configured server gets `-editor` appended.
/// Entries squad cannot use are logged and left out.
pub fn join(servers: &mut BTreeMap<String, McpServerConfig>, from_client: Option<&Value>) {
    for entry in from_client.and_then(Value::as_array).into_iter().flatten() {
        let Some(name) = entry.get("name").and_then(Value::as_str) else {
            tracing::warn!("acp: an MCP server without a name: {entry}");
            continue;
        };
        let Some(server) = convert(entry) else {
            tracing::warn!("acp: MCP server `{name}` is not one squad can start: {entry}");
            continue;
        };
        let name = if servers.contains_key(name) {
            format!("{name}-editor")
        } else {
            name.to_string()
        };
        servers.insert(name, server);
    }
}

/// A stdio server (`command`, `args`, `env` as name/value pairs) or an HTTP one (`url`).
fn convert(entry: &Value) -> Option<McpServerConfig> {
    let strings = |key: &str| -> Vec<String> {
        entry
            .get(key)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default()
    };
    let pairs = |key: &str| -> BTreeMap<String, String> {
        entry
            .get(key)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|p| {
                        Some((
                            p.get("name")?.as_str()?.to_string(),
                            p.get("value")?.as_str()?.to_string(),
                        ))
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    match entry.get("type").and_then(Value::as_str) {
        None | Some("stdio") => Some(McpServerConfig {
            command: Some(entry.get("command")?.as_str()?.to_string()),
            args: strings("args"),
            env: pairs("env"),
            ..McpServerConfig::default()
        }),
        Some("http") => {
            if !pairs("headers").is_empty() {
                // squad takes a bearer token only from its own environment (`bearer_token_env`).
                tracing::warn!("acp: the headers of an HTTP MCP server are not passed on");
            }
            Some(McpServerConfig {
                url: Some(entry.get("url")?.as_str()?.to_string()),
                ..McpServerConfig::default()
            })
        }
        _ => None,
    }
}
