//! `spawn_agent`: a worker with its own role and its own, empty conversation.

use super::{AgentTool, Call, Done, Failure, card, non_empty, parse};
use crate::config::{IsolationMode, Limits};
use crate::isolation::Base;
use crate::model::ToolSpec;
use crate::protocol::{AgentId, AgentStatus, ApprovalAction, Budget, Quote, SpawnOptions};
use crate::roles::{Audience, Role};
use crate::runtime::approval::ApprovalRequest;
use crate::runtime::policies::placement::open as placement;
use crate::runtime::quote;
use crate::runtime::team::{AgentCard, AgentStats, NewAgent};
use crate::text::clip;
use crate::tools::ToolError;
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

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
    /// A few words the user tells it apart by (the tree shows them for its task's).
    #[serde(default)]
    name: Option<String>,
    /// A level or a model instead of its role's (`worker_model.rs`).
    #[serde(default)]
    model: Option<String>,
    /// Where it runs: an `[environments.NAME]` (`policies/placement`); else its role's.
    #[serde(default)]
    environment: Option<String>,
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
                    "name": {"type": "string", "description": "2-4 word label for the user."},
                    "task_prompt": {"type": "string", "description": "Self-contained task and the expected outcome."},
                    "context": {"type": "string", "description": "Facts and constraints it needs."},
                    "files": {"type": "array", "items": {"type": "string"}},
                    "task_id": {"type": "string", "description": "A ready task from plan_tasks."},
                    "budget": {"type": "object", "properties": {"tokens": {"type": "integer"}, "cost_usd": {"type": "number"}, "wall_s": {"type": "integer"}}},
                    "keep": {"type": "boolean", "description": "Keep for follow-ups."},
                    "instructions": {"type": "string", "description": "Added to its role's prompt."},
                    "tools": {"type": "array", "items": {"type": "string"}, "description": "Only these of its tools."},
                    "isolation": {"enum": ["worktree", "shared"]},
                    "model": {"type": "string", "description": "fast, base or smart."},
                    // `files` and `environment` say themselves (the description names files;
                    // an environment the config lacks is refused, listing those it has).
                    "environment": {"type": "string"}
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
        let role = spawnable(cx, &me, args.role_name.trim())?;
        let limits = cx.shared.config.limits;
        below_max_depth(&me, &limits)?;
        room(cx, &limits)?;
        let (budget, waived) = worker_budget(cx, &limits, args.budget.unwrap_or_default())?;
        let model = super::worker_model::choose(cx.shared.config, role, args.model.as_deref())?;
        let asked_none = args.tools.as_ref().is_some_and(Vec::is_empty);
        let (mut options, tools) = worker_tools(
            cx,
            &me,
            role,
            &model,
            args.keep,
            args.instructions,
            args.tools,
        )?;
        options.name = crate::protocol::worker_name(args.name.as_deref());
        // Another agent has its own tools, none of squad's.
        let tools = if role.agent.is_some() {
            Vec::new()
        } else {
            tools
        };
        let env = placement::chosen(cx.shared.config, role, args.environment.as_deref())?;
        options.environment = env.clone();
        // Small models write `[]` for "no value": say what it does, the call stands.
        let only_reporting = asked_none.then(|| tools.join(", "));
        let task = args.task_prompt;
        let mut first = first_message(cx, &task, args.context.as_deref(), &args.files).await?;
        let (task_id, ignored) = board_task(cx, args.task_id.as_deref(), &mut first).await?;
        let mut worker = Worker {
            role,
            model,
            tools,
            options,
            budget,
            task,
            first,
            quote: None,
        };
        let (id, _quoted) = quoted(cx, &mut worker)?;
        approve(cx, &me, &worker).await?;
        // The workspace as the caller sees it now: the worker's base (issue 34).
        let base = cx.host.base_for_spawn(&role.name, args.isolation).await;
        let placed = place(cx, id, env.as_deref(), base.as_ref()).await?;
        // Again: spawns of one response run side by side, and each waited for its approval
        // since the first check. Nothing awaits from here until the worker is counted.
        let counted = room(cx, &limits).and_then(|()| {
            registered(cx, id, placed.as_ref());
            launch(cx, &me, worker, task_id, args.isolation, base, id)
        });
        let id = unplaced_unless_counted(cx, id, placed.as_ref(), counted).await?;
        let reply = reply(cx, id, &role.name, waived, ignored, only_reporting);
        Ok(Done::output(reply))
    }
}

