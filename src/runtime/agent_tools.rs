//! The tools that make a session a team: spawning workers, talking to them, collecting
//! their results, and handing the session to another persona. They act on the runtime,
//! so the runtime runs them itself rather than through the coding-tool registry.

use super::Shared;
use super::agent::{NewAgent, spawn_agent_task};
use super::approval::ApprovalRequest;
use super::registry::{AgentInput, AgentStats};
use super::turn::{CallResult, clip};
use crate::model::ToolSpec;
use crate::protocol::{
    AgentId, AgentResult, AgentStatus, ApprovalAction, ApprovalPolicy, EventKind,
};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// The agent tools; one list, kept with the role rules that offer them.
pub use crate::roles::AGENT_TOOLS as NAMES;

/// Longest a `wait_for_agents` call may block when the model gives no timeout.
const DEFAULT_WAIT: Duration = Duration::from_secs(600);

pub fn is_agent_tool(name: &str) -> bool {
    NAMES.contains(&name)
}

pub fn spec(name: &str) -> Option<ToolSpec> {
    let (description, parameters) = match name {
        "spawn_agent" => (
            "Start a worker agent with its own role and its own, empty conversation to do one \
             task in parallel with you. Returns its agent_id at once; the worker runs while you \
             continue. The worker sees ONLY task_prompt, context and files — not your \
             conversation — so put everything it needs in them. Collect results with \
             wait_for_agents (or end your turn: finished workers' results are sent to you).",
            json!({
                "type": "object",
                "properties": {
                    "role_name": {"type": "string", "description": "Role of the worker; must be one of your enabled agents."},
                    "task_prompt": {"type": "string", "description": "The task: specific, self-contained, with the expected outcome."},
                    "context": {"type": "string", "description": "Facts, decisions and constraints the worker needs."},
                    "files": {"type": "array", "items": {"type": "string"}, "description": "Workspace paths whose contents are given to the worker."}
                },
                "required": ["role_name", "task_prompt"]
            }),
        ),
        "wait_for_agents" => (
            "Block until the given workers (default: all your unfinished or unreported workers) \
             finish, and return their results. On timeout, returns the results that are ready and \
             lists who is still running.",
            json!({
                "type": "object",
                "properties": {
                    "agent_ids": {"type": "array", "items": {"type": "string"}, "description": "Workers to wait for; omit for all of yours."},
                    "timeout_s": {"type": "number", "description": "Longest wait in seconds (default 600)."}
                }
            }),
        ),
        "speak_to_agent" => (
            "Send a follow-up message to one of your workers that has completed or is inactive \
             (e.g. ask for a correction) and get its reply. Not for failed or cancelled workers.",
            json!({
                "type": "object",
                "properties": {
                    "agent_id": {"type": "string"},
                    "message": {"type": "string"}
                },
                "required": ["agent_id", "message"]
            }),
        ),
        "get_agents" => (
            "List your workers with their status, role, task and whether a result is ready.",
            json!({"type": "object", "properties": {}}),
        ),
        "despawn_agent" => (
            "Cancel one of your workers (and any workers it started). Use when its work is no \
             longer needed or it is stuck.",
            json!({
                "type": "object",
                "properties": {"agent_id": {"type": "string"}},
                "required": ["agent_id"]
            }),
        ),
        "return_results" => (
            "Finish your task and hand your supervisor the result. Call it exactly once when done \
             (also when you failed: say so in status and summary).",
            json!({
                "type": "object",
                "properties": {
                    "result": {
                        "type": "object",
                        "properties": {
                            "status": {"type": "string", "enum": ["success", "failure", "partial"]},
                            "summary": {"type": "string", "description": "What you did and found, concretely."},
                            "artifacts": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "properties": {
                                        "file_path": {"type": "string"},
                                        "description": {"type": "string"},
                                        "change_type": {"type": "string", "enum": ["created", "modified", "deleted", "referenced"]}
                                    },
                                    "required": ["file_path", "description", "change_type"]
                                }
                            },
                            "known_issues": {"type": "array", "items": {"type": "string"}, "description": "What is left or doubtful; [] if nothing."}
                        },
                        "required": ["status", "summary", "artifacts", "known_issues"]
                    }
                },
                "required": ["result"]
            }),
        ),
        "handoff_to" => (
            "Hand the whole session to another persona (one of your handoffs). The conversation \
             goes on with that persona's instructions and tools from the next step; the user \
             then talks to it. Give it the context it needs.",
            json!({
                "type": "object",
                "properties": {
                    "target_agent": {"type": "string", "description": "Role name to hand off to."},
                    "reason": {"type": "string"},
                    "context": {"type": "string", "description": "Instructions and a summary for the next persona."}
                },
                "required": ["target_agent", "reason", "context"]
            }),
        ),
        _ => return None,
    };
    Some(ToolSpec {
        name: name.to_string(),
        description: description.to_string(),
        parameters,
    })
}

