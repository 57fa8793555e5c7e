//! Compaction as a layer: a request whose estimate passes `[context] compact_at` of the
//! window is compacted before it is sent, and a request the server refuses as too long is
//! compacted and sent again. A compaction that failed (not one with nothing to do) is not
//! tried again in the same turn: each try is a model call.

use super::{Layer, Recovery, Scope, Shape};
use crate::protocol::{AgentId, EventKind};
use crate::runtime::compaction::{CompactError, Compactor, Trigger};
use crate::runtime::request::RequestSetup;
use async_trait::async_trait;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

pub struct CompactionLayer {
    compactor: Arc<Compactor>,
    /// Agents whose compaction failed this turn.
    failed: Mutex<HashSet<AgentId>>,
}

impl CompactionLayer {
    pub fn new(compactor: Arc<Compactor>) -> Self {
        Self {
            compactor,
            failed: Mutex::new(HashSet::new()),
        }
    }

    /// Compacts the history `req` was built from, then points `req` at the new one.
    async fn compact(&self, cx: &Scope<'_>, req: &mut RequestSetup) -> Result<u64, CompactError> {
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
            .compact(cx.team, cx.agent, setup, Trigger::Window, cx.cancel)
            .await;
        match cx.team.request_view(cx.agent) {
            Some(view) => req.request.history = view.history,
            None => return Err(CompactError::Gone),
        }
        done
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
        match self.compact(cx, req).await {
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

    async fn overflow(&self, cx: &Scope<'_>, req: &mut RequestSetup) -> Recovery {
        match self.compact(cx, req).await {
            Ok(_) => Recovery::Retry,
            Err(CompactError::Cancelled) => Recovery::Interrupted,
            Err(e) => Recovery::GiveUp(format!("and compacting it failed ({e})")),
        }
    }
}