/// A placed worker's far side, registered before it starts (its layer looks it up).
fn registered(cx: &Call<'_>, id: AgentId, placed: Option<&Arc<placement::PlacedWorker>>) {
    if let (Some(p), Some(placed)) = (cx.host.placements(), placed) {
        p.register(id, placed.clone());
    }
}

/// A spawn refused after its far side was made: that far side, made for nothing, goes.
async fn unplaced_unless_counted(
    cx: &Call<'_>,
    id: AgentId,
    placed: Option<&Arc<placement::PlacedWorker>>,
    counted: Result<AgentId, Failure>,
) -> Result<AgentId, Failure> {
    if let (Err(_), Some(placed)) = (&counted, placed) {
        placement::unplace(cx.host.placements().as_deref(), id, placed).await;
    }
    counted
}

/// The far side of a worker placed in `env` (`policies/placement`), made ready: `None`
/// when it runs here.
async fn place(
    cx: &Call<'_>,
    id: AgentId,
    env: Option<&str>,
    base: Option<&Arc<Base>>,
) -> Result<Option<Arc<placement::PlacedWorker>>, Failure> {
    let (placements, ctx) = (cx.host.placements(), cx.host.tool_context());
    let config = cx.shared.config;
    Ok(placement::place(placements.as_deref(), config, &ctx, (id, env), base).await?)
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

/// The role `name` if the caller's role may spawn it (its `enabled_agents`).
fn spawnable<'a>(cx: &Call<'a>, me: &AgentCard, name: &str) -> Result<&'a Role, Failure> {
    let roles = cx.shared.roles;
    let enabled = roles
        .get(&me.role)
        .map(|r| r.enabled_agents.clone())
        .unwrap_or_default();
    if !enabled.iter().any(|r| r == name) {
        return Err(Failure::Fixable(format!(
            "role `{}` may not spawn `{name}`; it may spawn: {}",
            me.role,
            if enabled.is_empty() {
                "nobody".to_string()
            } else {
                enabled.join(", ")
            }
        )));
    }
    // An agent role's worker is another agent, driven by `runtime/agent_worker`.
    roles
        .get(name)
        .ok_or_else(|| Failure::Fixable(format!("no role named `{name}` is loaded")))
}

/// A refusal when a worker of the caller would be deeper than `max_depth`.
fn below_max_depth(me: &AgentCard, limits: &Limits) -> Result<(), Failure> {
    if me.depth + 1 > limits.max_depth {
        return Err(Failure::Fixable(format!(
            "spawn depth limit reached (max_depth = {}): a worker at depth {} cannot start \
             another; do the work yourself or return your results",
            limits.max_depth, me.depth
        )));
    }
    Ok(())
}

/// What the spawn asked of a worker's budget that was left out because it can only fail
/// the worker; the reply says so.
#[derive(Debug, Default, PartialEq)]
struct Waived {
    tokens: Option<u64>,
    wall_s: Option<u64>,
}

/// The worker's budget: what the spawn asked, less what can only fail it, within the
/// limits and what the caller has left (`policies/budget`).
fn worker_budget(
    cx: &Call<'_>,
    limits: &Limits,
    asked: Budget,
) -> Result<(Budget, Waived), Failure> {
    let parent = cx.team.giver(cx.caller, limits.max_live_agents);
    // Help for weak models, on evidence (a budget that can only fail the worker,
    // measured against this session's own requests and calls); off with `assist`.
    let helps = cx
        .shared
        .config
        .assists(cx.team.model(cx.caller).as_deref());
    let floor = cx.team.slowest_call() * MIN_WORKER_CALLS;
    let (asked, waived) = waive(asked, helps, floor);
    let budget = crate::runtime::team::for_worker(limits, &parent, asked)
        .map_err(|e| Failure::Fixable(e.to_string()))?;
    Ok((budget, waived))
}

/// Leaves out, when `helps`, the parts of `asked` that can only fail the worker.
fn waive(mut asked: Budget, helps: bool, floor: Duration) -> (Budget, Waived) {
    // A token budget smaller than one request of a worker can only fail it (a 1.5B
    // model gave `tokens: 100`; each worker failed at its first call, 1,023 tokens, and
    // the persona spawned again with the same budget): it is left out, and said so.
    let tokens = asked.tokens.filter(|&t| helps && t < MIN_WORKER_TOKENS);
    if tokens.is_some() {
        asked.tokens = None;
    }
    // A wall-time budget shorter than a few of this session's model calls (`floor`)
    // fails the worker before it can report (a 1.5B persona gave `wall_s: 60` while its
    // server took 45 to 170 s a call; the worker wrote a.txt and was failed at 111 s):
    // left out the same way.
    let wall_s = asked
        .wall_s
        .filter(|&w| helps && Duration::from_secs(w) < floor);
    if wall_s.is_some() {
        asked.wall_s = None;
    }
    (asked, Waived { tokens, wall_s })
}

