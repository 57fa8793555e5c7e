//! The pause gate in each agent's life: while the team is paused no model call and no
//! tool call starts (the agent shows `paused` until the team goes on). A model call held
//! here is built again once the team goes on, with what came meanwhile.

use super::gate::PauseGate;
use crate::protocol::{EventKind, Op};
use crate::runtime::cx::{AgentCx, Layer, ModelNext, OpRefused, Policy, Starting, ToolNext};
use crate::runtime::points::{Called, ModelCall};
use crate::runtime::session::Session;
use crate::runtime::tool_call::{STOPPED, ToolOut, ToolReq};
use async_trait::async_trait;
use std::sync::Arc;

pub struct PausePolicy(pub Arc<PauseGate>);

impl Policy for PausePolicy {
    fn layer_for(&self, _agent: &Starting) -> Option<Box<dyn Layer>> {
        Some(Box::new(PauseLayer(self.0.clone())))
    }

    /// `/pause`, `/resume` (said once per change), and `/stop`.
    fn on_op(&self, session: &Arc<Session>, op: &Op) -> Result<(), OpRefused> {
        match op {
            Op::Pause | Op::Resume if self.0.set(matches!(op, Op::Pause)) => {
                let kind = match op {
                    Op::Pause => EventKind::Paused,
                    _ => EventKind::Resumed,
                };
                session.team.emit(session.root(), kind);
            }
            Op::Stop => super::stop::stop(&session.team, &self.0),
            _ => {}
        }
        Ok(())
    }
}

struct PauseLayer(Arc<PauseGate>);

impl PauseLayer {
    /// Waits while the team is paused: false when the turn was stopped first.
    async fn pass(&self, cx: &AgentCx) -> bool {
        !cx.cancel().is_cancelled() && self.0.pass(cx.team(), cx.id(), cx.cancel()).await
    }
}

#[async_trait]
impl Layer for PauseLayer {
    async fn model_call(&self, cx: &AgentCx, call: &mut ModelCall, next: ModelNext<'_>) -> Called {
        let held = self.0.is_paused();
        if !self.pass(cx).await {
            return Called::Interrupted;
        }
        if held {
            return Called::Again;
        }
        next.run(cx, call).await
    }

    async fn tool_call(&self, cx: &AgentCx, req: &mut ToolReq<'_>, next: ToolNext<'_>) -> ToolOut {
        if !self.pass(cx).await {
            return ToolOut::stopped(STOPPED);
        }
        next.run(cx, req).await
    }
}
