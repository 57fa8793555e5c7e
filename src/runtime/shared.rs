use super::agent_tools;
use super::approval::{ApprovalGate, ApprovalRequest, Denied};
use super::events::EventSink;
use super::registry::Registry;
use crate::config::Config;
use crate::model::{ChatRequest, ModelClient, ToolSpec};
use crate::protocol::{AgentId, AgentStatus, AgentSummary, EventKind, HistoryItem, SessionTotals};
use crate::roles::{Role, RoleSet};
use crate::tools::{ToolRegistry, ToolSettings};
use crate::workspace::Workspace;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// Everything the agents of one session share.
pub struct Shared {
    pub session_id: String,
    pub config: Config,
    pub roles: RoleSet,
    pub model: Arc<dyn ModelClient>,
    /// The coding tools; agent tools are handled by the runtime itself.
    pub tools: ToolRegistry,
    pub workspace: Arc<Workspace>,
    pub events: EventSink,
    pub gate: ApprovalGate,
    pub registry: Registry,
    /// Bounds model calls in flight across the whole session; workers queue here.
    pub model_slots: Semaphore,
    pub root: AgentId,
    /// Tool specs per tool set: agents of one role share one, built on first use.
    pub spec_cache: Mutex<HashMap<Vec<String>, Arc<[ToolSpec]>>>,
}

/// One model call, ready to send.
pub struct RequestSetup {
    pub request: ChatRequest,
    pub max_iterations: u32,
}

impl Shared {
    pub fn role(&self, name: &str) -> Option<&Role> {
        self.roles.get(name)
    }

    /// Builds the next request of `agent` from its role and history.
    pub fn request_for(&self, agent: AgentId) -> Option<RequestSetup> {
        let (role_name, model, tools, history, parent, depth) = self.registry.with(agent, |a| {
            (
                a.role.clone(),
                a.model.clone(),
                a.tools.clone(),
                a.history.clone(),
                a.parent,
                a.depth,
            )
        })?;
        let role = self.role(&role_name)?;
        let specs = self.specs_for(&tools);
        let mut system_prompt = role.system_prompt.trim().to_string();
        system_prompt.push_str(&format!(
            "\n\n# Environment\nWorkspace root: {}. Every path you pass to a tool is relative to it.",
            self.workspace.root().display()
        ));
        if let Some(parent) = parent {
            let parent_role = self
                .registry
                .with(parent, |p| p.role.clone())
                .unwrap_or_default();
            system_prompt.push_str(&format!(
                "\nYou are worker agent {} (role `{role_name}`, depth {depth}), started by `{parent_role}` \
                 for one task. When the task is done, call `return_results` with status, summary, \
                 artifacts and known_issues; your supervisor reads only that.",
                agent.short()
            ));
        }
        Some(RequestSetup {
            request: ChatRequest {
                model,
                system_prompt,
                history,
                tools: specs,
            },
            max_iterations: role
                .max_iterations
                .unwrap_or(self.config.limits.max_iterations)
                .max(1),
        })
    }

    fn specs_for(&self, names: &[String]) -> Arc<[ToolSpec]> {
        let mut cache = match self.spec_cache.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        if let Some(specs) = cache.get(names) {
            return specs.clone();
        }
        let specs: Arc<[ToolSpec]> = names
            .iter()
            .filter_map(|n| self.tools.spec(n).cloned().or_else(|| agent_tools::spec(n)))
            .collect();
        cache.insert(names.to_vec(), specs.clone());
        specs
    }

    /// The tools an agent of `role` gets: the role's list, the agent-tool rules, and never
    /// more than `ceiling` (its parent's tools).
    pub fn tools_for(
        &self,
        role: &Role,
        is_worker: bool,
        ceiling: Option<&[String]>,
    ) -> Vec<String> {
        let mut names: Vec<String> = self
            .tools
            .names()
            .into_iter()
            .chain(agent_tools::NAMES.iter().map(|s| s.to_string()))
            .filter(|n| role.offers_tool(n, is_worker))
            .collect();
        if let Some(ceiling) = ceiling {
            // Agent tools follow the worker's own role; coding tools may not widen.
            names.retain(|n| agent_tools::is_agent_tool(n) || ceiling.contains(n));
        }
        names
    }

    pub fn tool_settings_for(&self, role: &str) -> Arc<ToolSettings> {
        let test_command = self.role(role).and_then(|r| r.test_command.as_deref());
        Arc::new(self.config.tool_settings(test_command))
    }

    /// Appends to an agent's history and records it in the event stream.
    pub fn push_item(&self, agent: AgentId, item: HistoryItem) {
        self.registry.with(agent, |a| a.history.push(item.clone()));
        self.events.emit(agent, EventKind::ItemAdded { item });
    }

    /// Per-agent figures in spawn order, and the session's totals.
    pub fn summary(&self) -> (Vec<AgentSummary>, SessionTotals) {
        let agents = self.registry.lock();
        let mut list: Vec<_> = agents.values().collect();
        list.sort_by_key(|a| a.created);
        let now = std::time::Instant::now();
        let rows: Vec<AgentSummary> = list
            .iter()
            .map(|a| AgentSummary {
                agent_id: a.id,
                parent_id: a.parent,
                role: a.role.clone(),
                status: a.status,
                model: a.model.clone(),
                prompt_tokens: a.stats.prompt_tokens,
                completion_tokens: a.stats.completion_tokens,
                cost_usd: a.stats.cost_usd,
                model_calls: a.stats.model_calls,
                tool_calls: a.stats.tool_calls,
                errors: a.stats.errors,
                wall_ms: a
                    .finished
                    .unwrap_or(now)
                    .duration_since(a.created)
                    .as_millis() as u64,
            })
            .collect();
        let mut totals = SessionTotals {
            agents: rows.len() as u64,
            ..SessionTotals::default()
        };
        for r in &rows {
            totals.prompt_tokens += r.prompt_tokens;
            totals.completion_tokens += r.completion_tokens;
            totals.cost_usd += r.cost_usd;
            totals.model_calls += r.model_calls;
            totals.tool_calls += r.tool_calls;
            totals.errors += r.errors;
            totals.wall_ms = totals.wall_ms.max(r.wall_ms);
        }
        (rows, totals)
    }

    /// Passes a mutating action through the gate; while the user is asked, the agent is
    /// `waiting`.
    pub async fn approve(
        &self,
        req: ApprovalRequest<'_>,
        cancel: &CancellationToken,
    ) -> Result<(), Denied> {
        let agent = req.agent_id;
        let asks = self.gate.will_ask(&req);
        if asks {
            self.registry
                .set_status(agent, AgentStatus::Waiting, None, &self.events, self.root);
        }
        let decision = self.gate.check(req, &self.events, cancel).await;
        if asks {
            self.registry
                .set_status(agent, AgentStatus::Running, None, &self.events, self.root);
        }
        decision
    }

    pub fn count_error(&self, agent: AgentId) {
        self.registry.with(agent, |a| a.stats.errors += 1);
    }
}