pub async fn call(
    shared: &Arc<Shared>,
    caller: AgentId,
    name: &str,
    args: Value,
    cancel: &CancellationToken,
) -> CallResult {
    let result = match name {
        "spawn_agent" => spawn(shared, caller, &args, cancel).await,
        "wait_for_agents" => wait(shared, caller, &args, cancel).await,
        "speak_to_agent" => speak(shared, caller, &args, cancel).await,
        "get_agents" => Ok(get_agents(shared, caller)),
        "despawn_agent" => despawn(shared, caller, &args),
        "return_results" => return return_results(shared, caller, &args),
        "handoff_to" => return handoff(shared, caller, &args),
        _ => Err(format!("unknown tool `{name}`")),
    };
    match result {
        Ok(out) => CallResult::ok(out),
        Err(e) => CallResult::error(e),
    }
}

fn str_arg<'a>(args: &'a Value, key: &str) -> Result<&'a str, String> {
    match args.get(key) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s),
        Some(Value::String(_)) => Err(format!("`{key}` must not be empty")),
        Some(other) => Err(format!("`{key}` must be a string, got {other}")),
        None => Err(format!("missing required argument `{key}`")),
    }
}

fn agent_arg(shared: &Shared, caller: AgentId, args: &Value) -> Result<AgentId, String> {
    let raw = str_arg(args, "agent_id")?;
    let id = resolve_child(shared, caller, raw)?;
    Ok(id)
}

