//! Compaction in each agent's life, around each of its model calls: a request whose
//! estimate passes `[context] compact_at` of the window is compacted before it is sent,
//! and a request the server refused as too long is made to fit and sent again (each time
//! harder, three times at most). The summary requests go down the rest of the agent's
//! stack like any model call. A compaction that failed before a call (not one with nothing
//! to do) is not tried again in the same turn: each try is a model call.

use super::CompactionPolicy;
use super::compactor::{CompactError, Trigger};
use super::fit::{Recovery, ViaNext, after_overflow, compact, scale_for};
use crate::protocol::EventKind;
use crate::runtime::cx::{AgentCx, Layer, ModelNext};
use crate::runtime::points::{Called, ModelCall, Moment, Purpose};
use crate::runtime::request::RequestSetup;
use async_trait::async_trait;
use std::sync::atomic::{AtomicBool, Ordering};

/// Most times one call is made to fit after the server refused it as too long (each time
/// harder: a summary, the latest turn only, big outputs cut).
const MAX_RECOVERIES: u32 = 3;

pub(super) struct CompactionLayer {
    pub(super) p: CompactionPolicy,
    /// Its compaction failed this turn.
    pub(super) failed: AtomicBool,
}

impl CompactionLayer {
    /// Compacts the history `req` is built from when it no longer fits comfortably;
    /// `Some`: the call ends here.
    async fn shape(
        &self,
        cx: &AgentCx,
        req: &mut RequestSetup,
        next: ModelNext<'_>,
    ) -> Option<Called> {
        if self.failed.load(Ordering::Relaxed)
            || self.p.compactor.due(cx.team(), cx.id(), req).is_none()
        {
            return None;
        }
        let scale = scale_for(&self.p.compactor, &req.request.model);
        let ask = ViaNext { cx, next };
        match compact(&self.p, cx, req, (Trigger::Window, scale), &ask).await {
            Ok(_) | Err(CompactError::NothingToCompact) => None,
            Err(CompactError::Cancelled) => Some(Called::Interrupted),
            Err(CompactError::Gone) => {
                Some(Called::Failed("the agent no longer exists".to_string()))
            }
            Err(e) => {
                self.failed.store(true, Ordering::Relaxed);
                let message = format!("could not compact the conversation: {e}");
                cx.team().emit(cx.id(), EventKind::Error { message });
                None
            }
        }
    }
}

#[async_trait]
impl Layer for CompactionLayer {
    async fn hear(&self, _cx: &AgentCx, moment: Moment) {
        if moment == Moment::TurnStart {
            self.failed.store(false, Ordering::Relaxed);
        }
    }

    async fn model_call(&self, cx: &AgentCx, call: &mut ModelCall, next: ModelNext<'_>) -> Called {
        if call.purpose != Purpose::Turn {
            return next.run(cx, call).await;
        }
        if let Some(end) = self.shape(cx, &mut call.setup, next).await {
            return end;
        }
        let mut recoveries = 0;
        loop {
            let (message, said) = match next.run(cx, call).await {
                Called::Overflow { message, said } => (message, said),
                other => return other,
            };
            let why = if recoveries == MAX_RECOVERIES {
                "even after compacting it".to_string()
            } else {
                match after_overflow(&self.p, cx, &mut call.setup, &said, next).await {
                    Recovery::Retry => {
                        recoveries += 1;
                        continue;
                    }
                    Recovery::Interrupted => return Called::Interrupted,
                    Recovery::GiveUp(why) => why,
                }
            };
            let model = &call.setup.request.model;
            let window = cx.session().windows.window(model);
            return Called::Failed(format!(
                "the conversation does not fit the context window of {model} ({window} tokens) \
                 {why}. The server said: {message}. Send a shorter message, /compact, or start \
                 over with /new"
            ));
        }
    }
}
