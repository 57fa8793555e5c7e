//! `!command` typed by the user (`Op::RunCommand`): run as the persona's `run_command`
//! would be (its sandbox, the configured timeout) but without asking, since the user typed
//! it; its output goes into the persona's conversation, where the user sees it and the
//! persona reads it on its next model call. It starts no turn.

use super::session::Session;
use super::team::Steer;
use crate::protocol::{EventKind, HistoryItem};
use crate::tools::{RunCommand, ToolHandler};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Off the ops loop: a command may run for minutes.
pub fn serve(session: &Arc<Session>, command: String) {
    let root = session.root();
    if command.trim().is_empty() {
        let message = "usage: !COMMAND (a shell command line)".to_string();
        session.team.emit(root, EventKind::Error { message });
        return;
    }
    if let Some(history) = &session.prompts {
        history.append(&format!("!{command}"));
    }
    let session = session.clone();
    tokio::spawn(async move {
        let role = session.team.role(root).unwrap_or_default();
        let ctx = session.tool_context(root, &role, &CancellationToken::new());
        let args = serde_json::json!({ "command": command });
        let output = match RunCommand.call(&ctx, args).await {
            Ok(out) => out,
            Err(e) => format!("could not run: {e}"),
        };
        let text = format!("!{command}\n{output}");
        // Mid-turn it joins the turn's next model call; otherwise the conversation now.
        if let Err(steer) = session.team.steer(root, Steer { text, taken: None }) {
            session.team.push_item(root, HistoryItem::user(steer.text));
        }
    });
}
