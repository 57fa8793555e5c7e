//! `spawn_agent`: a worker with its own role and its own, empty conversation.

use super::{AgentTool, Call, Done, Failure, card, non_empty, parse};
use crate::model::ToolSpec;
use crate::protocol::{AgentId, AgentStatus, ApprovalAction, Budget};
use crate::roles::Audience;
use crate::runtime::approval::ApprovalRequest;
use crate::runtime::team::{AgentStats, NewAgent};
use crate::text::clip;
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

pub struct SpawnAgent;

#[derive(Deserialize)]
struct Args {
    role_name: String,
    task_prompt: String,
    #[serde(default)]
    context: Option<String>,
    #[serde(default)]
    files: Vec<String>,
    #[serde(default)]
    task_id: Option<String>,
    /// Only tighter than the limits and what the caller has left (`runtime/budget.rs`).
    #[serde(default)]
    budget: Option<Budget>,
    /// Overrides the role's and the config's `isolation` for this worker.
    #[serde(default)]
    isolation: Option<crate::config::IsolationMode>,
}

/// Most of one file given to a worker in its first message.
const MAX_FILE_BYTES: usize = 64 * 1024;

#[async_trait]
impl AgentTool for SpawnAgent {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "spawn_agent".into(),
            description: "Start a worker (one of your enabled roles) on one task, in parallel; \
                returns its agent_id. It sees ONLY task_prompt, context and files. Collect \
                results with wait_for_agents."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "role_name": {"type": "string"},
                    "task_prompt": {"type": "string", "description": "Self-contained task and the expected outcome."},
                    "context": {"type": "string", "description": "Facts and constraints it needs."},
                    "files": {"type": "array", "items": {"type": "string"}, "description": "Paths whose contents it is given."},
                    "task_id": {"type": "string", "description": "A ready task id from plan_tasks."},
                    "budget": {"type": "object", "properties": {"tokens": {"type": "integer"}, "cost_usd": {"type": "number"}, "wall_s": {"type": "integer"}}},
                    "isolation": {"enum": ["worktree", "shared"]}
                },
                "required": ["role_name", "task_prompt"]
            }),
        }
    }

    fn audience(&self) -> Audience {
        Audience::Supervisors
    }

    fn concurrent(&self) -> bool {
        true
    }

    async fn call(&self, cx: &Call<'_>, args: Value) -> Result<Done, Failure> {
        let args: Args = parse(&self.spec(), args)?;
        non_empty("role_name", &args.role_name)?;
        non_empty("task_prompt", &args.task_prompt)?;
        let me = card(cx)?;
        let roles = cx.host.roles();
        let enabled = roles
            .get(&me.role)
            .map(|r| r.enabled_agents.clone())
            .unwrap_or_default();
        let role_name = args.role_name.trim();
        if !enabled.iter().any(|r| r == role_name) {
            return Err(Failure::Fixable(format!(
                "role `{}` may not spawn `{role_name}`; it may spawn: {}",
                me.role,
                if enabled.is_empty() {
                    "nobody".to_string()
                } else {
                    enabled.join(", ")
                }
            )));
        }
        let role = roles
            .get(role_name)
            .ok_or_else(|| format!("no role named `{role_name}` is loaded"))?;
        let limits = cx.host.config().limits;
        if me.depth + 1 > limits.max_depth {
            return Err(Failure::Fixable(format!(
                "spawn depth limit reached (max_depth = {}): a worker at depth {} cannot start \
                 another; do the work yourself or return your results",
                limits.max_depth, me.depth
            )));
        }
        let live = cx.team.live_count();
        if live >= limits.max_live_agents as usize {
            return Err(Failure::Fixable(format!(
                "live agent limit reached ({live} of max_live_agents = {}, finished workers \
                 included until despawned); despawn workers you no longer need",
                limits.max_live_agents
            )));
        }
        let parent = cx.team.budget_and_spend(cx.caller).unwrap_or_default();
        let budget =
            crate::runtime::budget::for_worker(&limits, parent, args.budget.unwrap_or_default())
                .map_err(Failure::Fixable)?;
        let tools = cx.host.tools_for(role, true, Some(&me.tools));
        let model = role.model(cx.host.config());

        let task = args.task_prompt;
        let mut first = task.clone();
        if let Some(c) = args.context.as_deref().filter(|c| !c.trim().is_empty()) {
            first.push_str("\n\n# Context from your supervisor\n");
            first.push_str(c);
        }
        for f in &args.files {
            let text = cx
                .host
                .read_for_prompt(cx.caller, f, cx.cancel)
                .await
                .map_err(|e| format!("cannot read `{f}` for the worker: {e}"))?;
            first.push_str(&format!(
                "\n\n# File: {f}\n```\n{}\n```",
                clip(&text, MAX_FILE_BYTES)
            ));
        }

        let task_id = args
            .task_id
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty());
        if let Some(t) = task_id {
            cx.host
                .tasks()
                .check_assignable(t)
                .map_err(|e| Failure::Fixable(e.to_string()))?;
        }
        let action = ApprovalAction::Spawn {
            role: role.name.clone(),
            task: task.clone(),
            tools: tools.clone(),
            model: model.clone(),
            budget,
        };
        let req = ApprovalRequest {
            agent_id: cx.caller,
            role: &me.role,
            policy: me.policy,
            tool: "spawn_agent",
            action: &action,
        };
        cx.host
            .approve(req, cx.cancel)
            .await
            .map_err(|d| Failure::Fixable(d.0))?;

        // The task is the worker's before it can finish it.
        let id = AgentId::new();
        if let Some(t) = task_id {
            cx.host
                .tasks()
                .assign(cx.team, cx.caller, t, id)
                .map_err(|e| Failure::Fixable(e.to_string()))?;
        }
        if let Some(mode) = args.isolation {
            cx.host.choose_isolation(id, mode);
        }
        cx.host.start_agent(NewAgent {
            id,
            parent: Some(cx.caller),
            role: role.name.clone(),
            model,
            depth: me.depth + 1,
            task,
            policy: me.policy,
            tools,
            history: Vec::new(),
            // Its task is queued; taking it up is the first status change front ends see.
            status: AgentStatus::Inactive,
            stats: AgentStats::default(),
            budget,
            result: None,
            first_message: Some(first),
            announce: true,
        });
        Ok(Done::output(
            json!({
                "agent_id": id.to_string(),
                "role": role.name,
                "status": "running",
                "note": "the worker runs in parallel; collect its result with wait_for_agents"
            })
            .to_string(),
        ))
    }
}
