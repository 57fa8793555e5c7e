//! The session's MCP servers, seen from the runtime: they start once the session has
//! announced itself, and each change of state reaches the front ends as an event (a
//! failure the user must hear of also as an error, once).

use super::engine::Engine;
use crate::mcp::{ServerState, ServerStatus};
use crate::protocol::{EventKind, McpServerState};
use std::sync::Arc;
use tokio::sync::mpsc;

/// Starts the servers in the background and forwards their statuses as events.
pub fn start_servers(engine: &Arc<Engine>, mut statuses: mpsc::UnboundedReceiver<ServerStatus>) {
    let weak = Arc::downgrade(engine);
    tokio::spawn(async move {
        while let Some(status) = statuses.recv().await {
            let Some(engine) = weak.upgrade() else { break };
            let root = engine.root();
            let report = status.report.clone();
            engine.team.emit(root, event(status));
            if let Some(message) = report {
                engine.team.emit(root, EventKind::Error { message });
            }
        }
    });
    engine.tools.mcp().start();
}

fn event(status: ServerStatus) -> EventKind {
    let (state, error) = match status.state {
        ServerState::Disabled => (McpServerState::Disabled, None),
        ServerState::Starting => (McpServerState::Starting, None),
        ServerState::Ready => (McpServerState::Ready, None),
        ServerState::Failed(why) => (McpServerState::Failed, Some(why)),
        ServerState::Stopped => (McpServerState::Stopped, None),
    };
    EventKind::McpServer {
        server: status.name,
        state,
        transport: status.transport,
        tools: status.tools,
        error,
    }
}
