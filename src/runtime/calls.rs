//! The tool calls of one model response: checked against the agent's tools, run through
//! their handlers (neighbours that may run together do), and answered with exactly one
//! result each, in order, even when interrupted.

use super::agent_tools::{Effect, Handoff};
use super::approval::ApprovalRequest;
use super::engine::Engine;
use super::guard::{CallKind, Verdict};
use super::layers::{Pulse, Reviewed, ToolDone, ToolGate, ToolUse, Waiting};
use super::toolbox::{CallHandler, Invocation, Ran};
use crate::context::{ClipHint, clip_tool_output};
use crate::protocol::{AgentId, ApprovalPolicy, EventKind, HistoryItem, ToolCall};
use crate::text::clip;
use crate::tools::{Reports, ToolFacts};
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// How a batch of calls ended, for the turn.
pub enum BatchEnd {
    Continue,
    /// `return_results` succeeded: finish the turn.
    Returned,
    /// A call found the turn cannot go on.
    Fatal(String),
    /// The loop guard stopped the turn: the model repeats itself (`loop: …`).
    Looping(String),
}

pub struct BatchOutcome {
    pub end: BatchEnd,
    /// The first handoff asked for; applied after every result is recorded.
    pub handoff: Option<Handoff>,
    /// Corrections of results that did not pass, told after every result.
    pub corrections: Vec<String>,
}

/// The result of one call, with what it means for the turn.
struct CallResult {
    output: String,
    is_error: bool,
    effect: Effect,
    fatal: bool,
    /// What its handler says of the call as it ran (`None`: it never reached one).
    facts: Option<ToolFacts>,
}

impl From<Ran> for CallResult {
    fn from(ran: Ran) -> Self {
        match ran {
            Ran::Ok(output, effect) => Self::ok(output, effect),
            Ran::Error(message) => Self::error(message),
            Ran::Fatal(message) => Self {
                fatal: true,
                ..Self::error(message)
            },
        }
    }
}

impl CallResult {
    fn ok(output: String, effect: Effect) -> Self {
        Self {
            output,
            is_error: false,
            effect,
            fatal: false,
            facts: None,
        }
    }

    fn error(output: String) -> Self {
        Self {
            output,
            is_error: true,
            effect: Effect::None,
            fatal: false,
            facts: None,
        }
    }
}

