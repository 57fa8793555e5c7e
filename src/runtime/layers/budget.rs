//! Budgets as a layer: before each model call a worker over its own budget stops, and the
//! session over its limit pauses the team (hold: the pause layer then waits); after each
//! call's usage the session's limit is checked at once.

use super::{Gate, Layer, Scope};
use crate::runtime::budget::{self, SessionLimits};
use async_trait::async_trait;

pub struct BudgetLayer {
    session: SessionLimits,
}

impl BudgetLayer {
    pub fn new(session: SessionLimits) -> Self {
        Self { session }
    }
}

#[async_trait]
impl Layer for BudgetLayer {
    async fn before_model_call(&self, cx: &Scope<'_>) -> Gate {
        match budget::before_call(cx.team, cx.agent, &self.session) {
            budget::Gate::Go => Gate::Go,
            budget::Gate::Hold => Gate::Hold,
            budget::Gate::Stop(why) => Gate::Stop(why),
        }
    }

    fn after_usage(&self, cx: &Scope<'_>) {
        budget::after_usage(cx.team, &self.session);
    }
}
