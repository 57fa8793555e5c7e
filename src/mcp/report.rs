//! `squad mcp list`: every configured server started, shown with its state and tools,
//! and stopped again.

use super::hub::{McpHub, ServerState};
use crate::config::McpServerConfig;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

/// The listing, and whether every enabled server started.
pub async fn list_servers(
    servers: &BTreeMap<String, McpServerConfig>,
    workspace: &Path,
) -> (String, bool) {
    if servers.is_empty() {
        return (
            "no MCP servers configured: add an [mcp_servers.NAME] table (command = … or \
             url = …) to .squad/config.toml\n"
                .to_string(),
            true,
        );
    }
    let hub = McpHub::new(servers, workspace, None);
    hub.start();
    hub.wait_started().await;
    let mut out = String::new();
    let mut all_up = true;
    let name_width = servers.keys().map(String::len).max().unwrap_or(0);
    for status in hub.statuses() {
        let state = match &status.state {
            ServerState::Ready => match status.started_in {
                Some(d) => format!("ready in {:.1} s", d.as_secs_f64()),
                None => "ready".to_string(),
            },
            ServerState::Disabled => "disabled".to_string(),
            ServerState::Starting => "starting".to_string(),
            ServerState::Stopped => "stopped".to_string(),
            ServerState::Failed(_) => {
                all_up = false;
                "failed".to_string()
            }
        };
        let _ = writeln!(
            out,
            "{:<name_width$}  {state}  {}",
            status.name, status.transport
        );
        if let ServerState::Failed(why) = &status.state {
            let _ = writeln!(out, "  {why}");
        }
        let tools: Vec<_> = status.tools.iter().filter_map(|t| hub.tool(t)).collect();
        let tool_width = tools.iter().map(|t| t.name.len()).max().unwrap_or(0);
        for tool in tools {
            let gate = if tool.read_only {
                "read-only"
            } else {
                "asks     "
            };
            let mut summary = crate::text::one_line(&tool.spec.description);
            if summary.chars().count() > 90 {
                summary = summary.chars().take(89).collect::<String>() + "…";
            }
            let _ = writeln!(out, "  {:<tool_width$}  {gate}  {summary}", tool.name);
        }
    }
    hub.shutdown().await;
    (out, all_up)
}
