//! One turn of one agent: model call → tool calls → results → next call, until the model
//! answers without tool calls, returns its results, or a limit or interrupt stops it.
//! Urgent notices in its inbox are handed over before a model call.

use super::agent_tools::Handoff;
use super::calls::{BatchEnd, run_tool_calls};
use super::compaction::{self, CompactError, Trigger};
use super::engine::Engine;
use super::inbox;
use super::layers::Gate;
use super::persona::switch_persona;
use super::stall::{self, Pulse};
use crate::model::{ModelError, ModelProgress};
use crate::protocol::{AgentId, EventKind, HistoryItem, ToolCall, TurnEnd};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// How a turn ended, and what the agent said last.
pub struct TurnOutcome {
    pub end: TurnEnd,
    pub final_text: String,
    /// Set when the turn could not go on (the model failed for good).
    pub error: Option<String>,
}

/// Most handoffs one user turn may chain, so two personas cannot bounce forever.
const MAX_HANDOFFS_PER_TURN: u32 = 12;

pub async fn run_turn(
    engine: &Arc<Engine>,
    agent: AgentId,
    cancel: CancellationToken,
) -> TurnOutcome {
    engine.team.emit(agent, EventKind::TurnStarted);
    let outcome = turn_loop(engine, agent, &cancel).await;
    engine
        .team
        .emit(agent, EventKind::TurnFinished { end: outcome.end });
    outcome
}

