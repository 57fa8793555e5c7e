//! What the agents of one session share: config, roles, the model, the tools, the
//! workspace, the team, the board, the questions and approvals waiting on the user. Built
//! once by `start`, then read-only but for the team, which owns all that changes. An agent
//! reaches it through its [`super::cx::AgentCx`]. The policies keep their own state (each
//! in its folder under `policies/`); the one question the session asks of one, where an
//! agent works and in which sandbox, it asks through [`Places`].

use super::agent_tools::return_results::RETURN_RESULTS;
use super::approval::ApprovalGate;
use super::request::RequestSetup;
use super::team::Team;
use super::toolbox::ToolBox;
use crate::config::{Config, SandboxMode};
use crate::context::{ContextWindows, Instructions, estimate_text};
use crate::model::{ChatRequest, ModelClient};
use crate::protocol::AgentId;
use crate::roles::{Role, RoleSet};
use crate::sandbox::{Confined, Level};
use crate::tools::{ToolContext, ToolSettings};
use crate::workspace::Workspace;
use std::path::Path;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Where each agent works and in which sandbox its commands run: the isolation policy
/// answers (its worktrees, the sandbox narrowed by roles), every tool context asks.
pub trait Places: Send + Sync {
    /// Where `agent`'s tools work: its worktree (or its supervisor's), else `shared`.
    fn workspace_for(&self, team: &Team, agent: AgentId, shared: &Arc<Workspace>)
    -> Arc<Workspace>;
    /// The sandbox level of `agent`'s commands.
    fn level(&self, team: &Team, agent: AgentId) -> Level;
    /// The confinement of a command `agent` runs in `root`; `None`: unconfined.
    fn confined(&self, team: &Team, agent: AgentId, root: &Path) -> Option<Arc<Confined>>;
}

pub struct Session {
    pub config: Arc<Config>,
    pub roles: RoleSet,
    pub model: Arc<dyn ModelClient>,
    pub tools: ToolBox,
    pub workspace: Arc<Workspace>,
    pub gate: Arc<ApprovalGate>,
    /// Questions agents put to the user, waiting for their answers.
    pub questions: super::questions::Questions,
    /// Workers' plans and the persona's coordinate-only mode (`plan/`).
    pub plans: super::plan::Plans,
    pub team: Team,
    /// Bounds model calls in flight across the whole session; workers queue here, before
    /// their request's timeout starts.
    pub model_slots: Arc<crate::model::limiter::Limiter>,
    /// The session's task board.
    pub tasks: Arc<super::tasks::TaskBoard>,
    /// Each model's context window, as configured or learned from the server.
    pub windows: ContextWindows,
    /// The project's `AGENTS.md`, given to every agent in its system message.
    pub instructions: Option<Instructions>,
    /// Every agent's task, so shutdown can let them write their last results.
    pub agent_tasks: tokio_util::task::TaskTracker,
    /// Where each agent works and in which sandbox (the isolation policy's answer).
    pub places: Arc<dyn Places>,
    /// The OS sandbox commands run in.
    pub sandbox: Arc<crate::sandbox::Sandbox>,
    /// The user's editor, for the file tools of agents in the session's own workspace.
    pub editor: Option<Arc<dyn crate::tools::EditorFiles>>,
    /// Where the prompts a person types are kept for recall in later sessions: none
    /// without a data dir, or when nobody types (exec).
    pub prompts: Option<crate::session::PromptHistory>,
    /// Each batch's rows as its events left them, the log's read back on resume
    /// (`runtime/batch`: `--continue` runs only the rows not settled).
    pub batches: std::sync::Mutex<crate::protocol::BatchLedger>,
}

impl Session {
    pub fn role(&self, name: &str) -> Option<&Role> {
        self.roles.get(name)
    }

    pub fn root(&self) -> AgentId {
        self.team.root()
    }

    /// The tools `agent` may call now: its own (fixed when it started), then the MCP tools
    /// of servers that are up which its role and every role above it offer (none when its
    /// spawn named its tools).
    /// Last, fitted to the plan states (`plan/gate.rs`).
    pub fn agent_tools(&self, agent: AgentId, own: &Arc<[String]>) -> Arc<[String]> {
        let fit = super::plan::Fit {
            tools: &self.tools,
            roles: &self.roles,
            team: &self.team,
            plans: &self.plans,
        };
        super::plan::fit(&fit, agent, self.with_mcp(agent, own))
    }

    fn with_mcp(&self, agent: AgentId, own: &Arc<[String]>) -> Arc<[String]> {
        if self.tools.mcp().tools().is_empty() || self.team.is_narrowed(agent) {
            return own.clone();
        }
        let lineage = self.team.lineage(agent);
        let roles: Vec<&Role> = lineage.iter().filter_map(|r| self.role(r)).collect();
        if roles.len() != lineage.len() {
            return own.clone();
        }
        let mcp = self.tools.mcp_tools_for(&roles);
        if mcp.is_empty() {
            return own.clone();
        }
        own.iter().cloned().chain(mcp).collect()
    }

