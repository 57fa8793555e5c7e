//! One model call of a turn: a model slot, the stream (its text to the front ends, its
//! progress to the layers watching it), the usage counted, and an overflow the layers
//! make fit sent again once.

use super::cx::AgentCx;
use super::points::Waiting;
use super::policies::compaction::fit::{Recovery, after_overflow};
use super::policies::stall::{Pulse, watch};
use super::request::RequestSetup;
use crate::model::{ChatResponse, ModelError, ModelProgress, TokenUsage};
use crate::protocol::EventKind;

/// Most times one call is made to fit after the server refused it as too long (each time
/// harder: a summary, the latest turn only, big outputs cut).
const MAX_RECOVERIES: u32 = 3;

/// How a model call ended.
pub enum Called {
    Answer(ChatResponse),
    Interrupted,
    /// The call failed for good, with the reason the user reads.
    Failed(String),
}

/// Sends `setup` for `cx`'s agent. The request shares the agent's history: it is let go of
/// before the answer is appended, so appending does not copy it.
pub async fn call_model(cx: &AgentCx, mut setup: RequestSetup) -> Called {
    let (session, agent) = (cx.session(), cx.id());
    // Times this call overflowed the window and was made to fit: each round is a model
    // call of its own, so they are bounded.
    let mut recoveries = 0;
    loop {
        let model = setup.request.model.clone();
        let began = std::time::Instant::now();
        let response = stream(cx, &setup).await;
        session.team.count_model_call(agent);
        let (message, said) = match response {
            Ok(r) => {
                session.team.note_call_time(began.elapsed());
                if let Some(usage) = r.usage {
                    record_usage(cx, model, setup.window, usage);
                }
                return Called::Answer(r);
            }
            Err(ModelError::Cancelled) => return Called::Interrupted,
            Err(ModelError::ContextOverflow { message, said }) => (message, said),
            Err(e) => return Called::Failed(e.to_string()),
        };
        if let Some(tokens) = said.window {
            session.windows.learn(&model, tokens);
            setup.window = session.windows.window(&model);
        }
        let why = if recoveries == MAX_RECOVERIES {
            "even after compacting it".to_string()
        } else {
            match after_overflow(cx, &mut setup, &said).await {
                Recovery::Retry => {
                    recoveries += 1;
                    super::policies::budget::after_usage(&session.team, &session.session_limits);
                    continue;
                }
                Recovery::Interrupted => return Called::Interrupted,
                Recovery::GiveUp(why) => why,
            }
        };
        let window = session.windows.window(&model);
        return Called::Failed(format!(
            "the conversation does not fit the context window of {model} ({window} tokens) \
             {why}. The server said: {message}. Send a shorter message, /compact, or start \
             over with /new"
        ));
    }
}

/// The call itself, in a model slot, watched by the layers.
async fn stream(cx: &AgentCx, setup: &RequestSetup) -> Result<ChatResponse, ModelError> {
    let (session, team, agent, cancel) = (cx.session(), cx.team(), cx.id(), cx.cancel());
    let mut permit = tokio::select! {
        p = session.model_slots.acquire() => p,
        _ = cancel.cancelled() => return Err(ModelError::Cancelled),
    };
    // Everything before this request (the results it carries above all) is on disk
    // before it goes out: a crash from here on never loses a result a model has seen,
    // nor runs its call again after `--continue`. One flush per request.
    team.events().on_disk().await;
    permit.sending();
    let pulse = Pulse::default();
    // The request tells the session's limit of its first byte and its retries.
    let progress = |p: ModelProgress| match p {
        ModelProgress::TextDelta(delta) => {
            permit.first_byte();
            pulse.beat();
            team.emit(agent, EventKind::TextDelta { delta });
        }
        ModelProgress::Received => {
            permit.first_byte();
            pulse.beat();
        }
        retry @ ModelProgress::Retrying { overloaded, .. } => {
            permit.retrying(overloaded);
            pulse.beat();
            if let Some(event) = retry.retry_event() {
                team.emit(agent, event);
            }
        }
    };
    let call = session.model.stream_chat(&setup.request, &progress, cancel);
    let after = session.config.guards.stall_after();
    watch(team, agent, after, &Waiting::ModelCall, &pulse, call).await
}

/// Counts the call's usage on the agent and tells the front ends and the layers.
fn record_usage(cx: &AgentCx, model: String, window: u64, usage: TokenUsage) {
    let (session, team, agent) = (cx.session(), cx.team(), cx.id());
    let cost = session
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
            cached_tokens: usage.cached_tokens,
        },
    );
    super::policies::budget::after_usage(team, &session.session_limits);
}
