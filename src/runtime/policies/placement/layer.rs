//! A placed worker's layer: its coding tools go to its far side (the call's handler is
//! swapped before isolation and the approval see it, so the user approves the far side's
//! diff); its change comes back before `return_results` is checked and when its turns are
//! over, before isolation merges, and when it goes, before isolation keeps or drops its
//! worktree; a lost connection ends it, failed, with the reason and what of its work came
//! back. It comes before isolation in the policies' order.

use super::{PlacedWorker, Placements};
use crate::protocol::{EventKind, TurnEnd};
use crate::runtime::agent_tools::return_results::RETURN_RESULTS;
use crate::runtime::cx::{AgentCx, Layer, ModelNext, ToolNext};
use crate::runtime::points::{Admit, Called, ModelCall, Moment};
use crate::runtime::tool_call::{ToolOut, ToolReq};
use crate::runtime::toolbox::{Coding, Ran};
use async_trait::async_trait;
use std::sync::Arc;

/// A worker's placement: its far side (`None`: it runs here), or why it can run nowhere.
type Me = Result<Option<(crate::protocol::AgentId, Arc<PlacedWorker>)>, String>;

pub(super) struct PlacementLayer {
    placements: Arc<Placements>,
    /// This worker's placement, looked up at its first task or call (a resumed worker's
    /// waits for its far side to be reopened).
    me: tokio::sync::OnceCell<Me>,
}

impl PlacementLayer {
    pub(super) fn new(placements: Arc<Placements>) -> Self {
        Self {
            placements,
            me: tokio::sync::OnceCell::new(),
        }
    }

    async fn placed(&self, cx: &AgentCx) -> Result<Option<&Arc<PlacedWorker>>, &str> {
        let me = self
            .me
            .get_or_init(|| async {
                let worker = self.placements.resolve(cx.id()).await?;
                // The log keeps where it runs, so a resume finds it there again.
                if let Some(w) = &worker {
                    cx.team().emit(cx.id(), EventKind::FarSide(w.far_side()));
                }
                Ok(worker.map(|w| (cx.id(), w)))
            })
            .await;
        match me {
            Ok(me) => Ok(me.as_ref().map(|(_, w)| w)),
            Err(why) => Err(why),
        }
    }
}

#[async_trait]
impl Layer for PlacementLayer {
    async fn before_task(&self, cx: &AgentCx, _text: &mut String, _from_user: bool) -> Admit {
        // Known from its first task on, so it is released when it goes.
        let _ = self.placed(cx).await;
        Admit::Go
    }

    async fn model_call(&self, cx: &AgentCx, call: &mut ModelCall, next: ModelNext<'_>) -> Called {
        // A resumed worker whose far side could be neither reattached nor started again
        // ends failed with the reason before its model is asked.
        if let Err(why) = self.placed(cx).await {
            return Called::Failed(why.to_string());
        }
        next.run(cx, call).await
    }

    async fn tool_call(&self, cx: &AgentCx, req: &mut ToolReq<'_>, next: ToolNext<'_>) -> ToolOut {
        let worker = match self.placed(cx).await {
            Ok(Some(worker)) => worker,
            Ok(None) => return next.run(cx, req).await,
            Err(why) => return ToolOut::ran(Ran::Fatal(why.to_string())),
        };
        if let Some(why) = worker.remote.lost() {
            return ToolOut::ran(Ran::Fatal(worker.lost_reason(&why)));
        }
        if let Some(tool) = worker.tools.get(&req.call.name) {
            worker
                .dirty
                .store(true, std::sync::atomic::Ordering::SeqCst);
            req.handler = Arc::new(Coding(tool.clone()));
            // Nothing here to fill behind the call: its files are there.
            req.writes = None;
        } else if req.call.name == RETURN_RESULTS
            && let Err(why) = worker.bring_back(cx).await
        {
            if let Some(lost) = worker.remote.lost() {
                return ToolOut::ran(Ran::Fatal(worker.lost_reason(&lost)));
            }
            return ToolOut::refused(why);
        }
        let out = next.run(cx, req).await;
        if out.is_error
            && let Some(why) = worker.remote.lost()
        {
            return ToolOut::ran(Ran::Fatal(worker.lost_reason(&why)));
        }
        out
    }

    async fn hear(&self, cx: &AgentCx, moment: Moment) {
        let end = match moment {
            Moment::Settled(end) => end,
            Moment::Gone => {
                // Never waiting for a reopening: a resumed worker that had no turn since is
                // found in the registry once its far side was reattached.
                let worker = match self.me.get() {
                    Some(Ok(Some((_, worker)))) => Some(worker.clone()),
                    _ => self.placements.get(cx.id()),
                };
                if let Some(worker) = worker {
                    worker.going(cx).await;
                }
                return;
            }
            Moment::TurnStart => return,
        };
        let Ok(Some(worker)) = self.placed(cx).await else {
            return;
        };
        if end == TurnEnd::Cancelled || worker.remote.lost().is_some() {
            return;
        }
        if let Err(message) = worker.bring_back(cx).await {
            cx.team().emit(cx.id(), EventKind::Error { message });
        }
    }
}

impl Drop for PlacementLayer {
    /// The worker is gone: its far side goes too.
    fn drop(&mut self) {
        if let Some(Ok(Some((agent, _)))) = self.me.take() {
            self.placements.forget(agent);
        }
    }
}
