//! Compaction in each agent's life: a request whose estimate passes `[context] compact_at`
//! of the window is compacted before it is sent. A compaction that failed (not one with
//! nothing to do) is not tried again in the same turn: each try is a model call.

use super::compactor::{CompactError, Compactor};
use super::fit::{compact, scale_for};
use crate::protocol::EventKind;
use crate::runtime::cx::{AgentCx, Layer, Policy, Starting};
use crate::runtime::points::Shape;
use crate::runtime::request::RequestSetup;
use async_trait::async_trait;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

pub struct CompactionPolicy(pub Arc<Compactor>);

impl Policy for CompactionPolicy {
    fn layer_for(&self, _agent: &Starting) -> Option<Box<dyn Layer>> {
        Some(Box::new(CompactionLayer {
            compactor: self.0.clone(),
            failed: AtomicBool::new(false),
        }))
    }
}

struct CompactionLayer {
    compactor: Arc<Compactor>,
    /// Its compaction failed this turn.
    failed: AtomicBool,
}

#[async_trait]
impl Layer for CompactionLayer {
    fn turn_start(&self, _cx: &AgentCx) {
        self.failed.store(false, Ordering::Relaxed);
    }

    async fn shape_request(&self, cx: &AgentCx, req: &mut RequestSetup) -> Shape {
        if self.failed.load(Ordering::Relaxed)
            || self.compactor.due(cx.team(), cx.id(), req).is_none()
        {
            return Shape::Kept;
        }
        let scale = scale_for(&self.compactor, &req.request.model);
        match compact(cx, req, super::compactor::Trigger::Window, scale).await {
            Ok(_) => Shape::Changed,
            Err(CompactError::NothingToCompact) => Shape::Kept,
            Err(CompactError::Cancelled) => Shape::Interrupted,
            Err(CompactError::Gone) => Shape::Stop("the agent no longer exists".to_string()),
            Err(e) => {
                self.failed.store(true, Ordering::Relaxed);
                cx.team().emit(
                    cx.id(),
                    EventKind::Error {
                        message: format!("could not compact the conversation: {e}"),
                    },
                );
                Shape::Kept
            }
        }
    }
}
