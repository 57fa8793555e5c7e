//! The session as a whole: what it started with, the settings the user changes on the
//! way (model, approval), the server's models, MCP servers, project instructions, a role
//! saved, and a deadlocked board. Lines go to the persona's conversation.

use super::{EntryKind, McpView, SessionState};
use crate::protocol::{AgentId, ApprovalPolicy, McpServerState, StuckTask};
use crate::tui::format;
use std::path::{Path, PathBuf};
use std::time::Instant;

impl SessionState {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn session_started(
        &mut self,
        session_id: &str,
        workspace: &Path,
        model: &str,
        role: &str,
        approval: ApprovalPolicy,
        resumed: bool,
        roles: &[String],
    ) {
        self.roles = roles.to_vec();
        self.session_id = session_id.to_string();
        self.workspace = workspace.to_path_buf();
        self.model = model.to_string();
        self.active_role = role.to_string();
        self.approval = approval;
        self.resumed = resumed;
    }

    pub(super) fn model_set(&mut self, id: AgentId, model: &str, now: Instant) {
        self.model = model.to_string();
        let line = format!("model: {model} from the next call");
        self.agent_entry(id, now)
            .conversation
            .push(EntryKind::Notice(line));
    }

    pub(super) fn approval_set(&mut self, id: AgentId, approval: ApprovalPolicy, now: Instant) {
        self.approval = approval;
        let line = format!("approval: {} for every agent", approval.as_str());
        self.agent_entry(id, now)
            .conversation
            .push(EntryKind::Notice(line));
    }

    pub(super) fn models_listed(&mut self, models: &[String], error: Option<&str>) {
        self.models = Some(match error {
            Some(e) => Err(e.to_string()),
            None => Ok(models.to_vec()),
        });
    }

    pub(super) fn mcp_server(
        &mut self,
        server: &str,
        state: McpServerState,
        transport: &str,
        tools: &[String],
        error: &Option<String>,
    ) {
        let view = McpView {
            state,
            transport: transport.to_string(),
            tools: tools.to_vec(),
            error: error.clone(),
        };
        self.mcp.insert(server.to_string(), view);
    }

    pub(super) fn instructions_loaded(
        &mut self,
        id: AgentId,
        files: &[PathBuf],
        bytes: u64,
        cut: bool,
        now: Instant,
    ) {
        let names: Vec<String> = files
            .iter()
            .map(|f| {
                f.strip_prefix(&self.workspace)
                    .unwrap_or(f)
                    .display()
                    .to_string()
            })
            .collect();
        let cut = if cut { ", cut to the limit" } else { "" };
        self.instructions = Some(names.join(", "));
        let message = format!(
            "project instructions loaded: {} ({}{cut})",
            names.join(", "),
            format::bytes(bytes)
        );
        self.agent_entry(id, now)
            .conversation
            .push(EntryKind::Notice(message));
    }

    pub(super) fn role_saved(&mut self, id: AgentId, name: &str, path: &Path, now: Instant) {
        let path = path.strip_prefix(&self.workspace).unwrap_or(path);
        let line = format!(
            "role and prompt saved as role `{name}` in {} (loads with the next session)",
            path.display()
        );
        self.agent_entry(id, now)
            .conversation
            .push(EntryKind::Notice(line));
    }

    pub(super) fn deadlock(&mut self, tasks: &[StuckTask], now: Instant) {
        let stuck: Vec<String> = tasks
            .iter()
            .map(|t| format!("{} ({})", t.id, t.why))
            .collect();
        let root = self.root_agent;
        self.agent_entry(root, now)
            .conversation
            .push(EntryKind::Error(format!(
                "task board deadlock: nothing can run: {}",
                stuck.join("; ")
            )));
    }
}