/// A worker id (full or its 8-digit short form) that must belong to the caller.
fn resolve_child(shared: &Shared, caller: AgentId, raw: &str) -> Result<AgentId, String> {
    let children = shared
        .registry
        .with(caller, |a| a.children.clone())
        .unwrap_or_default();
    let raw = raw.trim();
    let found = AgentId::parse(raw)
        .filter(|id| children.contains(id))
        .or_else(|| children.iter().copied().find(|c| c.short() == raw));
    found.ok_or_else(|| {
        format!(
            "`{raw}` is not one of your workers (yours: {}); call get_agents to list them",
            if children.is_empty() {
                "none".to_string()
            } else {
                children
                    .iter()
                    .map(|c| c.short())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        )
    })
}

async fn spawn(
    shared: &Arc<Shared>,
    caller: AgentId,
    args: &Value,
    cancel: &CancellationToken,
) -> Result<String, String> {
    let role_name = str_arg(args, "role_name")?;
    let task = str_arg(args, "task_prompt")?;
    let context = match args.get("context") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.as_str()),
        Some(other) => return Err(format!("`context` must be a string, got {other}")),
    };
    let files: Vec<String> = match args.get("files") {
        None | Some(Value::Null) => Vec::new(),
        Some(v) => serde_json::from_value(v.clone())
            .map_err(|_| format!("`files` must be an array of path strings, got {v}"))?,
    };
    let (caller_role, depth, policy, ceiling) = shared
        .registry
        .with(caller, |a| {
            (a.role.clone(), a.depth, a.policy, a.tools.clone())
        })
        .ok_or("caller is gone")?;
    let enabled = shared
        .role(&caller_role)
        .map(|r| r.enabled_agents.clone())
        .unwrap_or_default();
    if !enabled.iter().any(|r| r == role_name) {
        return Err(format!(
            "role `{caller_role}` may not spawn `{role_name}`; it may spawn: {}",
            if enabled.is_empty() {
                "nobody".to_string()
            } else {
                enabled.join(", ")
            }
        ));
    }
    let role = shared
        .role(role_name)
        .cloned()
        .ok_or_else(|| format!("no role named `{role_name}` is loaded"))?;
    let limits = shared.config.limits;
    if depth + 1 > limits.max_depth {
        return Err(format!(
            "spawn depth limit reached (max_depth = {}): a worker at depth {depth} cannot start \
             another; do the work yourself or return your results",
            limits.max_depth
        ));
    }
    let live = shared.registry.live_count();
    if live >= limits.max_live_agents as usize {
        return Err(format!(
            "live agent limit reached ({live} of max_live_agents = {}, finished workers \
             included until despawned); despawn workers you no longer need",
            limits.max_live_agents
        ));
    }
    let tools = shared.tools_for(&role, true, Some(&ceiling));
    let model = role.model(&shared.config);

    let mut first = task.to_string();
    if let Some(c) = context.filter(|c| !c.trim().is_empty()) {
        first.push_str("\n\n# Context from your supervisor\n");
        first.push_str(c);
    }
    for f in &files {
        let path = shared.workspace.resolve(f).map_err(|e| e.to_string())?;
        let text = tokio::fs::read_to_string(&path)
            .await
            .map_err(|e| format!("cannot read `{f}` for the worker: {e}"))?;
        first.push_str(&format!(
            "\n\n# File: {f}\n```\n{}\n```",
            clip(&text, 64 * 1024)
        ));
    }

    // Spawning changes nothing on disk and a worker never gets a wider policy, so only
    // an `ask` session with someone to answer is asked.
    if policy == ApprovalPolicy::Ask && shared.gate.can_ask() {
        let action = ApprovalAction::Spawn {
            role: role.name.clone(),
            task: task.to_string(),
            tools: tools.clone(),
            model: model.clone(),
        };
        let req = ApprovalRequest {
            agent_id: caller,
            role: &caller_role,
            policy,
            tool: "spawn_agent",
            action: &action,
        };
        shared.approve(req, cancel).await.map_err(|d| d.0)?;
    }

    let id = spawn_agent_task(
        shared,
        NewAgent {
            id: AgentId::new(),
            parent: Some(caller),
            role: role.name.clone(),
            model,
            depth: depth + 1,
            task: task.to_string(),
            policy,
            tools,
            history: Vec::new(),
            // Its task is queued; taking it up is the first status change front ends see.
            status: AgentStatus::Inactive,
            stats: AgentStats::default(),
            first_message: Some(first),
            announce: true,
        },
    );
    Ok(json!({
        "agent_id": id.to_string(),
        "role": role.name,
        "status": "running",
        "note": "the worker runs in parallel; collect its result with wait_for_agents"
    })
    .to_string())
}

async fn wait(
    shared: &Arc<Shared>,
    caller: AgentId,
    args: &Value,
    cancel: &CancellationToken,
) -> Result<String, String> {
    let ids: Vec<AgentId> = match args.get("agent_ids") {
        None | Some(Value::Null) => {
            let agents = shared.registry.lock();
            let children = agents
                .get(&caller)
                .map(|a| a.children.clone())
                .unwrap_or_default();
            children
                .into_iter()
                .filter(|c| {
                    agents.get(c).is_some_and(|a| {
                        a.is_busy() || (!a.delivered && a.status != AgentStatus::Cancelled)
                    })
                })
                .collect()
        }
        Some(Value::Array(list)) => {
            let mut ids = Vec::new();
            for v in list {
                let raw = v
                    .as_str()
                    .ok_or_else(|| format!("`agent_ids` must hold strings, got {v}"))?;
                ids.push(resolve_child(shared, caller, raw)?);
            }
            ids
        }
        Some(other) => return Err(format!("`agent_ids` must be an array of ids, got {other}")),
    };
    if ids.is_empty() {
        return Ok(
            json!({"results": [], "still_running": [], "note": "no workers to wait for"})
                .to_string(),
        );
    }
    let timeout = match args.get("timeout_s") {
        None | Some(Value::Null) => DEFAULT_WAIT,
        Some(v) => match v.as_f64() {
            Some(s) if s >= 0.0 && s.is_finite() => Duration::from_secs_f64(s.min(3600.0)),
            _ => {
                return Err(format!(
                    "`timeout_s` must be a non-negative number of seconds, got {v}"
                ));
            }
        },
    };

    shared.registry.set_status(
        caller,
        AgentStatus::Waiting,
        None,
        &shared.events,
        shared.root,
    );
    let mut changes = shared.registry.subscribe();
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let all_done = {
            let agents = shared.registry.lock();
            ids.iter()
                .all(|id| agents.get(id).is_none_or(|a| !a.is_busy()))
        };
        if all_done {
            break;
        }
        tokio::select! {
            r = changes.changed() => if r.is_err() { break },
            _ = tokio::time::sleep_until(deadline) => break,
            _ = cancel.cancelled() => {
                shared.registry.set_status(caller, AgentStatus::Running, None, &shared.events, shared.root);
                return Err("interrupted while waiting for workers".to_string());
            }
        }
    }
    shared.registry.set_status(
        caller,
        AgentStatus::Running,
        None,
        &shared.events,
        shared.root,
    );
    let (done, running): (Vec<AgentId>, Vec<AgentId>) = {
        let agents = shared.registry.lock();
        ids.iter()
            .partition(|id| agents.get(id).is_none_or(|a| !a.is_busy()))
    };
    Ok(fan_in_report(shared, &done, &running))
}

