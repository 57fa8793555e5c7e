//! The session's MCP servers, seen from the runtime: they start once the session has
//! announced itself, and each change of state reaches the front ends as an event (a
//! failure the user must hear of also as an error, once).

use super::session::Session;
use crate::mcp::{ServerState, ServerStatus};
use crate::protocol::{EventKind, McpServerState};
use std::sync::Arc;
use tokio::sync::mpsc;

/// Starts the servers in the background and forwards their statuses as events.
pub fn start_servers(session: &Arc<Session>, mut statuses: mpsc::UnboundedReceiver<ServerStatus>) {
    let weak = Arc::downgrade(session);
    tokio::spawn(async move {
        while let Some(status) = statuses.recv().await {
            let Some(session) = weak.upgrade() else { break };
            let root = session.root();
            let report = status.report.clone();
            session.team.emit(root, event(status));
            if let Some(message) = report {
                session.team.emit(root, EventKind::Error { message });
            }
        }
    });
    session.tools.mcp().start();
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
