//! The pause gate as a layer: while the team is paused no model call starts (the agent
//! shows `paused` until the team goes on).

use super::{Gate, Layer, Scope};
use crate::runtime::pause::PauseGate;
use async_trait::async_trait;
use std::sync::Arc;

pub struct PauseLayer {
    gate: Arc<PauseGate>,
}

impl PauseLayer {
    pub fn new(gate: Arc<PauseGate>) -> Self {
        Self { gate }
    }
}

#[async_trait]
impl Layer for PauseLayer {
    async fn before_model_call(&self, cx: &Scope<'_>) -> Gate {
        if cx.cancel.is_cancelled() || !self.gate.pass(cx.team, cx.agent, cx.cancel).await {
            Gate::Interrupted
        } else {
            Gate::Go
        }
    }
}