/// What a supervisor is told about finished (and still running) workers. Marks the
/// finished ones' results as delivered.
pub fn fan_in_report(shared: &Shared, done: &[AgentId], running: &[AgentId]) -> String {
    let mut agents = shared.registry.lock();
    let mut results = Vec::new();
    for id in done {
        let Some(a) = agents.get_mut(id) else {
            continue;
        };
        a.delivered = true;
        let mut entry = json!({
            "agent_id": id.to_string(),
            "role": a.role,
            "status": a.status.as_str(),
        });
        // A result once returned is always reported, whatever happened after it.
        if let Some(r) = &a.result {
            entry["result"] = serde_json::to_value(r).unwrap_or(Value::Null);
        }
        match a.status {
            AgentStatus::Completed => {}
            AgentStatus::Failed => {
                entry["error"] = json!(a.failure.clone().unwrap_or_else(|| "unknown error".into()));
                entry["note"] = json!("the worker failed; spawn a new one or do the work yourself");
            }
            AgentStatus::Cancelled => {
                entry["note"] = json!("the worker was cancelled before it finished");
            }
            _ if a.result.is_some() => {}
            _ => {
                entry["note"] = json!(
                    "the worker ended its turn without return_results; its last message follows"
                );
                entry["last_message"] = json!(a.last_message().unwrap_or(""));
            }
        }
        results.push(entry);
    }
    let still: Vec<Value> = running
        .iter()
        .filter_map(|id| {
            agents
                .get(id)
                .map(|a| json!({"agent_id": id.to_string(), "role": a.role, "status": a.status.as_str()}))
        })
        .collect();
    drop(agents);
    let header = if still.is_empty() {
        "Results of your workers:"
    } else {
        "Results of your finished workers (others are still running):"
    };
    let body = json!({"results": results, "still_running": still});
    format!(
        "{header}\n{}",
        serde_json::to_string_pretty(&body).unwrap_or_else(|_| body.to_string())
    )
}

async fn speak(
    shared: &Arc<Shared>,
    caller: AgentId,
    args: &Value,
    cancel: &CancellationToken,
) -> Result<String, String> {
    let id = agent_arg(shared, caller, args)?;
    let message = str_arg(args, "message")?.to_string();
    let status = shared
        .registry
        .with(id, |a| a.status)
        .ok_or("worker is gone")?;
    match status {
        AgentStatus::Completed | AgentStatus::Inactive => {}
        AgentStatus::Running | AgentStatus::Waiting => {
            return Err(format!(
                "worker {} is still {status}; call wait_for_agents first, then speak to it",
                id.short()
            ));
        }
        AgentStatus::Failed | AgentStatus::Cancelled => {
            return Err(format!(
                "worker {} is {status} and cannot take messages; spawn a new worker with the \
                 task (and what went wrong) instead",
                id.short()
            ));
        }
    }
    let (tx, rx) = oneshot::channel();
    let input = AgentInput::Message {
        text: message,
        reply: Some(tx),
    };
    if !shared.registry.deliver(id, input) {
        return Err("the worker has stopped".to_string());
    }
    shared.registry.set_status(
        caller,
        AgentStatus::Waiting,
        None,
        &shared.events,
        shared.root,
    );
    let reply = tokio::select! {
        r = rx => r.unwrap_or_else(|_| Err("the worker stopped before answering".to_string())),
        _ = cancel.cancelled() => Err("interrupted while waiting for the worker's reply".to_string()),
    };
    shared.registry.set_status(
        caller,
        AgentStatus::Running,
        None,
        &shared.events,
        shared.root,
    );
    let (status, result) = shared
        .registry
        .with(id, |a| {
            a.delivered = true;
            (a.status, a.result.clone())
        })
        .unwrap_or((AgentStatus::Failed, None));
    let text = reply?;
    let mut out = json!({"agent_id": id.to_string(), "status": status.as_str(), "reply": text});
    if status == AgentStatus::Completed
        && let Some(r) = result
    {
        out["result"] = serde_json::to_value(r).unwrap_or(Value::Null);
    }
    Ok(out.to_string())
}

