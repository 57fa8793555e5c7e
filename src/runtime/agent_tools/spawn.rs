//! `spawn_agent`: a worker with its own role and its own, empty conversation.

use super::{AgentTool, Call, Done, Failure, card, non_empty, parse};
use crate::model::ToolSpec;
use crate::protocol::{AgentId, AgentStatus, ApprovalAction, Budget};
use crate::roles::Audience;
use crate::runtime::approval::ApprovalRequest;
use crate::runtime::team::{AgentStats, NewAgent};
use crate::text::clip;
use crate::tools::ToolError;
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

/// The tool's name, for the code that must tell its calls apart.
pub const SPAWN_AGENT: &str = "spawn_agent";

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
    /// Kept for follow-ups instead of released once its result is delivered.
    #[serde(default)]
    keep: bool,
    /// Appended to the role's prompt (`ad_hoc.rs`).
    #[serde(default)]
    instructions: Option<String>,
    /// The only tools it gets: within its role's and the caller's (`ad_hoc.rs`).
    #[serde(default)]
    tools: Option<Vec<String>>,
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
            name: SPAWN_AGENT.into(),
            // Terse: copilot's first request stays under 8 KB (`benches/context.rs`); the
            // result's note says to collect it with wait_for_agents.
            description: "Start a worker (one of your enabled roles) on one task, in parallel; \
                returns its agent_id. It sees ONLY task_prompt, context and files."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "role_name": {"type": "string"},
                    "task_prompt": {"type": "string", "description": "Self-contained task and the expected outcome."},
                    "context": {"type": "string", "description": "Facts and constraints it needs."},
                    "files": {"type": "array", "items": {"type": "string"}, "description": "Files given to it."},
                    "task_id": {"type": "string", "description": "A ready task from plan_tasks."},
                    "budget": {"type": "object", "properties": {"tokens": {"type": "integer"}, "cost_usd": {"type": "number"}, "wall_s": {"type": "integer"}}},
                    "keep": {"type": "boolean", "description": "Keep for follow-ups."},
                    "instructions": {"type": "string", "description": "Added to its role's prompt."},
                    "tools": {"type": "array", "items": {"type": "string"}, "description": "Only these of its tools."},
                    "isolation": {"enum": ["worktree", "shared"]}
                },
                "required": ["role_name", "task_prompt"]
            }),
            freeform: None,
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
        room(cx, &limits)?;
        let parent = cx.team.budget_and_spend(cx.caller).unwrap_or_default();
        let mut asked = args.budget.unwrap_or_default();
        // Help for weak models, on evidence (a budget that can only fail the worker,
        // measured against this session's own requests and calls); off with `assist`.
        let helps = cx
            .host
            .config()
            .assists(cx.team.model(cx.caller).as_deref());
        // A token budget smaller than one request of a worker can only fail it (a 1.5B
        // model gave `tokens: 100`; each worker failed at its first call, 1,023 tokens, and
        // the persona spawned again with the same budget): it is left out, and said so.
        let small_budget = asked.tokens.filter(|&t| helps && t < MIN_WORKER_TOKENS);
        if small_budget.is_some() {
            asked.tokens = None;
        }
        // A wall-time budget shorter than a few of this session's model calls fails the
        // worker before it can report (a 1.5B persona gave `wall_s: 60` while its server
        // took 45 to 170 s a call; the worker wrote a.txt and was failed at 111 s): left
        // out the same way.
        let floor = cx.team.slowest_call() * MIN_WORKER_CALLS;
        let short_wall = asked
            .wall_s
            .filter(|&w| helps && std::time::Duration::from_secs(w) < floor);
        if short_wall.is_some() {
            asked.wall_s = None;
        }
        let budget =
            crate::runtime::budget::for_worker(&limits, parent, asked).map_err(Failure::Fixable)?;
        let model = role.model(cx.host.config());
        let allowed = cx.host.tools_for(role, true, Some(&me.tools), &model);
        // What every worker of this role keeps, whatever its spawn names: its reporting.
        let bare = crate::roles::Role {
            tools: Some(Vec::new()),
            enabled_agents: Vec::new(),
            handoffs: Vec::new(),
            ..role.clone()
        };
        let reporting = cx.host.tools_for(&bare, true, None, &model);
        let (options, tools) = super::ad_hoc::options(
            args.keep,
            args.instructions,
            args.tools,
            &allowed,
            &reporting,
            (&role.name, &me.role),
        )
        .map_err(Failure::Fixable)?;

        let task = args.task_prompt;
        let mut first = task.clone();
        if let Some(c) = args.context.as_deref().filter(|c| !c.trim().is_empty()) {
            first.push_str("\n\n# Context from your supervisor\n");
            first.push_str(c);
        }
        for f in &args.files {
            // A file the task is to create does not exist yet: small models list it
            // anyway (Qwen2.5-Coder-1.5B spawned with `files: ["notes.md"]` five times).
            match cx.host.read_for_prompt(cx.caller, f, cx.cancel).await {
                Ok(text) => first.push_str(&format!(
                    "\n\n# File: {f}\n```\n{}\n```",
                    clip(&text, MAX_FILE_BYTES)
                )),
                Err(ToolError::NotFound(_)) => {
                    first.push_str(&format!("\n\n# File: {f}\n(it does not exist yet)"));
                }
                Err(e) => {
                    return Err(Failure::Fixable(format!(
                        "cannot read `{f}` for the worker: {e}"
                    )));
                }
            }
        }

        let mut task_id = args
            .task_id
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty());
        // A task id with nothing ever planned is made up (a 1.5B model passed
        // `task_id: "task_1"` on an empty board, was refused, and went round spawn,
        // get_tasks and wait until the loop guard stopped it): the worker starts
        // without one, and the reply says so.
        let mut ignored = None;
        if task_id.is_some() && cx.host.tasks().is_empty() {
            ignored = task_id.take();
        }
        if let Some(t) = task_id {
            cx.host
                .tasks()
                .check_assignable(t)
                .map_err(|e| Failure::Fixable(e.to_string()))?;
            // The worker knows its task from the board, not only from the prompt written
            // for it: the title, what done means, and the results it builds on.
            if let Some(brief) = cx.host.tasks().brief(t) {
                first.push_str("\n\n");
                first.push_str(&brief);
            }
        }
        let action = ApprovalAction::Spawn {
            role: role.name.clone(),
            task: task.clone(),
            tools: tools.clone(),
            model: model.clone(),
            budget,
            instructions: options.instructions.clone(),
            keep: options.keep,
        };
        let req = ApprovalRequest {
            agent_id: cx.caller,
            role: &me.role,
            policy: me.policy,
            tool: "spawn_agent",
            action: &action,
            hook: None,
        };
        cx.host
            .approve(req, cx.cancel)
            .await
            .map_err(|d| Failure::Fixable(d.0))?;

        // The workspace as the caller sees it now: the worker's base (issue 34).
        let base = cx
            .host
            .base_for_spawn(cx.caller, &role.name, args.isolation)
            .await;
        // Again: spawns of one response run side by side, and each waited for its approval
        // since the first check. Nothing awaits from here until the worker is counted.
        room(cx, &limits)?;
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
        if let Some(base) = base {
            cx.host.give_base(id, base);
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
            options,
            released: false,
        });
        let mut out = json!({
            "agent_id": id.to_string(),
            "role_name": role.name,
            "status": "running",
            "created_at": cx.team.created_at(id),
            "note": "the worker runs in parallel; collect its result with wait_for_agents"
        });
        if let Some(t) = small_budget {
            out["budget_ignored"] = json!(format!(
                "budget.tokens {t} is less than one model request of a worker (at least \
                 {MIN_WORKER_TOKENS}), so the worker has no token budget of its own"
            ));
        }
        if let Some(w) = short_wall {
            out["wall_budget_ignored"] = json!(format!(
                "budget.wall_s {w} is less than {MIN_WORKER_CALLS} model calls take here (the \
                 slowest so far took {:.0} s), so the worker has no wall-time budget of its own",
                cx.team.slowest_call().as_secs_f64()
            ));
        }
        if let Some(t) = ignored {
            out["task_id_ignored"] = json!(format!(
                "`{t}` is not on the board (nothing is planned), so the worker has no board \
                 task; task_id is only for tasks from plan_tasks"
            ));
        }
        Ok(Done::output(out.to_string()))
    }
}

/// Model calls a worker needs at the least: its work, its report, a correction.
const MIN_WORKER_CALLS: u32 = 5;

/// Fewer tokens than a worker's first request (its role's prompt, its tools, its task).
const MIN_WORKER_TOKENS: u64 = 2_000;

/// A refusal when the team has no free slot of `max_live_agents`.
fn room(cx: &Call<'_>, limits: &crate::config::Limits) -> Result<(), Failure> {
    let live = cx.team.live_count();
    if live >= limits.max_live_agents as usize {
        return Err(Failure::Fixable(format!(
            "live agent limit reached ({live} of max_live_agents = {}; a worker counts \
             until its result is delivered, a kept one until despawned); despawn workers \
             you no longer need",
            limits.max_live_agents
        )));
    }
    Ok(())
}