/// The worker's tools and spawn options: its role's tools within the caller's, narrowed
/// by the spawn's `tools` but never below what every worker of the role keeps.
fn worker_tools(
    cx: &Call<'_>,
    me: &AgentCard,
    role: &Role,
    model: &str,
    keep: bool,
    instructions: Option<String>,
    tools: Option<Vec<String>>,
) -> Result<(SpawnOptions, Vec<String>), Failure> {
    let allowed = cx.host.tools_for(role, true, Some(&me.tools), model);
    // What every worker of this role keeps, whatever its spawn names: its reporting.
    let bare = Role {
        tools: Some(Vec::new()),
        enabled_agents: Vec::new(),
        handoffs: Vec::new(),
        ..role.clone()
    };
    let mut reporting = cx.host.tools_for(&bare, true, None, model);
    // Messaging teammates and claiming tasks are not reporting: a narrowed worker has
    // them only when named.
    reporting.retain(|t| t != super::MESSAGE_AGENT && t != super::CLAIM_TASK);
    super::ad_hoc::options(
        keep,
        instructions,
        tools,
        &allowed,
        &reporting,
        (&role.name, &me.role),
    )
    .map_err(Failure::Fixable)
}

/// The worker's first message: its task, the supervisor's context and the files given.
async fn first_message(
    cx: &Call<'_>,
    task: &str,
    context: Option<&str>,
    files: &[String],
) -> Result<String, Failure> {
    let mut first = task.to_string();
    if let Some(c) = context.filter(|c| !c.trim().is_empty()) {
        first.push_str("\n\n# Context from your supervisor\n");
        first.push_str(c);
    }
    for f in files {
        // A file the task is to create does not exist yet: small models list it
        // anyway (Qwen2.5-Coder-1.5B spawned with `files: ["notes.md"]` five times).
        match crate::tools::read_for_prompt(&cx.host.tool_context(), f).await {
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
    Ok(first)
}

/// The board task the worker takes (its brief added to `first`), and a `task_id` left
/// out because nothing is planned.
async fn board_task<'a>(
    cx: &Call<'_>,
    task_id: Option<&'a str>,
    first: &mut String,
) -> Result<(Option<&'a str>, Option<&'a str>), Failure> {
    let mut task_id = task_id.map(str::trim).filter(|t| !t.is_empty());
    // A task id with nothing ever planned is made up (a 1.5B model passed
    // `task_id: "task_1"` on an empty board, was refused, and went round spawn,
    // get_tasks and wait until the loop guard stopped it): the worker starts
    // without one, and the reply says so.
    let mut ignored = None;
    if task_id.is_some() && cx.shared.tasks.is_empty() {
        ignored = task_id.take();
    }
    if let Some(t) = task_id {
        // Its lease is checked as a claim's (refused naming the holder, or waited for).
        let tasks = cx.shared.tasks;
        (tasks.assignable_when_free(cx.team, t, cx.cancel).await).map_err(Failure::Fixable)?;
        // The worker knows its task from the board, not only from the prompt written
        // for it: the title, what done means, and the results it builds on.
        if let Some(brief) = cx.shared.tasks.brief(t) {
            first.push_str("\n\n");
            first.push_str(&brief);
        }
    }
    Ok((task_id, ignored))
}

/// A worker as the call settled it: what the user approves and what starts.
struct Worker<'a> {
    role: &'a Role,
    model: String,
    tools: Vec<String>,
    options: SpawnOptions,
    budget: Budget,
    task: String,
    first: String,
    /// Its quote, shown in the approval when the spawn is a fan-out.
    quote: Option<Quote>,
}

/// Quotes the worker (`runtime/quote`): told as an event, refused when a fan-out's
/// quote is above what is left; it counts as being spawned while the guard lives.
fn quoted<'a>(
    cx: &Call<'a>,
    worker: &mut Worker<'_>,
) -> Result<(AgentId, quote::Held<'a>), Failure> {
    let id = AgentId::new();
    let draft = quote::Draft {
        agent_id: Some(id),
        role: worker.role,
        model: &worker.model,
        tools: &worker.tools,
        instructions: worker.options.instructions.as_deref(),
        first_message: &worker.first,
    };
    let q = quote::make(cx, &[draft], false);
    let held = quote::publish(cx, &q).map_err(Failure::Fixable)?;
    worker.quote = q.fan_out.then_some(q);
    Ok((id, held))
}