fn get_agents(shared: &Shared, caller: AgentId) -> String {
    let agents = shared.registry.lock();
    let children = agents
        .get(&caller)
        .map(|a| a.children.clone())
        .unwrap_or_default();
    let mut counts = serde_json::Map::new();
    let list: Vec<Value> = children
        .iter()
        .filter_map(|id| agents.get(id))
        .map(|a| {
            let n = counts.entry(a.status.as_str()).or_insert(json!(0));
            *n = json!(n.as_u64().unwrap_or(0) + 1);
            json!({
                "agent_id": a.id.to_string(),
                "role": a.role,
                "status": a.status.as_str(),
                "task": clip(&a.task, 120),
                "has_result": a.result.is_some(),
            })
        })
        .collect();
    json!({"agents": list, "counts": counts, "total": children.len()}).to_string()
}

fn despawn(shared: &Arc<Shared>, caller: AgentId, args: &Value) -> Result<String, String> {
    let id = agent_arg(shared, caller, args)?;
    let n = cancel_agent(shared, id, "despawned by its supervisor");
    Ok(format!(
        "cancelled worker {} ({n} agent(s) in its subtree)",
        id.short()
    ))
}

/// Cancels an agent and its descendants; returns how many were stopped.
pub fn cancel_agent(shared: &Arc<Shared>, id: AgentId, reason: &str) -> usize {
    let ids = shared.registry.subtree(id);
    for a in &ids {
        let parent = shared.registry.with(*a, |e| {
            e.cancel.cancel();
            e.delivered = true;
            e.parent
        });
        let Some(parent) = parent else { continue };
        let already = shared
            .registry
            .with(*a, |e| e.status == AgentStatus::Cancelled)
            .unwrap_or(true);
        if !already {
            shared.registry.set_status(
                *a,
                AgentStatus::Cancelled,
                Some(reason.to_string()),
                &shared.events,
                shared.root,
            );
            shared
                .events
                .emit(*a, EventKind::Despawned { parent_id: parent });
        }
    }
    ids.len()
}

fn return_results(shared: &Arc<Shared>, caller: AgentId, args: &Value) -> CallResult {
    let raw = match args.get("result") {
        Some(v) => v.clone(),
        // Be forgiving about the wrapper, strict about the content.
        None if args.get("status").is_some() => args.clone(),
        None => {
            return CallResult::error(
                "missing required argument `result` (an object with status, summary, artifacts, known_issues)".into(),
            );
        }
    };
    let result = match validate_result(&raw) {
        Ok(r) => r,
        Err(e) => {
            return CallResult::error(format!(
                "invalid result: {e}. Fix it and call return_results again."
            ));
        }
    };
    let parent = shared
        .registry
        .with(caller, |a| {
            a.result = Some(result.clone());
            a.parent
        })
        .flatten();
    shared.events.emit(
        caller,
        EventKind::ResultReturned {
            parent_id: parent,
            result,
        },
    );
    CallResult {
        output: "results delivered to your supervisor".to_string(),
        is_error: false,
        returned: true,
        handoff: None,
    }
}

