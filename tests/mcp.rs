//! MCP servers as tools, against real servers nobody here wrote: the reference
//! `@modelcontextprotocol/server-everything` (npm) and `mcp-server-git` (PyPI), installed
//! by `.ci/mcp-servers`.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::mcp::*;
use serde_json::json;
use squad::config::McpServerConfig;
use squad::mcp::{McpHub, ServerState};
use std::collections::BTreeMap;
use tokio_util::sync::CancellationToken;

fn stdio(command: &str, args: &[&str]) -> McpServerConfig {
    McpServerConfig {
        command: Some(command.to_string()),
        args: args.iter().map(|a| a.to_string()).collect(),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn hub_lists_the_everything_tools_with_their_schemas_and_calls_them() {
    let Some((node, index)) = everything("hub_lists_the_everything_tools") else {
        return;
    };
    let ws = tempfile::tempdir().unwrap();
    let configs: BTreeMap<_, _> =
        [("everything".to_string(), stdio(&node, &[index.to_str().unwrap(), "stdio"]))].into();
    let hub = McpHub::new(&configs, ws.path(), None);
    hub.start();
    hub.wait_started().await;
    let status = &hub.statuses()[0];
    assert_eq!(status.state, ServerState::Ready, "{status:?}");
    let echo = hub.tool("everything__echo").expect("echo listed");
    assert!(echo.read_only);
    assert_eq!(echo.spec.parameters["properties"]["message"]["type"], "string");
    let out = hub
        .call("everything__echo", json!({"message": "hi"}), 1000, &CancellationToken::new())
        .await;
    assert_eq!(out, Ok("Echo: hi".to_string()));
    let out = hub
        .call("everything__get-tiny-image", json!({}), 1000, &CancellationToken::new())
        .await
        .unwrap();
    assert!(out.contains("[image: image/png"), "{out}");
    hub.shutdown().await;
}