/// Passes the spawn through the approval gate (the caller waits while the user is asked).
async fn approve(cx: &Call<'_>, me: &AgentCard, worker: &Worker<'_>) -> Result<(), Failure> {
    let action = ApprovalAction::Spawn {
        role: worker.role.name.clone(),
        task: worker.task.clone(),
        tools: worker.tools.clone(),
        model: worker.model.clone(),
        budget: worker.budget,
        instructions: worker.options.instructions.clone(),
        keep: worker.options.keep,
        name: worker.options.name.clone(),
        environment: worker.options.environment.clone(),
        quote: worker.quote.clone().map(Box::new),
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
        .approve(req)
        .await
        .map_err(|d| Failure::Fixable(d.0))
}

/// Counts the worker in and starts it. Nothing here awaits, so no other spawn of the
/// response takes its slot in between.
fn launch(
    cx: &Call<'_>,
    me: &AgentCard,
    worker: Worker<'_>,
    task_id: Option<&str>,
    isolation: Option<IsolationMode>,
    base: Option<Arc<Base>>,
    id: AgentId,
) -> Result<AgentId, Failure> {
    (cx.team.reserve(cx.caller, id, &worker.budget))
        .map_err(|e| Failure::Fixable(e.to_string()))?;
    // The task is the worker's before it can finish it.
    if let Some(t) = task_id {
        cx.shared
            .tasks
            .assign(cx.team, cx.caller, t, id)
            .map_err(|e| Failure::Fixable(e.to_string()))?;
    }
    cx.host.isolate(id, isolation, base);
    cx.host.start_agent(NewAgent {
        id,
        parent: Some(cx.caller),
        role: worker.role.name.clone(),
        model: worker.model,
        depth: me.depth + 1,
        task: worker.task,
        policy: me.policy,
        tools: worker.tools,
        history: Vec::new(),
        // Its task is queued; taking it up is the first status change front ends see.
        status: AgentStatus::Inactive,
        stats: AgentStats::default(),
        budget: worker.budget,
        result: None,
        first_message: Some(worker.first),
        announce: true,
        options: worker.options,
        released: false,
    });
    Ok(id)
}

/// The call's output: the worker, and what of the spawn was left out and why (budgets
/// waived, a task id not on the board, and with `tools: []` the tools it has all the same).
fn reply(
    cx: &Call<'_>,
    id: AgentId,
    role: &str,
    waived: Waived,
    ignored: Option<&str>,
    only_reporting: Option<String>,
) -> String {
    let mut out = json!({
        "agent_id": id.to_string(),
        "role_name": role,
        "status": "running",
        "created_at": cx.team.created_at(id),
        "note": "the worker runs in parallel; collect its result with wait_for_agents"
    });
    if let Some(t) = waived.tokens {
        out["budget_ignored"] = json!(format!(
            "budget.tokens {t} is less than one model request of a worker (at least \
             {MIN_WORKER_TOKENS}), so the worker has no token budget of its own"
        ));
    }
    if let Some(w) = waived.wall_s {
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
    if let Some(kept) = only_reporting {
        out["tools_note"] = json!(format!(
            "tools: [] gives the worker none of its role's tools, only {kept}; leave tools \
             out to give it all of them"
        ));
    }
    out.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waive_leaves_out_only_budgets_that_can_only_fail_the_worker() {
        let floor = Duration::from_secs(100);
        let asked = Budget {
            tokens: Some(100),
            cost_usd: Some(1.0),
            wall_s: Some(60),
        };
        let (kept, waived) = waive(asked, true, floor);
        assert_eq!(
            (kept.tokens, kept.wall_s, kept.cost_usd),
            (None, None, Some(1.0))
        );
        assert_eq!(
            waived,
            Waived {
                tokens: Some(100),
                wall_s: Some(60)
            }
        );
        // Enough of both, or no help asked for: kept as asked.
        let enough = Budget {
            tokens: Some(MIN_WORKER_TOKENS),
            cost_usd: None,
            wall_s: Some(100),
        };
        assert_eq!(waive(enough, true, floor).1, Waived::default());
        let (kept, waived) = waive(asked, false, floor);
        assert_eq!((kept.tokens, kept.wall_s), (Some(100), Some(60)));
        assert_eq!(waived, Waived::default());
    }
}
