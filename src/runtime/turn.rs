//! One turn of one agent: model call → tool calls → results → next call, until the model
//! answers without tool calls, returns its results, or a limit or interrupt stops it.
//! Urgent notices in its inbox are handed over before a model call.

use super::agent_tools::return_results::RETURN_RESULTS;
use super::calls::{BatchEnd, run_tool_calls};
use super::cx::AgentCx;
use super::inbox;
use super::model_call;
use super::persona::switch_persona;
use super::points::{Called, ModelCall, Moment, Purpose};
use super::request::RequestSetup;
use super::team::Team;
use crate::model::text_calls;
use crate::protocol::{AgentId, EventKind, HistoryItem, ToolCall, TurnEnd};
use std::sync::Arc;

/// How a turn ended, and what the agent said last.
pub struct TurnOutcome {
    pub end: TurnEnd,
    pub final_text: String,
    /// Set when the turn could not go on (the model failed for good).
    pub error: Option<String>,
}

/// Most handoffs one user turn may chain: a hard cap against spend, since each persona's
/// calls are counted afresh. The seeds' design chain takes four; personas handing the same
/// thing back and forth are stopped long before by the loop guard (the same call, the same
/// answer) and the team's progress guard.
const MAX_HANDOFFS_PER_TURN: u32 = 32;

/// Runs a turn of `cx`'s agent, stopped by `cx`'s token (the turn's).
pub async fn run_turn(cx: &AgentCx) -> TurnOutcome {
    cx.team().emit(cx.id(), EventKind::TurnStarted);
    let outcome = turn_loop(cx).await;
    cx.team()
        .emit(cx.id(), EventKind::TurnFinished { end: outcome.end });
    outcome
}

/// What a turn has come to so far.
#[derive(Default)]
struct Course {
    /// Model calls since the turn (or the last handoff) began.
    iteration: u32,
    handoffs: u32,
    /// What the agent said last.
    final_text: String,
}

/// How a step of the turn ends: on to the next step, round the loop again, or the turn's end.
enum Step<T> {
    Go(T),
    Again,
    End(TurnOutcome),
}

async fn turn_loop(cx: &AgentCx) -> TurnOutcome {
    let mut course = Course::default();
    cx.hear(Moment::TurnStart).await;
    loop {
        let setup = match next_request(cx, &mut course) {
            Step::Go(setup) => setup,
            Step::Again => continue,
            Step::End(outcome) => return outcome,
        };
        // The tools the request went with, as the layers left them (the answer layer's
        // request without tools offers none, so no call written as text is run).
        let (response, offered) = match ask_model(cx, &mut course, setup).await {
            Step::Go(sent) => sent,
            Step::Again => continue,
            Step::End(outcome) => return outcome,
        };
        let calls = match record_reply(cx, &mut course, response, &offered) {
            Step::Go(calls) => calls,
            Step::Again => continue,
            Step::End(outcome) => return outcome,
        };
        // The reply that holds the calls is on disk before any of them starts: after a
        // crash, `--continue` finds each call that may have run and names it to the model
        // as cut off, instead of asking it again for a call already made (issue 48).
        cx.team().events().on_disk().await;
        if let Step::End(outcome) = run_calls(cx, &mut course, &calls).await {
            return outcome;
        }
    }
}

/// The next request, built from the agent's history once urgent notices and steering are
/// handed over; the iteration cap ends the turn.
fn next_request(cx: &AgentCx, course: &mut Course) -> Step<RequestSetup> {
    let (session, team, agent) = (cx.session(), cx.team(), cx.id());
    let mut text = || std::mem::take(&mut course.final_text);
    hand_over_inbox(team, agent);
    let Some(setup) = session.request_for(agent) else {
        return Step::End(outcome(TurnEnd::Cancelled, text(), None));
    };
    if course.iteration >= setup.max_iterations {
        return Step::End(too_many_calls(team, agent, setup.max_iterations, text()));
    }
    if cx.cancel().is_cancelled() {
        return Step::End(interrupted(text()));
    }
    Step::Go(setup)
}

/// The request passed down the agent's layers to the model; a layer that held it has it
/// built again.
async fn ask_model(
    cx: &AgentCx,
    course: &mut Course,
    setup: RequestSetup,
) -> Step<(crate::model::ChatResponse, Arc<[crate::model::ToolSpec]>)> {
    let mut call = ModelCall::new(setup, Purpose::Turn);
    let final_text = std::mem::take(&mut course.final_text);
    let called = cx.model_call(&mut call, &model_call::Core).await;
    let offered = call.setup.request.tools.clone();
    // The request shares the agent's history: let go of it before the answer is appended,
    // so appending does not copy it.
    drop(call);
    let (team, agent) = (cx.team(), cx.id());
    match called {
        Called::Answer(r) => {
            course.iteration += 1;
            course.final_text = final_text;
            Step::Go((r, offered))
        }
        Called::Again => {
            course.final_text = final_text;
            Step::Again
        }
        Called::Interrupted => Step::End(interrupted(final_text)),
        Called::Stopped(why) => Step::End(outcome(TurnEnd::Error, final_text, Some(why))),
        Called::Failed(why) => Step::End(failed(team, agent, final_text, why)),
        Called::Overflow { message, .. } => {
            let why = format!("the conversation does not fit the model's window: {message}");
            Step::End(failed(team, agent, final_text, why))
        }
    }
}

