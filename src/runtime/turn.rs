//! One turn of one agent: model call → tool calls → results → next call, until the model
//! answers without tool calls, returns its results, or a limit or interrupt stops it.

use super::Shared;
use super::agent_tools;
use super::approval::ApprovalRequest;
use crate::model::{ModelError, ModelProgress};
use crate::protocol::{AgentId, EventKind, HistoryItem, ToolCall, TurnEnd};
use crate::tools::{ToolContext, ToolEffect, ToolError};
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// How a turn ended, and what the agent said last.
pub struct TurnOutcome {
    pub end: TurnEnd,
    pub final_text: String,
    /// Set when the turn could not go on (the model failed for good).
    pub error: Option<String>,
}

/// What a tool call asks of the loop beyond its result.
pub enum Flow {
    Continue,
    /// `return_results` succeeded: finish the turn after this batch.
    Returned,
}

/// Most handoffs one user turn may chain, so two personas cannot bounce forever.
const MAX_HANDOFFS_PER_TURN: u32 = 12;

pub async fn run_turn(
    shared: &Arc<Shared>,
    agent: AgentId,
    cancel: CancellationToken,
) -> TurnOutcome {
    shared.events.emit(agent, EventKind::TurnStarted);
    let outcome = turn_loop(shared, agent, &cancel).await;
    shared
        .events
        .emit(agent, EventKind::TurnFinished { end: outcome.end });
    outcome
}

async fn turn_loop(
    shared: &Arc<Shared>,
    agent: AgentId,
    cancel: &CancellationToken,
) -> TurnOutcome {
    let mut iteration = 0;
    let mut handoffs = 0;
    let mut final_text = String::new();
    loop {
        let Some(setup) = shared.request_for(agent) else {
            return outcome(TurnEnd::Cancelled, final_text, None);
        };
        if iteration >= setup.max_iterations {
            let message = format!(
                "stopped after {} model calls in one turn (max_iterations); send a message to continue",
                setup.max_iterations
            );
            shared.count_error(agent);
            shared.events.emit(
                agent,
                EventKind::Error {
                    message: message.clone(),
                },
            );
            return outcome(TurnEnd::MaxIterations, final_text, None);
        }
        iteration += 1;
        if cancel.is_cancelled() {
            return interrupted(final_text);
        }

        let response = {
            let permit = tokio::select! {
                p = shared.model_slots.acquire() => p,
                _ = cancel.cancelled() => return interrupted(final_text),
            };
            let events = &shared.events;
            let progress = |p: ModelProgress| match p {
                ModelProgress::TextDelta(delta) => {
                    events.emit(agent, EventKind::TextDelta { delta })
                }
                ModelProgress::Retrying {
                    attempt,
                    max_attempts,
                    delay,
                    reason,
                } => events.emit(
                    agent,
                    EventKind::Retrying {
                        attempt,
                        max_attempts,
                        delay_ms: delay.as_millis() as u64,
                        reason,
                    },
                ),
            };
            let result = shared
                .model
                .stream_chat(&setup.request, &progress, cancel)
                .await;
            drop(permit);
            result
        };
        shared.registry.with(agent, |a| a.stats.model_calls += 1);
        let response = match response {
            Ok(r) => r,
            Err(ModelError::Cancelled) => return interrupted(final_text),
            Err(e) => {
                let message = e.to_string();
                shared.count_error(agent);
                shared.events.emit(
                    agent,
                    EventKind::Error {
                        message: message.clone(),
                    },
                );
                return outcome(TurnEnd::Error, final_text, Some(message));
            }
        };
        if let Some(usage) = response.usage {
            let cost = shared.config.cost(
                &setup.request.model,
                usage.prompt_tokens,
                usage.completion_tokens,
            );
            shared.registry.with(agent, |a| {
                a.stats.prompt_tokens += usage.prompt_tokens;
                a.stats.completion_tokens += usage.completion_tokens;
                a.stats.cost_usd += cost;
            });
            shared.events.emit(
                agent,
                EventKind::Usage {
                    model: setup.request.model.clone(),
                    prompt_tokens: usage.prompt_tokens,
                    completion_tokens: usage.completion_tokens,
                    cost_usd: cost,
                },
            );
        }
        if !response.text.trim().is_empty() {
            final_text = response.text.clone();
        }
        let calls = dedupe_ids(response.tool_calls);
        shared.push_item(
            agent,
            HistoryItem::Assistant {
                text: response.text,
                tool_calls: calls.clone(),
            },
        );
        if calls.is_empty() {
            return outcome(TurnEnd::Completed, final_text, None);
        }

        let (flow, requested) = run_tool_calls(shared, agent, &calls, cancel).await;
        // A handoff is applied after every result: a tool-calling message must be
        // followed by its results before anything else.
        let handed_off = match requested.into_iter().next() {
            Some(h) => super::session::switch_persona(shared, &h.to, &h.reason, &h.context).is_ok(),
            None => false,
        };
        if cancel.is_cancelled() {
            return interrupted(final_text);
        }
        if let Flow::Returned = flow {
            return outcome(TurnEnd::Returned, final_text, None);
        }
        if handed_off {
            handoffs += 1;
            iteration = 0;
            if handoffs > MAX_HANDOFFS_PER_TURN {
                let message = format!(
                    "stopped after {MAX_HANDOFFS_PER_TURN} handoffs in one turn; send a message to continue"
                );
                shared.events.emit(agent, EventKind::Error { message });
                return outcome(TurnEnd::MaxIterations, final_text, None);
            }
        }
    }
}