/// Checks a `return_results` payload field by field, naming the first bad one.
pub fn validate_result(v: &Value) -> Result<AgentResult, String> {
    let obj = v
        .as_object()
        .ok_or_else(|| format!("`result` must be an object, got {v}"))?;
    let status = match obj.get("status") {
        Some(Value::String(s)) if ["success", "failure", "partial"].contains(&s.as_str()) => s,
        Some(other) => {
            return Err(format!(
                "`result.status` must be one of \"success\", \"failure\", \"partial\"; got {other}"
            ));
        }
        None => return Err("missing `result.status` (success, failure or partial)".into()),
    };
    match obj.get("summary") {
        Some(Value::String(s)) if !s.trim().is_empty() => {}
        Some(Value::String(_)) => return Err("`result.summary` must not be empty".into()),
        Some(other) => return Err(format!("`result.summary` must be a string; got {other}")),
        None => return Err("missing `result.summary`".into()),
    }
    match obj.get("artifacts") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                let Some(a) = item.as_object() else {
                    return Err(format!(
                        "`result.artifacts[{i}]` must be an object; got {item}"
                    ));
                };
                for key in ["file_path", "description"] {
                    if !a.get(key).is_some_and(Value::is_string) {
                        return Err(format!("`result.artifacts[{i}].{key}` must be a string"));
                    }
                }
                match a.get("change_type").and_then(Value::as_str) {
                    Some("created" | "modified" | "deleted" | "referenced") => {}
                    _ => {
                        return Err(format!(
                            "`result.artifacts[{i}].change_type` must be one of created, modified, deleted, referenced; got {}",
                            a.get("change_type")
                                .map_or("nothing".to_string(), |v| v.to_string())
                        ));
                    }
                }
            }
        }
        Some(other) => return Err(format!("`result.artifacts` must be an array; got {other}")),
    }
    match obj.get("known_issues") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            if let Some((i, bad)) = items.iter().enumerate().find(|(_, v)| !v.is_string()) {
                return Err(format!(
                    "`result.known_issues[{i}]` must be a string; got {bad}"
                ));
            }
        }
        Some(other) => {
            return Err(format!(
                "`result.known_issues` must be an array of strings; got {other}"
            ));
        }
    }
    let mut clean = obj.clone();
    clean.insert("status".into(), json!(status));
    clean.entry("artifacts").or_insert(json!([]));
    clean.entry("known_issues").or_insert(json!([]));
    if clean.get("artifacts") == Some(&Value::Null) {
        clean.insert("artifacts".into(), json!([]));
    }
    if clean.get("known_issues") == Some(&Value::Null) {
        clean.insert("known_issues".into(), json!([]));
    }
    serde_json::from_value(Value::Object(clean)).map_err(|e| e.to_string())
}

fn handoff(shared: &Arc<Shared>, caller: AgentId, args: &Value) -> CallResult {
    let parsed = (|| {
        let target = str_arg(args, "target_agent")?.to_string();
        let reason = str_arg(args, "reason")?.to_string();
        let context = args
            .get("context")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        Ok::<_, String>((target, reason, context))
    })();
    let (target, reason, context) = match parsed {
        Ok(p) => p,
        Err(e) => return CallResult::error(e),
    };
    let role = shared
        .registry
        .with(caller, |a| a.role.clone())
        .unwrap_or_default();
    let allowed = shared
        .role(&role)
        .map(|r| r.handoffs.clone())
        .unwrap_or_default();
    if caller != shared.root {
        return CallResult::error("only the session's active persona can hand off".into());
    }
    if !allowed.contains(&target) {
        return CallResult::error(format!(
            "`{role}` may not hand off to `{target}`; it may hand off to: {}",
            if allowed.is_empty() {
                "nobody".to_string()
            } else {
                allowed.join(", ")
            }
        ));
    }
    if shared.role(&target).is_none() {
        return CallResult::error(format!("no role named `{target}` is loaded"));
    }
    CallResult {
        output: format!("handing off to {target}; it continues from here with your context"),
        is_error: false,
        returned: false,
        handoff: Some(Handoff {
            to: target,
            reason,
            context,
        }),
    }
}

/// A persona switch requested by a tool call, applied after the batch's results.
pub struct Handoff {
    pub to: String,
    pub reason: String,
    pub context: String,
}

/// Renders a worker's result for humans (exec's progress lines).
pub fn describe_result(result: &AgentResult) -> String {
    let mut s = format!("{}: {}", result.status.as_str(), result.summary);
    for a in &result.artifacts {
        s.push_str(&format!(
            "\n  {} {} — {}",
            a.change_type.as_str(),
            a.file_path,
            a.description
        ));
    }
    for k in &result.known_issues {
        s.push_str(&format!("\n  known issue: {k}"));
    }
    s
}