/// Puts the model's reply in the history (calls written as text, for a model that gets
/// help, as the calls they are) and returns its calls; a reply without calls ends the turn.
fn record_reply(
    cx: &AgentCx,
    course: &mut Course,
    mut response: crate::model::ChatResponse,
    offered: &[crate::model::ToolSpec],
) -> Step<Vec<ToolCall>> {
    if response.tool_calls.is_empty() && !offered.is_empty() && helps(cx) {
        let names: Vec<&str> = offered.iter().map(|t| t.name.as_str()).collect();
        // The tool whose arguments are a result, when this agent reports one.
        let result_tool = names.iter().copied().find(|n| *n == RETURN_RESULTS);
        if let Some(calls) = text_calls::parse(&response.text, &names, result_tool) {
            // The calls are what it said: its history holds them once, as calls.
            response.tool_calls = calls;
            response.text.clear();
        }
    }
    if !response.text.trim().is_empty() {
        course.final_text = response.text.clone();
    }
    let cut_off = response.finish_reason.as_deref() == Some("length");
    let calls = dedupe_ids(response.tool_calls);
    let item = HistoryItem::Assistant {
        text: response.text,
        tool_calls: calls.clone(),
        reasoning: response.reasoning,
    };
    cx.team().push_item(cx.id(), item);
    if !calls.is_empty() {
        return Step::Go(calls);
    }
    let end = if cut_off {
        TurnEnd::MaxTokens
    } else {
        TurnEnd::Completed
    };
    Step::End(outcome(end, std::mem::take(&mut course.final_text), None))
}

/// Runs the reply's calls, then what they mean for the turn: corrections, a handoff
/// (applied after every result: a tool-calling message must be followed by its results
/// before anything else), its end.
async fn run_calls(cx: &AgentCx, course: &mut Course, calls: &[ToolCall]) -> Step<()> {
    let (team, agent) = (cx.team(), cx.id());
    let batch = run_tool_calls(cx, calls).await;
    for correction in batch.corrections {
        team.push_item(agent, HistoryItem::notice(correction));
    }
    let handed_off = (batch.handoff)
        .is_some_and(|h| switch_persona(cx.session(), &h.to, &h.reason, &h.context).is_ok());
    let mut text = || std::mem::take(&mut course.final_text);
    if cx.cancel().is_cancelled() {
        return Step::End(interrupted(text()));
    }
    match batch.end {
        BatchEnd::Returned => return Step::End(outcome(TurnEnd::Returned, text(), None)),
        // The loop guard (or a fatal call): the user sees why, the supervisor is told by
        // the failure.
        BatchEnd::Fatal(why) | BatchEnd::Looping(why) => {
            return Step::End(failed(team, agent, text(), why));
        }
        BatchEnd::Continue => {}
    }
    if handed_off {
        course.handoffs += 1;
        course.iteration = 0;
        if course.handoffs > MAX_HANDOFFS_PER_TURN {
            let message = format!(
                "stopped after {MAX_HANDOFFS_PER_TURN} handoffs in one turn; send a message to continue"
            );
            team.emit(agent, EventKind::Error { message });
            return Step::End(outcome(TurnEnd::MaxIterations, text(), None));
        }
    }
    Step::Go(())
}

/// Whether `agent`'s model gets squad's help for weak models (`assist`).
fn helps(cx: &AgentCx) -> bool {
    (cx.session().config).assists(cx.team().model(cx.id()).as_deref())
}

/// An urgent notice (a worker's question, a critical notice) reaches a running agent at
/// its next model call, with whatever else waits in its inbox; workers' outcomes stay with
/// the fan-in (wait_for_agents, or the end of the turn). Then the messages sent to it
/// during the turn (the user's, or its supervisor's), in order, and its teammates'.
fn hand_over_inbox(team: &Team, agent: AgentId) {
    if team.has_urgent_notice(agent)
        && let Some(batch) = inbox::join(team.take_notices(agent))
    {
        team.push_item(agent, HistoryItem::notice(batch));
    }
    for text in team.take_steering(agent) {
        team.push_item(agent, HistoryItem::user(text));
    }
    team.take_mail(agent);
}

fn too_many_calls(team: &Team, agent: AgentId, max: u32, final_text: String) -> TurnOutcome {
    let message = format!(
        "stopped after {max} model calls in one turn (max_iterations); send a message to continue"
    );
    team.count_error(agent);
    team.emit(agent, EventKind::Error { message });
    outcome(TurnEnd::MaxIterations, final_text, None)
}

/// The turn cannot go on: the user sees why, and the outcome carries it.
fn failed(team: &Team, agent: AgentId, final_text: String, message: String) -> TurnOutcome {
    team.count_error(agent);
    team.emit(
        agent,
        EventKind::Error {
            message: message.clone(),
        },
    );
    outcome(TurnEnd::Error, final_text, Some(message))
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