async fn turn_loop(
    engine: &Arc<Engine>,
    agent: AgentId,
    cancel: &CancellationToken,
) -> TurnOutcome {
    let team = &engine.team;
    let mut iteration = 0;
    let mut handoffs = 0;
    let mut final_text = String::new();
    // Set once the call overflowed the window and was compacted: a second overflow of the
    // same call is an error, never another round.
    let mut overflowed = false;
    // A compaction that failed (not one with nothing to do) is not tried again this turn:
    // each try is a model call.
    let mut compaction_failed = false;
    // Repeats are counted per turn: a new message is a new start.
    engine.turn_start(agent);
    loop {
        // The layers first: held while the team is paused, stopped by a spent budget.
        match engine.before_model_call(agent, cancel).await {
            Gate::Go => {}
            Gate::Hold => continue,
            Gate::Interrupted => return interrupted(final_text),
            Gate::Stop(reason) => return outcome(TurnEnd::Error, final_text, Some(reason)),
        }
        // An urgent notice (a worker's question, a critical notice) reaches a running agent
        // at its next model call, with whatever else waits in its inbox; workers' outcomes
        // stay with the fan-in (wait_for_agents, or the end of the turn).
        if team.has_urgent_notice(agent)
            && let Some(batch) = inbox::join(team.take_notices(agent))
        {
            team.push_item(agent, HistoryItem::notice(batch));
        }
        // Messages sent to it during the turn (the user's, or its supervisor's), in order.
        for text in team.take_steering(agent) {
            team.push_item(agent, HistoryItem::user(text));
        }
        let Some(mut setup) = engine.request_for(agent) else {
            return outcome(TurnEnd::Cancelled, final_text, None);
        };
        if iteration >= setup.max_iterations {
            let message = format!(
                "stopped after {} model calls in one turn (max_iterations); send a message to continue",
                setup.max_iterations
            );
            team.count_error(agent);
            team.emit(agent, EventKind::Error { message });
            return outcome(TurnEnd::MaxIterations, final_text, None);
        }
        iteration += 1;
        if cancel.is_cancelled() {
            return interrupted(final_text);
        }
        if !overflowed && !compaction_failed && compaction::due(engine, agent, &setup).is_some() {
            drop(setup);
            match compaction::compact(engine, agent, Trigger::Window, cancel).await {
                Ok(_) | Err(CompactError::NothingToCompact) => {}
                Err(CompactError::Cancelled) => return interrupted(final_text),
                Err(e) => {
                    compaction_failed = true;
                    team.emit(
                        agent,
                        EventKind::Error {
                            message: format!("could not compact the conversation: {e}"),
                        },
                    );
                }
            }
            let Some(again) = engine.request_for(agent) else {
                return outcome(TurnEnd::Cancelled, final_text, None);
            };
            setup = again;
        }

        let model = setup.request.model.clone();
        let window = setup.window;
        let response = {
            let permit = tokio::select! {
                p = engine.model_slots.acquire() => p,
                _ = cancel.cancelled() => return interrupted(final_text),
            };
            let pulse = Pulse::default();
            let progress = |p: ModelProgress| match p {
                ModelProgress::TextDelta(delta) => {
                    pulse.beat();
                    team.emit(agent, EventKind::TextDelta { delta });
                }
                ModelProgress::Received => pulse.beat(),
                ModelProgress::Retrying {
                    attempt,
                    max_attempts,
                    delay,
                    reason,
                } => {
                    pulse.beat();
                    team.emit(
                        agent,
                        EventKind::Retrying {
                            attempt,
                            max_attempts,
                            delay_ms: delay.as_millis() as u64,
                            reason,
                        },
                    );
                }
            };
            let result = stall::watch(
                team,
                agent,
                engine.config.guards.stall_after(),
                &pulse,
                || "model call".to_string(),
                engine.model.stream_chat(&setup.request, &progress, cancel),
            )
            .await;
            drop(permit);
            result
        };
        // The request shares the agent's history: let it go before the history grows, so
        // appending does not copy it.
        drop(setup);
        team.count_model_call(agent);
        let response = match response {
            Ok(r) => r,
            Err(ModelError::Cancelled) => return interrupted(final_text),
            Err(ModelError::ContextOverflow {
                message,
                window: said,
            }) => {
                if let Some(tokens) = said {
                    engine.windows.learn(&model, tokens);
                }
                let recovered = if overflowed {
                    Err(CompactError::NothingToCompact)
                } else {
                    compaction::compact(engine, agent, Trigger::Window, cancel).await
                };
                let why = match recovered {
                    Ok(_) => {
                        // The same call again, on the compacted history.
                        overflowed = true;
                        iteration -= 1;
                        continue;
                    }
                    Err(CompactError::Cancelled) => return interrupted(final_text),
                    Err(_) if overflowed => "even after compacting it".to_string(),
                    Err(e) => format!("and compacting it failed ({e})"),
                };
                let window = engine.windows.window(&model);
                let message = format!(
                    "the conversation does not fit the context window of {model}                      ({window} tokens) {why}. The server said: {message}. Send a shorter                      message, /compact, or start over with /new"
                );
                team.count_error(agent);
                team.emit(
                    agent,
                    EventKind::Error {
                        message: message.clone(),
                    },
                );
                return outcome(TurnEnd::Error, final_text, Some(message));
            }
            Err(e) => {
                let message = e.to_string();
                team.count_error(agent);
                team.emit(
                    agent,
                    EventKind::Error {
                        message: message.clone(),
                    },
                );
                return outcome(TurnEnd::Error, final_text, Some(message));
            }
        };
        overflowed = false;
        if let Some(usage) = response.usage {
            let cost = engine
                .config
                .cost(&model, usage.prompt_tokens, usage.completion_tokens);
            team.add_usage(agent, usage.prompt_tokens, usage.completion_tokens, cost);
            let context_tokens = usage.prompt_tokens + usage.completion_tokens;
            // A server that reports no prompt tokens has not counted: keep estimating.
            if usage.prompt_tokens > 0 {
                team.record_context(agent, context_tokens);
            }
            team.emit(
                agent,
                EventKind::Usage {
                    model,
                    prompt_tokens: usage.prompt_tokens,
                    completion_tokens: usage.completion_tokens,
                    cost_usd: cost,
                    context_tokens,
                    context_window: window,
                },
            );
            engine.after_usage(agent);
        }
        if !response.text.trim().is_empty() {
            final_text = response.text.clone();
        }
        let calls = dedupe_ids(response.tool_calls);
        team.push_item(
            agent,
            HistoryItem::Assistant {
                text: response.text,
                tool_calls: calls.clone(),
            },
        );
        if calls.is_empty() {
            return outcome(TurnEnd::Completed, final_text, None);
        }

        let batch = run_tool_calls(engine, agent, &calls, cancel).await;
        for correction in batch.corrections {
            team.push_item(agent, HistoryItem::notice(correction));
        }
        // A handoff is applied after every result: a tool-calling message must be
        // followed by its results before anything else.
        let handed_off = match batch.handoff {
            Some(Handoff {
                to,
                reason,
                context,
            }) => switch_persona(engine, &to, &reason, &context).is_ok(),
            None => false,
        };
        if cancel.is_cancelled() {
            return interrupted(final_text);
        }
        match batch.end {
            BatchEnd::Returned => return outcome(TurnEnd::Returned, final_text, None),
            // The loop guard (or a fatal call): the user sees why, the supervisor is told by
            // the failure.
            BatchEnd::Fatal(message) | BatchEnd::Looping(message) => {
                team.count_error(agent);
                team.emit(
                    agent,
                    EventKind::Error {
                        message: message.clone(),
                    },
                );
                return outcome(TurnEnd::Error, final_text, Some(message));
            }
            BatchEnd::Continue => {}
        }
        if handed_off {
            handoffs += 1;
            iteration = 0;
            if handoffs > MAX_HANDOFFS_PER_TURN {
                let message = format!(
                    "stopped after {MAX_HANDOFFS_PER_TURN} handoffs in one turn; send a message to continue"
                );
                team.emit(agent, EventKind::Error { message });
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
