//! The pause gate in each agent's life: while the team is paused no model call starts (the
//! agent shows `paused` until the team goes on).

use super::gate::PauseGate;
use crate::runtime::cx::{AgentCx, Layer, Policy, Starting};
use crate::runtime::points::Gate;
use async_trait::async_trait;
use std::sync::Arc;

pub struct PausePolicy(pub Arc<PauseGate>);

impl Policy for PausePolicy {
    fn layer_for(&self, _agent: &Starting) -> Option<Box<dyn Layer>> {
        Some(Box::new(PauseLayer(self.0.clone())))
    }
}

struct PauseLayer(Arc<PauseGate>);

#[async_trait]
impl Layer for PauseLayer {
    async fn before_model_call(&self, cx: &AgentCx) -> Gate {
        if cx.cancel().is_cancelled() || !self.0.pass(cx.team(), cx.id(), cx.cancel()).await {
            Gate::Interrupted
        } else {
            Gate::Go
        }
    }
}