/// Runs one response's calls: neighbours that may run together do (reads, and spawns
/// nobody has to approve), the rest one by one, in order.
pub async fn run_tool_calls(
    engine: &Arc<Engine>,
    agent: AgentId,
    calls: &[ToolCall],
    cancel: &CancellationToken,
) -> BatchOutcome {
    let team = &engine.team;
    let policy = team.card(agent).map(|c| c.policy);
    let may_ask = policy.is_some_and(|p| engine.gate.may_ask(p));
    let together = |name: &str| {
        engine.tools.is_read_only(name) || (!may_ask && engine.tools.is_concurrent(name))
    };
    let output_cap = output_cap(engine, agent);
    let mut out = BatchOutcome {
        end: BatchEnd::Continue,
        handoff: None,
        corrections: Vec::new(),
    };
    let mut i = 0;
    while i < calls.len() {
        let mut j = i + 1;
        if together(&calls[i].name) {
            while j < calls.len() && together(&calls[j].name) {
                j += 1;
            }
        }
        let batch = &calls[i..j];
        // Held here while the team is paused; the calls before this batch have run.
        let went_on = matches!(out.end, BatchEnd::Fatal(_) | BatchEnd::Looping(_))
            || cancel.is_cancelled()
            || engine.pause.pass(team, agent, cancel).await;
        let stopped = match &out.end {
            BatchEnd::Fatal(why) | BatchEnd::Looping(why) => Some(format!("not run: {why}")),
            _ if cancel.is_cancelled() || !went_on => {
                Some("not run: the turn was stopped before this call".to_string())
            }
            _ => None,
        };
        let ran = stopped.is_none();
        let results: Vec<CallResult> = match stopped {
            Some(why) => batch
                .iter()
                .map(|_| CallResult::error(why.clone()))
                .collect(),
            None => {
                for call in batch {
                    team.emit(
                        agent,
                        EventKind::ToolCallBegin {
                            call_id: call.id.clone(),
                        },
                    );
                }
                let timed = futures::future::join_all(batch.iter().map(|call| async move {
                    let started = Instant::now();
                    let r = execute(engine, agent, call, cancel).await;
                    (r, started.elapsed())
                }))
                .await;
                let mut results = Vec::with_capacity(timed.len());
                for (call, (result, elapsed)) in batch.iter().zip(timed) {
                    team.emit(
                        agent,
                        EventKind::ToolCallEnd {
                            call_id: call.id.clone(),
                            duration_ms: elapsed.as_millis() as u64,
                        },
                    );
                    results.push(result);
                }
                results
            }
        };
        for (call, mut result) in batch.iter().zip(results) {
            match std::mem::replace(&mut result.effect, Effect::None) {
                Effect::None => {}
                Effect::Returned => out.end = BatchEnd::Returned,
                Effect::Correct(message) => out.corrections.push(message),
                // One persona takes over per response: the first handoff wins.
                Effect::Handoff(h) => match &out.handoff {
                    Some(first) => {
                        result = CallResult::error(format!(
                            "only one handoff per response: the session is already being handed to `{}`",
                            first.to
                        ));
                    }
                    None => out.handoff = Some(h),
                },
            }
            if result.fatal {
                out.end = BatchEnd::Fatal(result.output.clone());
            }
            team.count_tool_result(agent, result.is_error);
            // Only calls that ran count as the model's repeats.
            let verdict = if ran {
                let reviewed = Reviewed {
                    name: &call.name,
                    arguments: &call.arguments,
                    kind: result.facts.as_ref().map_or(CallKind::Other, CallKind::of),
                    reports: result
                        .facts
                        .as_ref()
                        .map_or(Reports::Nothing, |f| f.reports),
                    output: &result.output,
                    is_error: result.is_error,
                };
                engine.review(agent, &reviewed)
            } else {
                Verdict::Pass
            };
            let hint = result.facts.map_or(ClipHint::Other, |f| f.clip);
            let mut output =
                clip_tool_output(&result.output, output_cap, &hint).unwrap_or(result.output);
            if call.id.starts_with(crate::model::text_calls::ID_PREFIX) {
                output.insert_str(0, crate::model::text_calls::RAN_NOTE);
            }
            match verdict {
                Verdict::Pass => {}
                Verdict::Note(note) => {
                    output.push_str("\n\n");
                    output.push_str(&note);
                }
                Verdict::Stop(why) => {
                    output.push_str(&format!("\n\n[squad] Stopped this turn: {why}."));
                    if matches!(out.end, BatchEnd::Continue) {
                        out.end = BatchEnd::Looping(why);
                    }
                }
            }
            team.push_item(
                agent,
                HistoryItem::ToolResult {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    output,
                    is_error: result.is_error,
                },
            );
        }
        i = j;
    }
    out
}

/// Most bytes of one tool output kept in the agent's history: the configured cap, and
/// never more than a fifth of its model's window (at ~3.5 bytes a token).
fn output_cap(engine: &Engine, agent: AgentId) -> usize {
    let window = engine
        .team
        .model(agent)
        .map_or(u64::MAX, |m| engine.windows.window(&m));
    let by_window = usize::try_from(window.saturating_mul(7) / 10).unwrap_or(usize::MAX);
    engine
        .config
        .context
        .max_tool_output_bytes
        .min(by_window)
        .max(512)
}