    /// Builds the next request of `agent` from its role and history.
    pub fn request_for(&self, agent: AgentId) -> Option<RequestSetup> {
        let view = self.team.request_view(agent)?;
        let tools = self.agent_tools(agent, &view.tools);
        self.request_from(view, &tools)
    }

    /// Builds a request from `view` offering `tools`: also a worker's first request
    /// before it exists, for its quote (`runtime/quote`).
    pub fn request_from(
        &self,
        view: super::team::RequestView,
        tools: &Arc<[String]>,
    ) -> Option<RequestSetup> {
        let role = self.role(&view.role)?;
        let mut system_prompt = role.system_prompt.trim().to_string();
        if let Some(extra) = &view.instructions {
            system_prompt.push_str("\n\n# Instructions for this task, from your supervisor\n");
            system_prompt.push_str(extra.trim());
        }
        system_prompt.push_str(&environment(&view));
        if let Some(instructions) = &self.instructions {
            system_prompt.push_str("\n\n# Project instructions (AGENTS.md)\n");
            system_prompt.push_str(&instructions.text);
        }
        let (tools, tool_tokens) = self.tools.specs_and_tokens(tools);
        let window = self.windows.window(&view.model);
        Some(RequestSetup {
            fixed_tokens: estimate_text(&system_prompt) + tool_tokens,
            window,
            request: ChatRequest {
                model: view.model,
                system_prompt,
                history: view.history,
                tools,
            },
            max_iterations: role
                .max_iterations
                .unwrap_or(self.config.limits.max_iterations)
                .max(1),
        })
    }

    /// Where `agent`'s tools work: its worktree (or its supervisor's), else the workspace.
    pub fn workspace_for(&self, agent: AgentId) -> Arc<Workspace> {
        self.places
            .workspace_for(&self.team, agent, &self.workspace)
    }

    /// What a coding tool called by `agent` may use.
    pub fn tool_context(
        &self,
        agent: AgentId,
        role: &str,
        cancel: &CancellationToken,
    ) -> ToolContext {
        let test_command = self.role(role).and_then(|r| r.test_command.as_deref());
        let workspace = self.workspace_for(agent);
        let sandbox = self.places.confined(&self.team, agent, workspace.root());
        // A worker in a worktree of its own edits files the editor does not have open.
        let editor = self
            .editor
            .clone()
            .filter(|_| workspace.root() == self.workspace.root());
        ToolContext {
            agent_id: agent,
            editor,
            workspace,
            settings: Arc::new(ToolSettings::from_config(&self.config, test_command)),
            cancel: cancel.clone(),
            sandbox,
        }
    }

    /// Tells the front ends which sandbox `agent`'s commands run in.
    pub fn announce_sandbox(&self, agent: AgentId) {
        let level = self.sandbox_level(agent);
        let sandbox = if self.sandbox.confines(level) || level.mode == SandboxMode::Off {
            level.label()
        } else {
            "unavailable".to_string()
        };
        self.team
            .emit(agent, crate::protocol::EventKind::AgentSandbox { sandbox });
    }

    /// The sandbox of `agent`'s commands: the session's, narrowed by the role of every
    /// agent from the persona down to it, so a worker never gets a wider one than its
    /// supervisor.
    pub fn sandbox_level(&self, agent: AgentId) -> Level {
        self.places.level(&self.team, agent)
    }
}

/// The prompt's `# Environment` part. The same bytes in every request of the agent, of its
/// siblings and of every session's persona, so a local server's prompt cache serves them
/// (the tool list comes after this text in chat templates): no path, no id. Tool paths are
/// relative and commands run in the agent's root, so none is needed. A worker is told how
/// its task ends with the tools it has: `return_results`, or (a `/review` reviewer, which
/// has no such tool) its last message.
fn environment(view: &super::team::RequestView) -> String {
    let Some(parent_role) = &view.parent_role else {
        return "\n\n# Environment\nYou work in the user's workspace: every path you pass to \
                a tool is relative to its root, where your commands run."
            .into();
    };
    let (role, depth) = (&view.role, view.depth);
    let ends = if view.tools.iter().any(|t| t == RETURN_RESULTS) {
        format!(
            "When the task is done, call `{RETURN_RESULTS}` with status, summary, artifacts \
             and known_issues; your supervisor reads only that."
        )
    } else {
        "When the task is done, your last message is your answer, in the form your task \
         asks for."
            .into()
    };
    format!(
        "\n\n# Environment\nEvery path you pass to a tool is relative to your workspace \
         root, where your commands run.\nYou are a worker (role `{role}`, depth {depth}), \
         started by `{parent_role}` for one task. {ends}"
    )
}
