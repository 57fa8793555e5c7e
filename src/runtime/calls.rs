//! The tool calls of one model response: checked against the agent's tools, passed down
//! the agent's layers to their handlers (neighbours that may run together do), and
//! answered with exactly one result each, in order, even when interrupted. What holds a
//! call, refuses it, asks the user about it or watches it is a layer's (`cx.rs`); this
//! file names none of them.

use super::agent_tools::{Effect, Handoff};
use super::cx::{AgentCx, ToolCore};
use super::points::{CallKind, Reviewed, Verdict};
use super::tool_call::{Reached, STOPPED, ToolOut, ToolReq};
use super::toolbox::CallHandler;
use crate::context::{ClipHint, clip_tool_output};
use crate::protocol::{ApprovalPolicy, HistoryItem, ToolCall};
use crate::text::clip;
use crate::tools::Reports;
use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;

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

/// Runs one response's calls: neighbours that may run together do (reads, and spawns
/// nobody has to approve), the rest one by one, in order.
pub async fn run_tool_calls(cx: &AgentCx, calls: &[ToolCall]) -> BatchOutcome {
    let together = runs_together(cx);
    let output_cap = output_cap(cx);
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
        let results: Vec<ToolOut> = match stopped_before(cx, &out.end) {
            Some(why) => batch
                .iter()
                .map(|_| ToolOut::stopped(why.clone()))
                .collect(),
            None => run_batch(cx, batch).await,
        };
        for (call, result) in batch.iter().zip(results) {
            let result = take_effect(&mut out, result);
            cx.team().count_tool_result(cx.id(), result.is_error);
            let output = answer_for(cx, call, &result, output_cap, &mut out.end);
            cx.team().push_item(
                cx.id(),
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

/// Whether a call of this tool may run beside its neighbours: reads always, and calls
/// nobody is asked about when the agent's policy never asks.
fn runs_together(cx: &AgentCx) -> impl Fn(&str) -> bool + '_ {
    let session = cx.session();
    let policy = cx.team().card(cx.id()).map(|c| c.policy);
    let may_ask = policy.is_some_and(|p| session.gate.may_ask(p));
    move |name: &str| {
        session.tools.is_read_only(name) || (!may_ask && session.tools.is_concurrent(name))
    }
}

/// Why the next batch does not run: a fatal call or the loop guard ended the turn, or the
/// turn was stopped.
fn stopped_before(cx: &AgentCx, end: &BatchEnd) -> Option<String> {
    if let BatchEnd::Fatal(why) | BatchEnd::Looping(why) = end {
        return Some(format!("not run: {why}"));
    }
    (cx.cancel().is_cancelled()).then(|| STOPPED.to_string())
}

/// Runs a batch's calls together.
async fn run_batch(cx: &AgentCx, batch: &[ToolCall]) -> Vec<ToolOut> {
    futures::future::join_all(batch.iter().map(|call| execute(cx, call))).await
}

/// What a result means for the turn, taken out of it: the turn's end, a handoff (the first
/// of a response wins; a second is an error), a correction.
fn take_effect(out: &mut BatchOutcome, mut result: ToolOut) -> ToolOut {
    match std::mem::replace(&mut result.effect, Effect::None) {
        Effect::None => {}
        Effect::Returned => out.end = BatchEnd::Returned,
        Effect::Correct(message) => out.corrections.push(message),
        Effect::Handoff(h) => match &out.handoff {
            Some(first) => {
                let why = format!(
                    "only one handoff per response: the session is already being handed to `{}`",
                    first.to
                );
                result = ToolOut {
                    reached: result.reached,
                    ..ToolOut::refused(why)
                };
            }
            None => out.handoff = Some(h),
        },
    }
    if result.fatal {
        out.end = BatchEnd::Fatal(result.output.clone());
    }
    result
}

/// The result as the model reads it: clipped to the cap, with the layers' word on it (only
/// calls that ran count as the model's repeats); a stop of the turn becomes its end.
fn answer_for(
    cx: &AgentCx,
    call: &ToolCall,
    result: &ToolOut,
    cap: usize,
    end: &mut BatchEnd,
) -> String {
    // Only calls that were not stopped before they started count as the model's repeats.
    let verdict = if result.reached != Reached::Stopped {
        let reviewed = Reviewed {
            name: &call.name,
            arguments: &call.arguments,
            kind: result.facts.as_ref().map_or(CallKind::Other, CallKind::of),
            reports: (result.facts.as_ref()).map_or(Reports::Nothing, |f| f.reports),
            output: &result.output,
            is_error: result.is_error,
        };
        cx.review(&reviewed)
    } else {
        Verdict::Pass
    };
    let hint = (result.facts.as_ref()).map_or(ClipHint::Other, |f| f.clip.clone());
    let mut output =
        clip_tool_output(&result.output, cap, &hint).unwrap_or_else(|| result.output.clone());
    if call.id.starts_with(crate::model::text_calls::ID_PREFIX) {
        output.insert_str(0, crate::model::text_calls::RAN_NOTE);
    }
    // Words of squad's in the result come only from a layer's verdict on evidence: the
    // loop guard's note (the same call, same answer, `repeat_note_after` times) and its stop
    // (`repeat_stop_after` times), the answer layer's regression note (a test run failing
    // after one passed); `tests/capable_models.rs` shows a capable model never meets them.
    match verdict {
        Verdict::Pass => {}
        Verdict::Note(note) => {
            output.push_str("\n\n");
            output.push_str(&note);
        }
        Verdict::Stop(why) => {
            output.push_str(&format!("\n\n[squad] Stopped this turn: {why}."));
            if matches!(end, BatchEnd::Continue) {
                *end = BatchEnd::Looping(why);
            }
        }
    }
    output
}

/// Most bytes of one tool output kept in the agent's history: the configured cap, and
/// never more than a fifth of its model's window (at ~3.5 bytes a token).
fn output_cap(cx: &AgentCx) -> usize {
    let session = cx.session();
    let window = (cx.team().model(cx.id())).map_or(u64::MAX, |m| session.windows.window(&m));
    let by_window = usize::try_from(window.saturating_mul(7) / 10).unwrap_or(usize::MAX);
    session
        .config
        .context
        .max_tool_output_bytes
        .min(by_window)
        .max(512)
}

/// One call: its context built once, then passed down the agent's layers; a call that
/// never gets a context (an unknown tool, bad arguments) is answered at once.
async fn execute(cx: &AgentCx, call: &ToolCall) -> ToolOut {
    let (role, policy, handler) = match resolve(cx, call).await {
        Ok(found) => found,
        Err(result) => return cx.team().told(cx.id(), &call.id, async { result }).await,
    };
    let args = match parse_arguments(call) {
        Ok(args) => args,
        Err(message) => {
            let result = ToolOut::refused(message);
            return cx.team().told(cx.id(), &call.id, async { result }).await;
        }
    };
    let mut req = ToolReq::new(call, (role, policy), handler, args);
    cx.tool_call(&mut req, &Core).await
}

/// Runs a call once every layer passed it on: the innermost of every agent's stack.
pub struct Core;

#[async_trait]
impl ToolCore for Core {
    async fn run(&self, cx: &AgentCx, req: &mut ToolReq<'_>) -> ToolOut {
        let inv = cx.invocation();
        if let Err(why) = req.action(&inv).await {
            return ToolOut::refused(why);
        }
        let mut out = ToolOut::ran(req.handler.run(&inv, req.args.clone()).await);
        out.facts = Some(req.facts.clone());
        out
    }
}

/// The handler of a call the agent may make now (an MCP server's tools may only now be
/// known: a start in progress is waited for, a failed server started again), with the
/// agent's role and approval policy.
async fn resolve(
    cx: &AgentCx,
    call: &ToolCall,
) -> Result<(String, ApprovalPolicy, Arc<dyn CallHandler>), ToolOut> {
    let (session, cancel) = (cx.session(), cx.cancel());
    let Some(me) = cx.team().card(cx.id()) else {
        return Err(ToolOut {
            fatal: true,
            ..ToolOut::refused("agent no longer exists")
        });
    };
    let mcp = session.tools.mcp();
    if mcp.server_of(&call.name).is_some() {
        let up = tokio::select! {
            up = mcp.prepare(&call.name) => up,
            _ = cancel.cancelled() => Err(STOPPED.to_string()),
        };
        up.map_err(ToolOut::refused)?;
    }
    let handler = session.tools.handler(&call.name);
    let available = session.agent_tools(cx.id(), &me.tools);
    if !available.iter().any(|t| t == &call.name) {
        let known = match handler {
            Some(_) => format!(
                "tool `{}` is not available to the `{}` role",
                call.name, me.role
            ),
            None => format!("unknown tool `{}`", call.name),
        };
        return Err(ToolOut::refused(format!(
            "{known}. Available tools: {}.",
            available.join(", ")
        )));
    }
    match handler {
        Some(h) => Ok((me.role, me.policy, h)),
        None => Err(ToolOut::refused(format!("unknown tool `{}`", call.name))),
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