async fn execute(
    engine: &Arc<Engine>,
    agent: AgentId,
    call: &ToolCall,
    cancel: &CancellationToken,
) -> CallResult {
    let (role, policy, handler) = match resolve(engine, agent, call, cancel).await {
        Ok(found) => found,
        Err(result) => return result,
    };
    let mut args = match parse_arguments(call) {
        Ok(args) => args,
        Err(message) => return CallResult::error(message),
    };
    let inv = Invocation {
        agent,
        role: &role,
        team: &engine.team,
        host: engine,
        cancel,
    };
    // Asked again from the layer after one that changed the call (a hook's `updatedInput`).
    let mut from = 0;
    let mut hook = None;
    let mut amended = false;
    let (writes, action, facts) = loop {
        let writes = handler.writes_only(&args);
        let facts = handler.facts(&args);
        let tool = ToolUse {
            call_id: &call.id,
            name: &call.name,
            args: &args,
            reach: facts.reach,
            reports: facts.reports,
            writes: writes.as_deref(),
            action: None,
        };
        // Before the call is described: a worker's first change gets its worktree here, so
        // the user approves a diff against it; a call in a worktree still being filled waits.
        let place = engine.place(agent);
        engine
            .layers
            .prepare_tool(&place.scope(&engine.team, agent, cancel), &tool)
            .await;
        let action = match handler.describe(&inv, &args).await {
            Ok(action) => action,
            Err(message) if amended => return CallResult::error(amend_failed(call, &message)),
            Err(message) => return CallResult::error(message),
        };
        let tool = ToolUse {
            action: action.as_ref(),
            ..tool
        };
        let cx = place.scope(&engine.team, agent, cancel);
        match engine.layers.before_tool_from(&cx, &tool, from).await {
            (ToolGate::Block(why), _) => return CallResult::error(why),
            (ToolGate::Go, _) => break (writes, action, facts),
            (ToolGate::Approval(said), _) => {
                hook = hook.or(Some(said));
                break (writes, action, facts);
            }
            (ToolGate::Amend(changed, said), next) => {
                hook = hook.or(said);
                if let Some(spec) = engine.tools.spec(&call.name)
                    && let Err(e) = crate::tools::check_args(&spec.parameters, &changed)
                {
                    return CallResult::error(amend_failed(call, &e));
                }
                args = changed;
                amended = true;
                from = next;
            }
        }
    };
    let tool = ToolUse {
        call_id: &call.id,
        name: &call.name,
        args: &args,
        reach: facts.reach,
        reports: facts.reports,
        writes: writes.as_deref(),
        action: action.as_ref(),
    };
    let place = engine.place(agent);
    let cx = place.scope(&engine.team, agent, cancel);
    if let Some(action) = &action {
        let req = ApprovalRequest {
            agent_id: agent,
            role: &role,
            policy,
            tool: &call.name,
            action,
            hook,
        };
        if let Err(denied) = engine.approve(req, cancel).await {
            return CallResult::error(denied.0);
        }
    }
    engine.layers.before_run(&cx, &tool).await;
    let run = handler.run(&inv, args.clone());
    let ran = (engine.layers)
        .watch(&cx, &Waiting::Tool(&tool), &Pulse::default(), run)
        .await;
    let mut result = CallResult::from(ran);
    if amended {
        // The model learns its call ran as the user's hook changed it.
        result.output.insert_str(
            0,
            &format!(
                "[a pre_tool_use hook changed this call's arguments to {}]\n",
                clip(&args.to_string(), 400)
            ),
        );
    }
    let done = ToolDone {
        output: &result.output,
        is_error: result.is_error,
    };
    engine.layers.after_tool(&cx, &tool, &done).await;
    result.facts = Some(facts);
    result
}

/// The error of a call a hook changed into one its tool refuses.
fn amend_failed(call: &ToolCall, why: &str) -> String {
    format!(
        "not run: a pre_tool_use hook changed this call's arguments (`updatedInput`) into \
         ones `{}` refuses: {why}. This is the user's hook, not your call: tell the user, \
         or do the work another way.",
        call.name
    )
}

/// The handler of a call the agent may make now (an MCP server's tools may only now be
/// known: a start in progress is waited for, a failed server started again), with the
/// agent's role and approval policy.
async fn resolve(
    engine: &Engine,
    agent: AgentId,
    call: &ToolCall,
    cancel: &CancellationToken,
) -> Result<(String, ApprovalPolicy, Arc<dyn CallHandler>), CallResult> {
    let Some(me) = engine.team.card(agent) else {
        return Err(CallResult {
            fatal: true,
            ..CallResult::error("agent no longer exists".to_string())
        });
    };
    let mcp = engine.tools.mcp();
    if mcp.server_of(&call.name).is_some() {
        let up = tokio::select! {
            up = mcp.prepare(&call.name) => up,
            _ = cancel.cancelled() => Err("not run: the turn was stopped before this call".to_string()),
        };
        up.map_err(CallResult::error)?;
    }
    let handler = engine.tools.handler(&call.name);
    let available = engine.agent_tools(agent, &me.tools);
    if !available.iter().any(|t| t == &call.name) {
        let known = match handler {
            Some(_) => format!(
                "tool `{}` is not available to the `{}` role",
                call.name, me.role
            ),
            None => format!("unknown tool `{}`", call.name),
        };
        return Err(CallResult::error(format!(
            "{known}. Available tools: {}.",
            available.join(", ")
        )));
    }
    match handler {
        Some(h) => Ok((me.role, me.policy, h)),
        None => Err(CallResult::error(format!("unknown tool `{}`", call.name))),
    }
}

/// The call's arguments as a JSON object; errors quote what the model sent.
fn parse_arguments(call: &ToolCall) -> Result<Value, String> {
    if call.arguments.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    match serde_json::from_str(&call.arguments) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err(format!(
            "arguments must be a JSON object; you sent: {}",
            clip(&call.arguments, 400)
        )),
        Err(e) => Err(format!(
            "arguments are not valid JSON ({e}); you sent: {}. Call `{}` again with a valid JSON object.",
            clip(&call.arguments, 400),
            call.name
        )),
    }
}