fn outcome(end: TurnEnd, final_text: String, error: Option<String>) -> TurnOutcome {
    TurnOutcome {
        end,
        final_text,
        error,
    }
}

fn interrupted(final_text: String) -> TurnOutcome {
    outcome(TurnEnd::Interrupted, final_text, None)
}

/// Some servers reuse or omit call ids; every call needs a unique one for its result.
fn dedupe_ids(mut calls: Vec<ToolCall>) -> Vec<ToolCall> {
    let mut seen = std::collections::HashSet::new();
    for (i, call) in calls.iter_mut().enumerate() {
        if call.id.is_empty() || !seen.insert(call.id.clone()) {
            call.id = format!("call_{}_{i}", uuid::Uuid::new_v4().simple());
            seen.insert(call.id.clone());
        }
    }
    calls
}

/// Runs one batch of calls: read-only neighbours together, mutating ones one by one, in
/// order. Every call gets exactly one result in history, even when interrupted.
async fn run_tool_calls(
    shared: &Arc<Shared>,
    agent: AgentId,
    calls: &[ToolCall],
    cancel: &CancellationToken,
) -> (Flow, Vec<agent_tools::Handoff>) {
    let mut flow = Flow::Continue;
    let mut handoffs = Vec::new();
    let mut handoff_target: Option<String> = None;
    let mut i = 0;
    while i < calls.len() {
        let mut j = i + 1;
        if is_read_only(shared, &calls[i].name) {
            while j < calls.len() && is_read_only(shared, &calls[j].name) {
                j += 1;
            }
        }
        let batch = &calls[i..j];
        let results = if cancel.is_cancelled() {
            batch
                .iter()
                .map(|_| CallResult::error("interrupted by the user before it ran".to_string()))
                .collect()
        } else {
            for call in batch {
                shared.events.emit(
                    agent,
                    EventKind::ToolCallBegin {
                        call_id: call.id.clone(),
                        name: call.name.clone(),
                        arguments: call.arguments.clone(),
                    },
                );
            }
            let futures = batch.iter().map(|call| async move {
                let started = Instant::now();
                let r = execute_call(shared, agent, call, cancel).await;
                (r, started.elapsed())
            });
            let timed = futures::future::join_all(futures).await;
            let mut results = Vec::with_capacity(timed.len());
            for (call, (mut result, elapsed)) in batch.iter().zip(timed) {
                // One persona takes over per response: the first handoff wins.
                if result.handoff.is_some() {
                    if let Some(first) = &handoff_target {
                        result = CallResult::error(format!(
                            "only one handoff per response: the session is already being handed to `{first}`"
                        ));
                    } else {
                        handoff_target = result.handoff.as_ref().map(|h| h.to.clone());
                    }
                }
                shared.events.emit(
                    agent,
                    EventKind::ToolCallEnd {
                        call_id: call.id.clone(),
                        name: call.name.clone(),
                        output: result.output.clone(),
                        is_error: result.is_error,
                        duration_ms: elapsed.as_millis() as u64,
                    },
                );
                results.push(result);
            }
            results
        };
        for (call, result) in batch.iter().zip(results) {
            shared.registry.with(agent, |a| {
                a.stats.tool_calls += 1;
                if result.is_error {
                    a.stats.errors += 1;
                }
            });
            shared.push_item(
                agent,
                HistoryItem::ToolResult {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    output: result.output,
                    is_error: result.is_error,
                },
            );
            if result.returned {
                flow = Flow::Returned;
            }
            if let Some(h) = result.handoff {
                handoffs.push(h);
            }
        }
        i = j;
    }
    (flow, handoffs)
}

