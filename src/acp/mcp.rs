//! The client's MCP servers (`mcpServers` of `session/new` and `session/load`) join the
//! session's own from the config.

use crate::config::McpServerConfig;
use agent_client_protocol::v1::schema::McpServer;
use std::collections::BTreeMap;

/// Adds the client's servers; one named like a configured server gets `-editor` appended.
/// Kinds squad cannot start (SSE, MCP over ACP) are logged and left out.
pub fn join(servers: &mut BTreeMap<String, McpServerConfig>, from_client: &[McpServer]) {
    for entry in from_client {
        let Some((name, server)) = convert(entry) else {
            tracing::warn!("acp: an MCP server squad cannot start: {entry:?}");
            continue;
        };
        let name = if servers.contains_key(&name) {
            format!("{name}-editor")
        } else {
            name
        };
        servers.insert(name, server);
    }
}

/// A stdio server (command, args, env) or an HTTP one (url).
fn convert(entry: &McpServer) -> Option<(String, McpServerConfig)> {
    match entry {
        McpServer::Stdio(s) => Some((
            s.name.clone(),
            McpServerConfig {
                command: Some(s.command.to_string_lossy().into_owned()),
                args: s.args.clone(),
                env: s
                    .env
                    .iter()
                    .map(|v| (v.name.clone(), v.value.clone()))
                    .collect(),
                ..McpServerConfig::default()
            },
        )),
        McpServer::Http(h) => {
            if !h.headers.is_empty() {
                // squad takes a bearer token only from its own environment (`bearer_token_env`).
                tracing::warn!("acp: the headers of an HTTP MCP server are not passed on");
            }
            Some((
                h.name.clone(),
                McpServerConfig {
                    url: Some(h.url.clone()),
                    ..McpServerConfig::default()
                },
            ))
        }
        _ => None,
    }
}
