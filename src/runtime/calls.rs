//! The tool calls of one model response: checked against the agent's tools, run through
//! their handlers (neighbours that may run together do), and answered with exactly one
//! result each, in order, even when interrupted.

use super::agent_tools::{Effect, Handoff};
use super::approval::ApprovalRequest;
use super::ask::approve;
use super::cx::AgentCx;
use super::points::{Reviewed, ToolDone, ToolGate, ToolUse, Waiting};
use super::policies::isolation::layer::prepare;
use super::policies::loop_guard::guard::{CallKind, Verdict};
use super::policies::stall::{Pulse, watch};
use super::toolbox::{CallHandler, Invocation, Ran};
use crate::context::{ClipHint, clip_tool_output};
use crate::protocol::{ApprovalPolicy, EventKind, HistoryItem, ToolCall};
use crate::text::clip;
use crate::tools::{Reports, ToolFacts};
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;

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
        let stopped = stopped_before(cx, &out.end).await;
        let ran = stopped.is_none();
        let results: Vec<CallResult> = match stopped {
            Some(why) => batch
                .iter()
                .map(|_| CallResult::error(why.clone()))
                .collect(),
            None => run_batch(cx, batch).await,
        };
        for (call, result) in batch.iter().zip(results) {
            let result = take_effect(&mut out, result);
            cx.team().count_tool_result(cx.id(), result.is_error);
            let output = answer_for(cx, call, &result, ran, output_cap, &mut out.end);
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
/// turn was stopped (also while the team was paused: held here, after the calls before it
/// ran).
async fn stopped_before(cx: &AgentCx, end: &BatchEnd) -> Option<String> {
    if let BatchEnd::Fatal(why) | BatchEnd::Looping(why) = end {
        return Some(format!("not run: {why}"));
    }
    let (team, agent, cancel) = (cx.team(), cx.id(), cx.cancel());
    let went_on = cancel.is_cancelled() || cx.session().pause.pass(team, agent, cancel).await;
    (cancel.is_cancelled() || !went_on)
        .then(|| "not run: the turn was stopped before this call".to_string())
}

/// Runs a batch's calls together, each told begun and ended to the front ends.
async fn run_batch(cx: &AgentCx, batch: &[ToolCall]) -> Vec<CallResult> {
    let (team, agent) = (cx.team(), cx.id());
    for call in batch {
        let call_id = call.id.clone();
        team.emit(agent, EventKind::ToolCallBegin { call_id });
    }
    let timed = futures::future::join_all(batch.iter().map(|call| async move {
        let started = Instant::now();
        let r = execute(cx, call).await;
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

/// What a result means for the turn, taken out of it: the turn's end, a handoff (the first
/// of a response wins; a second is an error), a correction.
fn take_effect(out: &mut BatchOutcome, mut result: CallResult) -> CallResult {
    match std::mem::replace(&mut result.effect, Effect::None) {
        Effect::None => {}
        Effect::Returned => out.end = BatchEnd::Returned,
        Effect::Correct(message) => out.corrections.push(message),
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
    result
}

/// The result as the model reads it: clipped to the cap, with the layers' word on it (only
/// calls that ran count as the model's repeats); a stop of the turn becomes its end.
fn answer_for(
    cx: &AgentCx,
    call: &ToolCall,
    result: &CallResult,
    ran: bool,
    cap: usize,
    end: &mut BatchEnd,
) -> String {
    let verdict = if ran {
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

async fn execute(cx: &AgentCx, call: &ToolCall) -> CallResult {
    let (role, policy, handler) = match resolve(cx, call).await {
        Ok(found) => found,
        Err(result) => return result,
    };
    let mut args = match parse_arguments(call) {
        Ok(args) => args,
        Err(message) => return CallResult::error(message),
    };
    let inv = Invocation {
        agent: cx.id(),
        team: cx.team(),
        host: cx,
        cancel: cx.cancel(),
    };
    let passed = match gate(cx, call, &handler, &inv, &mut args).await {
        Ok(passed) => passed,
        Err(result) => return result,
    };
    if let Err(denied) = ask_approval(cx, call, &role, policy, &passed).await {
        return denied;
    }
    let tool = ToolUse {
        call_id: &call.id,
        name: &call.name,
        args: &passed.args,
        reach: passed.facts.reach,
        reports: passed.facts.reports,
        writes: passed.writes.as_deref(),
        action: passed.action.as_ref(),
    };
    let mut result = run_watched(cx, &handler, &inv, &tool).await;
    if passed.hook.amended {
        // The model learns its call ran as the user's hook changed it.
        let note = format!(
            "[a pre_tool_use hook changed this call's arguments to {}]\n",
            clip(&passed.args.to_string(), 400)
        );
        result.output.insert_str(0, &note);
    }
    let done = ToolDone {
        output: &result.output,
        is_error: result.is_error,
    };
    cx.after_tool(&tool, &done).await;
    result.facts = Some(passed.facts);
    result
}

/// Puts a call whose action needs approval to the gate; `Err`: its result, refused.
async fn ask_approval(
    cx: &AgentCx,
    call: &ToolCall,
    role: &str,
    policy: ApprovalPolicy,
    passed: &Passed,
) -> Result<(), CallResult> {
    let Some(action) = &passed.action else {
        return Ok(());
    };
    let req = ApprovalRequest {
        agent_id: cx.id(),
        role,
        policy,
        tool: &call.name,
        action,
        hook: passed.hook.approval,
    };
    approve(cx, req)
        .await
        .map_err(|denied| CallResult::error(denied.0))
}

/// Runs the call with the stall watch beside it.
async fn run_watched(
    cx: &AgentCx,
    handler: &Arc<dyn CallHandler>,
    inv: &Invocation<'_>,
    tool: &ToolUse<'_>,
) -> CallResult {
    let run = handler.run(inv, tool.args.clone());
    let after = cx.session().config.guards.stall_after();
    let waiting = Waiting::Tool(tool);
    let ran = watch(cx.team(), cx.id(), after, &waiting, &Pulse::default(), run).await;
    CallResult::from(ran)
}

/// What the user's hooks said of a call that goes on.
#[derive(Default)]
struct HookSaid {
    approval: Option<crate::runtime::approval::HookApproval>,
    /// A hook changed its arguments.
    amended: bool,
}

/// A call described and passed by the layers.
struct Passed {
    /// Its arguments (as a hook may have changed them).
    args: Value,
    /// The paths it writes, when that is all it does.
    writes: Option<Vec<String>>,
    /// What the user approves.
    action: Option<crate::protocol::ApprovalAction>,
    /// What its handler says of it, from those arguments.
    facts: ToolFacts,
    hook: HookSaid,
}

fn passed(
    args: &Value,
    writes: Option<Vec<String>>,
    action: Option<crate::protocol::ApprovalAction>,
    facts: ToolFacts,
    hook: HookSaid,
) -> Passed {
    Passed {
        args: args.clone(),
        writes,
        action,
        facts,
        hook,
    }
}

/// Describes the call and asks the layers, again from the layer after one that changed
/// it (a hook's `updatedInput`).
async fn gate(
    cx: &AgentCx,
    call: &ToolCall,
    handler: &Arc<dyn CallHandler>,
    inv: &Invocation<'_>,
    args: &mut Value,
) -> Result<Passed, CallResult> {
    let mut from = 0;
    let mut said = HookSaid::default();
    loop {
        let writes = handler.writes_only(args);
        let facts = handler.facts(args);
        let tool = ToolUse {
            call_id: &call.id,
            name: &call.name,
            args,
            reach: facts.reach,
            reports: facts.reports,
            writes: writes.as_deref(),
            action: None,
        };
        // Before the call is described: a worker's first change gets its worktree here, so
        // the user approves a diff against it; a call in a worktree still being filled waits.
        prepare(cx, &tool).await;
        let action = match handler.describe(inv, args).await {
            Ok(action) => action,
            Err(message) if said.amended => {
                return Err(CallResult::error(amend_failed(call, &message)));
            }
            Err(message) => return Err(CallResult::error(message)),
        };
        let tool = ToolUse {
            action: action.as_ref(),
            ..tool
        };
        match cx.before_tool(&tool, from).await {
            (ToolGate::Block(why), _) => return Err(CallResult::error(why)),
            (ToolGate::Go, _) => return Ok(passed(args, writes, action, facts, said)),
            (ToolGate::Approval(a), _) => {
                said.approval = said.approval.or(Some(a));
                return Ok(passed(args, writes, action, facts, said));
            }
            (ToolGate::Amend(changed, a), next) => {
                said.approval = said.approval.or(a);
                if let Some(spec) = cx.session().tools.spec(&call.name)
                    && let Err(e) = crate::tools::check_args(&spec.parameters, &changed)
                {
                    return Err(CallResult::error(amend_failed(call, &e)));
                }
                *args = changed;
                said.amended = true;
                from = next;
            }
        }
    }
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
    cx: &AgentCx,
    call: &ToolCall,
) -> Result<(String, ApprovalPolicy, Arc<dyn CallHandler>), CallResult> {
    let (session, cancel) = (cx.session(), cx.cancel());
    let Some(me) = cx.team().card(cx.id()) else {
        return Err(CallResult {
            fatal: true,
            ..CallResult::error("agent no longer exists".to_string())
        });
    };
    let mcp = session.tools.mcp();
    if mcp.server_of(&call.name).is_some() {
        let up = tokio::select! {
            up = mcp.prepare(&call.name) => up,
            _ = cancel.cancelled() => Err("not run: the turn was stopped before this call".to_string()),
        };
        up.map_err(CallResult::error)?;
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
