//! The core of a model call, below every layer: a model slot, the stream (a turn's text to
//! the front ends, every chunk a beat of the call's pulse), the call counted and its usage
//! recorded. What holds a call, shapes it, watches it or makes an overflow fit is a layer's
//! (`cx.rs`); this file names none of them.

use super::cx::{AgentCx, ModelCore};
use super::points::{Called, ModelCall, Purpose};
use crate::model::{ChatResponse, ModelError, ModelProgress, TokenUsage};
use crate::protocol::EventKind;
use async_trait::async_trait;

/// Sends a model call: the innermost of every agent's stack.
pub struct Core;

#[async_trait]
impl ModelCore for Core {
    async fn send(&self, cx: &AgentCx, call: &mut ModelCall) -> Called {
        let (session, agent) = (cx.session(), cx.id());
        let model = call.setup.request.model.clone();
        let began = std::time::Instant::now();
        let response = stream(cx, call).await;
        session.team.count_model_call(agent);
        match response {
            Ok(r) => {
                if call.purpose == Purpose::Turn {
                    session.team.note_call_time(began.elapsed());
                }
                if let Some(usage) = r.usage {
                    record_usage(cx, call, model, usage);
                }
                Called::Answer(r)
            }
            Err(ModelError::Cancelled) => Called::Interrupted,
            Err(ModelError::ContextOverflow { message, said }) => {
                if let Some(tokens) = said.window {
                    session.windows.learn(&model, tokens);
                    call.setup.window = session.windows.window(&model);
                }
                Called::Overflow { message, said }
            }
            Err(e) => Called::Failed(e.to_string()),
        }
    }
}

/// The call itself, in a model slot.
async fn stream(cx: &AgentCx, call: &ModelCall) -> Result<ChatResponse, ModelError> {
    let (session, team, agent, cancel) = (cx.session(), cx.team(), cx.id(), cx.cancel());
    let turn = call.purpose == Purpose::Turn;
    let mut permit = tokio::select! {
        p = session.model_slots.acquire() => p,
        _ = cancel.cancelled() => return Err(ModelError::Cancelled),
    };
    if turn {
        // Everything before this request (the results it carries above all) is on disk
        // before it goes out: a crash from here on never loses a result a model has seen,
        // nor runs its call again after `--continue`. One flush per request.
        team.events().on_disk().await;
        permit.sending();
    }
    let pulse = &call.pulse;
    pulse.arm();
    // The request tells the session's limit of its first byte and its retries.
    let progress = |p: ModelProgress| match p {
        ModelProgress::TextDelta(delta) => {
            permit.first_byte();
            pulse.beat();
            if turn {
                team.emit(agent, EventKind::TextDelta { delta });
            }
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
    session
        .model
        .stream_chat(&call.setup.request, &progress, cancel)
        .await
}

/// Counts the call's usage on the agent and tells the front ends; a summary's is no
/// measure of the agent's context.
fn record_usage(cx: &AgentCx, call: &ModelCall, model: String, usage: TokenUsage) {
    let (session, team, agent) = (cx.session(), cx.team(), cx.id());
    let cost = session
        .config
        .cost(&model, usage.prompt_tokens, usage.completion_tokens);
    team.add_usage(agent, usage.prompt_tokens, usage.completion_tokens, cost);
    let (context_tokens, context_window) = match call.purpose {
        Purpose::Turn => (
            usage.prompt_tokens + usage.completion_tokens,
            call.setup.window,
        ),
        Purpose::Summary => (0, 0),
    };
    // A server that reports no prompt tokens has not counted: keep estimating.
    if call.purpose == Purpose::Turn && usage.prompt_tokens > 0 {
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
            context_window,
            cached_tokens: usage.cached_tokens,
        },
    );
}