fn is_read_only(shared: &Shared, name: &str) -> bool {
    shared
        .tools
        .get(name)
        .is_some_and(|t| t.effect() == ToolEffect::ReadOnly)
}

/// The result of one call, with what it means for the loop.
pub struct CallResult {
    pub output: String,
    pub is_error: bool,
    pub returned: bool,
    pub handoff: Option<agent_tools::Handoff>,
}

impl CallResult {
    pub fn ok(output: String) -> Self {
        Self {
            output,
            is_error: false,
            returned: false,
            handoff: None,
        }
    }

    pub fn error(output: String) -> Self {
        Self {
            output,
            is_error: true,
            returned: false,
            handoff: None,
        }
    }
}

async fn execute_call(
    shared: &Arc<Shared>,
    agent: AgentId,
    call: &ToolCall,
    cancel: &CancellationToken,
) -> CallResult {
    let Some((role, policy, allowed)) = shared
        .registry
        .with(agent, |a| (a.role.clone(), a.policy, a.tools.clone()))
    else {
        return CallResult::error("agent no longer exists".to_string());
    };
    if !allowed.iter().any(|t| t == &call.name) {
        let known =
            if shared.tools.get(&call.name).is_some() || agent_tools::is_agent_tool(&call.name) {
                format!("tool `{}` is not available to the `{role}` role", call.name)
            } else {
                format!("unknown tool `{}`", call.name)
            };
        return CallResult::error(format!("{known}. Available tools: {}.", allowed.join(", ")));
    }
    let args: Value = if call.arguments.trim().is_empty() {
        Value::Object(Default::default())
    } else {
        match serde_json::from_str(&call.arguments) {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => {
                return CallResult::error(format!(
                    "arguments must be a JSON object; you sent: {}",
                    clip(&call.arguments, 400)
                ));
            }
            Err(e) => {
                return CallResult::error(format!(
                    "arguments are not valid JSON ({e}); you sent: {}. Call `{}` again with a valid JSON object.",
                    clip(&call.arguments, 400),
                    call.name
                ));
            }
        }
    };

    if agent_tools::is_agent_tool(&call.name) {
        return agent_tools::call(shared, agent, &call.name, args, cancel).await;
    }
    let Some(tool) = shared.tools.get(&call.name) else {
        return CallResult::error(format!("unknown tool `{}`", call.name));
    };
    let ctx = ToolContext {
        agent_id: agent,
        workspace: shared.workspace.clone(),
        settings: shared.tool_settings_for(&role),
        cancel: cancel.clone(),
    };
    if tool.effect() == ToolEffect::Mutating {
        let action = match tool.describe(&ctx, &args).await {
            Ok(a) => a,
            Err(e) => return CallResult::error(e.to_string()),
        };
        if let Some(action) = action {
            let req = ApprovalRequest {
                agent_id: agent,
                role: &role,
                policy,
                tool: &call.name,
                action: &action,
            };
            if let Err(denied) = shared.approve(req, cancel).await {
                return CallResult::error(denied.0);
            }
        }
    }
    match tool.call(&ctx, args).await {
        Ok(output) => CallResult::ok(output),
        Err(ToolError::Cancelled) => CallResult::error("cancelled by the user".to_string()),
        Err(e) => CallResult::error(e.to_string()),
    }
}

pub fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes in all)", &s[..end], s.len())
}
