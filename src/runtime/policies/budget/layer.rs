//! Budgets in each agent's life, around each model call: before it, a worker over its own
//! budget stops, and the session over its limit pauses the team (the call is held, and the
//! pause layer then waits); after it (its summaries and retries included), the session's
//! limit is checked at once.

use super::SessionLimits;
use crate::runtime::cx::{AgentCx, Layer, ModelNext, Policy, Starting};
use crate::runtime::points::{Called, ModelCall};
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
    async fn model_call(&self, cx: &AgentCx, call: &mut ModelCall, next: ModelNext<'_>) -> Called {
        match super::before_call(cx.team(), cx.id(), &self.0) {
            super::Gate::Go => {}
            super::Gate::Hold => return Called::Again,
            super::Gate::Stop(why) => return Called::Stopped(why),
        }
        let called = next.run(cx, call).await;
        super::after_usage(cx.team(), &self.0);
        called
    }
}
