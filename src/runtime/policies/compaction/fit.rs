//! Making a request fit: before it is sent (when its estimate passes `[context]
//! compact_at` of the window), and after the server refused it as too long
//! ([`after_overflow`]); the compaction layer does both, and sends the summaries down the
//! rest of the agent's stack ([`ViaNext`]); `/compact` sends its own down the whole
//! stack ([`ViaStack`]).
//!
//! After a refusal the server's count is the truth: where it counted the request as more
//! than squad's estimate, every budget is scaled by that (and stays scaled for the model,
//! for the rest of the session), and the request is made to fit harder each time: a
//! summary of the older part, then of all but the latest turn, then every big tool output
//! cut. Only when nothing is left to cut does it give up, naming what alone does not fit.

use super::CompactionPolicy;
use super::compactor::{CompactError, Compactor, Summarize, Trigger, largest_part};
use crate::context::estimate_item;
use crate::model::{ChatRequest, ChatResponse, Overflow};
use crate::runtime::cx::{AgentCx, ModelNext};
use crate::runtime::model_call;
use crate::runtime::points::{Called, ModelCall, Purpose};
use crate::runtime::policies::hooks::layer::caller;
use crate::runtime::request::RequestSetup;
use async_trait::async_trait;

/// A summary request sent down the layers below the one asking (the compaction layer's).
pub struct ViaNext<'a> {
    pub cx: &'a AgentCx,
    pub next: ModelNext<'a>,
}

/// A summary request sent down the agent's whole stack (`/compact`, between turns); a
/// call held (the team paused) is sent again once it goes on.
pub struct ViaStack<'a>(pub &'a AgentCx);

#[async_trait]
impl Summarize for ViaNext<'_> {
    async fn summarize(&self, request: ChatRequest) -> Result<ChatResponse, CompactError> {
        let mut call = summary(request);
        answer(self.next.run(self.cx, &mut call).await)
    }
}

#[async_trait]
impl Summarize for ViaStack<'_> {
    async fn summarize(&self, request: ChatRequest) -> Result<ChatResponse, CompactError> {
        let mut call = summary(request);
        loop {
            match self.0.model_call(&mut call, &model_call::Core).await {
                Called::Again => continue,
                called => return answer(called),
            }
        }
    }
}

fn summary(request: ChatRequest) -> ModelCall {
    let setup = RequestSetup {
        request,
        max_iterations: 1,
        fixed_tokens: 0,
        window: 0,
    };
    ModelCall::new(setup, Purpose::Summary)
}

fn answer(called: Called) -> Result<ChatResponse, CompactError> {
    match called {
        Called::Answer(r) => Ok(r),
        Called::Interrupted | Called::Again => Err(CompactError::Cancelled),
        Called::Failed(why) | Called::Stopped(why) => Err(CompactError::Failed(why)),
        Called::Overflow { message, .. } => Err(CompactError::Failed(format!(
            "the conversation is too long for the model's context window: {message}"
        ))),
    }
}

/// The most squad's estimate is scaled by after a server's count.
const MAX_SCALE: f64 = 4.0;

/// After the server refused a request as too long.
#[derive(Debug, PartialEq, Eq)]
pub enum Recovery {
    /// The request was made to fit: send it again.
    Retry,
    /// Why it could not be.
    GiveUp(String),
    Interrupted,
}

/// How many times squad's estimate the server has counted `model`'s requests (1: never more).
pub fn scale_for(compactor: &Compactor, model: &str) -> f64 {
    crate::sync::lock(&compactor.scales)
        .get(model)
        .copied()
        .unwrap_or(1.0)
}

/// Learns from the server's count of `req` how far squad's estimate is off for its model;
/// returns the scale to plan with (1 when the estimate was not low).
fn learn_scale(compactor: &Compactor, req: &RequestSetup, said: &Overflow) -> f64 {
    let estimate = req.fixed_tokens + req.request.history.iter().map(estimate_item).sum::<u64>();
    let mut scales = crate::sync::lock(&compactor.scales);
    let known = scales.get(&req.request.model).copied().unwrap_or(1.0);
    let now = match said.prompt_tokens {
        Some(counted) if estimate > 0 && counted > estimate => counted as f64 / estimate as f64,
        _ => 1.0,
    };
    // A server counting far more than any tokenizer differs by is more likely wrong about
    // its window than squad about the text: at most four times.
    let scale = known.max(now).min(MAX_SCALE);
    scales.insert(req.request.model.clone(), scale);
    scale
}

/// Compacts the history `req` was built from, the summary asked through `ask`, then points
/// `req` at the new one. The user's `pre_compact` hooks hear of it first.
pub async fn compact(
    p: &CompactionPolicy,
    cx: &AgentCx,
    req: &mut RequestSetup,
    (trigger, scale): (Trigger, f64),
    ask: &dyn Summarize,
) -> Result<u64, CompactError> {
    p.hooks
        .before_compact(&caller(cx), trigger == Trigger::User)
        .await;
    // The compaction gets the request's own copy of the history's handle, so the history is
    // not shared (and copied) while it is replaced.
    let setup = RequestSetup {
        request: crate::model::ChatRequest {
            model: req.request.model.clone(),
            system_prompt: req.request.system_prompt.clone(),
            history: std::mem::take(&mut req.request.history),
            tools: req.request.tools.clone(),
        },
        ..*req
    };
    let done = p
        .compactor
        .compact(cx.team(), cx.id(), setup, trigger, scale, ask)
        .await;
    refresh(cx, req)?;
    done
}

/// Points `req` at the agent's history as it is now.
fn refresh(cx: &AgentCx, req: &mut RequestSetup) -> Result<(), CompactError> {
    let view = cx.team().request_view(cx.id()).ok_or(CompactError::Gone)?;
    req.request.history = view.history;
    Ok(())
}

/// The server refused `req` as too long (`said`: what it said of the window and the
/// request's size): made to fit, harder each time.
pub async fn after_overflow(
    p: &CompactionPolicy,
    cx: &AgentCx,
    req: &mut RequestSetup,
    said: &Overflow,
    next: ModelNext<'_>,
) -> Recovery {
    let compactor = &p.compactor;
    let ask = ViaNext { cx, next };
    let scale = learn_scale(compactor, req, said);
    // A summary of the older part as squad estimates it, then as the server counts, then
    // of all but the latest turn.
    let rounds = [
        (Trigger::Window, 1.0),
        (Trigger::Window, scale),
        (Trigger::User, scale),
    ];
    for (trigger, scale) in rounds {
        match compact(p, cx, req, (trigger, scale), &ask).await {
            Ok(_) => return Recovery::Retry,
            Err(CompactError::NothingToCompact) => {}
            Err(CompactError::Cancelled) => return Recovery::Interrupted,
            Err(e) => return Recovery::GiveUp(format!("and compacting it failed ({e})")),
        }
    }
    // Nothing left to summarize: cut what is big.
    if compactor
        .cut_outputs(cx.team(), cx.id(), req, scale)
        .is_some()
    {
        return match refresh(cx, req) {
            Ok(()) => Recovery::Retry,
            Err(e) => Recovery::GiveUp(e.to_string()),
        };
    }
    Recovery::GiveUp(format!(
        "and nothing is left to compact: {}",
        largest_part(req)
    ))
}
