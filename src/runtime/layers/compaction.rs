//! Compaction as a layer: a request whose estimate passes `[context] compact_at` of the
//! window is compacted before it is sent, and a request the server refuses as too long is
//! made to fit and sent again. A compaction that failed (not one with nothing to do) is not
//! tried again in the same turn: each try is a model call.
//!
//! After a refusal the server's count is the truth: where it counted the request as more
//! than squad's estimate, every budget is scaled by that (and stays scaled for the model,
//! for the rest of the session), and the request is made to fit harder each time: a
//! summary of the older part, then of all but the latest turn, then every big tool output
//! cut. Only when nothing is left to cut does it give up, naming what alone does not fit.

use super::{Layer, Recovery, Scope, Shape};
use crate::context::estimate_item;
use crate::model::Overflow;
use crate::protocol::{AgentId, EventKind};
use crate::runtime::compaction::{CompactError, Compactor, Trigger, largest_part};
use crate::runtime::request::RequestSetup;
use async_trait::async_trait;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

/// The most squad's estimate is scaled by after a server's count.
const MAX_SCALE: f64 = 4.0;

pub struct CompactionLayer {
    compactor: Arc<Compactor>,
    /// Told before each compaction (the user's `pre_compact` hooks).
    told: Arc<dyn Layer>,
    /// Agents whose compaction failed this turn.
    failed: Mutex<HashSet<AgentId>>,
    /// By model: how many times squad's estimate the server counted a refused request.
    scale: Mutex<HashMap<String, f64>>,
}

impl CompactionLayer {
    pub fn new(compactor: Arc<Compactor>, told: Arc<dyn Layer>) -> Self {
        Self {
            compactor,
            told,
            failed: Mutex::new(HashSet::new()),
            scale: Mutex::new(HashMap::new()),
        }
    }

    /// Learns from the server's count of `req` how far squad's estimate is off for its
    /// model; returns the scale to plan with (1 when the estimate was not low).
    fn learn_scale(&self, req: &RequestSetup, said: &Overflow) -> f64 {
        let estimate =
            req.fixed_tokens + req.request.history.iter().map(estimate_item).sum::<u64>();
        let mut scales = crate::sync::lock(&self.scale);
        let known = scales.get(&req.request.model).copied().unwrap_or(1.0);
        let now = match said.prompt_tokens {
            Some(counted) if estimate > 0 && counted > estimate => counted as f64 / estimate as f64,
            _ => 1.0,
        };
        // A server counting far more than any tokenizer differs by is more likely wrong
        // about its window than squad about the text: at most four times.
        let scale = known.max(now).min(MAX_SCALE);
        scales.insert(req.request.model.clone(), scale);
        scale
    }

    /// Compacts the history `req` was built from, then points `req` at the new one.
    async fn compact(
        &self,
        cx: &Scope<'_>,
        req: &mut RequestSetup,
        trigger: Trigger,
        scale: f64,
    ) -> Result<u64, CompactError> {
        self.told.before_compact(cx, trigger == Trigger::User).await;
        // The compaction gets the request's own copy of the history's handle, so the history
        // is not shared (and copied) while it is replaced.
        let setup = RequestSetup {
            request: crate::model::ChatRequest {
                model: req.request.model.clone(),
                system_prompt: req.request.system_prompt.clone(),
                history: std::mem::take(&mut req.request.history),
                tools: req.request.tools.clone(),
            },
            ..*req
        };
        let done = self
            .compactor
            .compact_scaled(cx.team, cx.agent, setup, trigger, scale, cx.cancel)
            .await;
        self.refresh(cx, req)?;
        done
    }

    /// Points `req` at the agent's history as it is now.
    fn refresh(&self, cx: &Scope<'_>, req: &mut RequestSetup) -> Result<(), CompactError> {
        let view = cx.team.request_view(cx.agent).ok_or(CompactError::Gone)?;
        req.request.history = view.history;
        Ok(())
    }
}

#[async_trait]
impl Layer for CompactionLayer {
    fn turn_start(&self, cx: &Scope<'_>) {
        crate::sync::lock(&self.failed).remove(&cx.agent);
    }

    async fn shape_request(&self, cx: &Scope<'_>, req: &mut RequestSetup) -> Shape {
        if crate::sync::lock(&self.failed).contains(&cx.agent)
            || self.compactor.due(cx.team, cx.agent, req).is_none()
        {
            return Shape::Kept;
        }
        let scale = crate::sync::lock(&self.scale)
            .get(&req.request.model)
            .copied()
            .unwrap_or(1.0);
        match self.compact(cx, req, Trigger::Window, scale).await {
            Ok(_) => Shape::Changed,
            Err(CompactError::NothingToCompact) => Shape::Kept,
            Err(CompactError::Cancelled) => Shape::Interrupted,
            Err(CompactError::Gone) => Shape::Stop("the agent no longer exists".to_string()),
            Err(e) => {
                crate::sync::lock(&self.failed).insert(cx.agent);
                cx.team.emit(
                    cx.agent,
                    EventKind::Error {
                        message: format!("could not compact the conversation: {e}"),
                    },
                );
                Shape::Kept
            }
        }
    }

    async fn overflow(&self, cx: &Scope<'_>, req: &mut RequestSetup, said: &Overflow) -> Recovery {
        let scale = self.learn_scale(req, said);
        // Harder each time: a summary of the older part as squad estimates it, then as the
        // server counts, then of all but the latest turn.
        let rounds = [
            (Trigger::Window, 1.0),
            (Trigger::Window, scale),
            (Trigger::User, scale),
        ];
        for (trigger, scale) in rounds {
            match self.compact(cx, req, trigger, scale).await {
                Ok(_) => return Recovery::Retry,
                Err(CompactError::NothingToCompact) => {}
                Err(CompactError::Cancelled) => return Recovery::Interrupted,
                Err(e) => return Recovery::GiveUp(format!("and compacting it failed ({e})")),
            }
        }
        // Nothing left to summarize: cut what is big.
        if self
            .compactor
            .cut_outputs(cx.team, cx.agent, req, scale)
            .is_some()
        {
            return match self.refresh(cx, req) {
                Ok(()) => Recovery::Retry,
                Err(e) => Recovery::GiveUp(e.to_string()),
            };
        }
        Recovery::GiveUp(format!(
            "and nothing is left to compact: {}",
            largest_part(req)
        ))
    }
}
