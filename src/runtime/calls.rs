//! The tool calls of one model response: checked against the agent's tools, run through
//! their handlers (neighbours that may run together do), and answered with exactly one
//! result each, in order, even when interrupted.

use super::agent_tools::{Effect, Handoff};
use super::approval::ApprovalRequest;
use super::engine::Engine;
use super::guard::{CallKind, Verdict};
use super::isolation;
use super::layers::{Reviewed, ToolDone, ToolGate, ToolUse};
use super::stall::{self, Pulse};
use super::toolbox::{Invocation, Ran, Reach};
use super::verification;
use crate::context::{ClipHint, clip_tool_output};
use crate::protocol::{AgentId, EventKind, HistoryItem, ToolCall};
use crate::text::{clip, key_argument};
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
}

impl CallResult {
    fn ok(output: String, effect: Effect) -> Self {
        Self {
            output,
            is_error: false,
            effect,
            fatal: false,
        }
    }

    fn error(output: String) -> Self {
        Self {
            output,
            is_error: true,
            effect: Effect::None,
            fatal: false,
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
                    kind: CallKind::of(&engine.tools, &call.name),
                    output: &result.output,
                    is_error: result.is_error,
                };
                engine.review(agent, &reviewed)
            } else {
                Verdict::Pass
            };
            let mut output = clip_tool_output(&result.output, output_cap, &clip_hint(call))
                .unwrap_or(result.output);
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

/// How the note of a cut output says to read the rest.
fn clip_hint(call: &ToolCall) -> ClipHint {
    match call.name.as_str() {
        "read_file" => {
            let args: Value = serde_json::from_str(&call.arguments).unwrap_or_default();
            ClipHint::ReadFile {
                path: args["path"].as_str().unwrap_or("").to_string(),
                first_line: args["start_line"].as_u64().unwrap_or(1).max(1),
            }
        }
        "run_command" | "run_tests" => ClipHint::Command,
        _ => ClipHint::Other,
    }
}

async fn execute(
    engine: &Arc<Engine>,
    agent: AgentId,
    call: &ToolCall,
    cancel: &CancellationToken,
) -> CallResult {
    let Some(me) = engine.team.card(agent) else {
        return CallResult {
            fatal: true,
            ..CallResult::error("agent no longer exists".to_string())
        };
    };
    // A call into an MCP server waits for a start in progress, or starts the server again
    // after it failed, before anything else is decided: its tools may only now be known.
    let mcp = engine.tools.mcp();
    if mcp.server_of(&call.name).is_some() {
        let up = tokio::select! {
            up = mcp.prepare(&call.name) => up,
            _ = cancel.cancelled() => Err("not run: the turn was stopped before this call".to_string()),
        };
        if let Err(why) = up {
            return CallResult::error(why);
        }
    }
    let handler = engine.tools.handler(&call.name);
    let available = engine.agent_tools(agent, &me.tools);
    if !available.iter().any(|t| t == &call.name) {
        let known = if handler.is_some() {
            format!(
                "tool `{}` is not available to the `{}` role",
                call.name, me.role
            )
        } else {
            format!("unknown tool `{}`", call.name)
        };
        return CallResult::error(format!(
            "{known}. Available tools: {}.",
            available.join(", ")
        ));
    }
    let Some(handler) = handler else {
        return CallResult::error(format!("unknown tool `{}`", call.name));
    };
    let args = match parse_arguments(call) {
        Ok(args) => args,
        Err(message) => return CallResult::error(message),
    };
    let reach = handler.reach();
    let changes = reach == Reach::ChangesFiles;
    // A writing worker gets its worktree at its first call that may change files, so one
    // that only reads or reports never costs a git process.
    if changes {
        isolation::before_change(engine, agent).await;
    }
    let inv = Invocation {
        agent,
        role: &me.role,
        team: &engine.team,
        host: engine,
        cancel,
    };
    let action = match handler.describe(&inv, &args).await {
        Ok(action) => action,
        Err(message) => return CallResult::error(message),
    };
    let place = engine.place(agent);
    let cx = place.scope(&engine.team, agent, cancel);
    let tool = ToolUse {
        name: &call.name,
        args: &args,
    };
    if let ToolGate::Block(why) = engine.layers.before_tool(&cx, &tool).await {
        return CallResult::error(why);
    }
    if changes {
        // A file another worker holds in the shared workspace is refused first.
        let root = engine.workspace_for(agent);
        if let Err(held) = isolation::claim_write(engine, agent, &root, action.as_ref()) {
            return CallResult::error(held);
        }
    }
    if let Some(action) = &action {
        let req = ApprovalRequest {
            agent_id: agent,
            role: &me.role,
            policy: me.policy,
            tool: &call.name,
            action,
        };
        if let Err(denied) = engine.approve(req, cancel).await {
            return CallResult::error(denied.0);
        }
    }
    let run = handler.run(&inv, args.clone());
    let ran = match reach {
        // Waiting for workers or the user is not a stall.
        Reach::Team => run.await,
        Reach::Reads => watch_call(engine, agent, call, run).await,
        Reach::ChangesFiles => {
            let run = verification::record_changes(engine, agent, action.as_ref(), run);
            let ran = watch_call(engine, agent, call, run).await;
            isolation::after_mutation(engine, agent).await;
            ran
        }
    };
    let result = match ran {
        Ran::Ok(output, effect) => CallResult::ok(output, effect),
        Ran::Error(message) => CallResult::error(message),
        Ran::Fatal(message) => CallResult {
            fatal: true,
            ..CallResult::error(message)
        },
    };
    let done = ToolDone {
        output: &result.output,
        is_error: result.is_error,
    };
    // The root may have changed (a first change made the worker's worktree).
    let place = engine.place(agent);
    let cx = place.scope(&engine.team, agent, cancel);
    let tool = ToolUse {
        name: &call.name,
        args: &args,
    };
    engine.layers.after_tool(&cx, &tool, &done).await;
    result
}

/// Runs a tool (after its approval, which waits on the user, not on the tool), marking
/// the agent stalled while it has not ended for `stall_after_s`.
async fn watch_call<T>(
    engine: &Engine,
    agent: AgentId,
    call: &ToolCall,
    run: impl Future<Output = T>,
) -> T {
    let on = || {
        format!(
            "tool call {} {}",
            call.name,
            clip(&key_argument(&call.arguments), 80)
        )
        .trim_end()
        .to_string()
    };
    let after = engine.config.guards.stall_after();
    stall::watch(&engine.team, agent, after, &Pulse::default(), on, run).await
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
