//! Budgets in each agent's life: before each model call a worker over its own budget stops,
//! and the session over its limit pauses the team (hold: the pause layer then waits). After
//! each call's usage the session's limit is checked at once (`super::after_usage`, the
//! model call's own step).

use super::SessionLimits;
use crate::runtime::cx::{AgentCx, Layer, Policy, Starting};
use crate::runtime::points::Gate;
use async_trait::async_trait;

pub struct BudgetPolicy(pub SessionLimits);

impl Policy for BudgetPolicy {
    fn layer_for(&self, _agent: &Starting) -> Option<Box<dyn Layer>> {
        Some(Box::new(BudgetLayer(self.0.clone())))
    }
}

struct BudgetLayer(SessionLimits);

#[async_trait]
impl Layer for BudgetLayer {
    async fn before_model_call(&self, cx: &AgentCx) -> Gate {
        match super::before_call(cx.team(), cx.id(), &self.0) {
            super::Gate::Go => Gate::Go,
            super::Gate::Hold => Gate::Hold,
            super::Gate::Stop(why) => Gate::Stop(why),
        }
    }
}
