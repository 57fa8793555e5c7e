//! Budgets in each agent's life, around each model call: before it, a worker over its own
//! budget stops, and the session over its limit pauses the team (the call is held, and the
//! pause layer then waits); after it (its summaries and retries included), the session's
//! limit is checked at once. The user's `/budget` (`Op::SetSessionBudget`) is its op.

use super::SessionLimits;
use crate::protocol::Op;
use crate::runtime::cx::{AgentCx, Layer, ModelNext, OpRefused, Policy, Starting};
use crate::runtime::points::{Called, ModelCall};
use crate::runtime::session::Session;
use async_trait::async_trait;
use std::sync::Arc;

pub struct BudgetPolicy(pub SessionLimits);

impl Policy for BudgetPolicy {
    fn layer_for(&self, _agent: &Starting) -> Option<Box<dyn Layer>> {
        Some(Box::new(BudgetLayer(self.0.clone())))
    }

    /// `/budget`: the user sets the session's cost limit.
    fn on_op(&self, session: &Arc<Session>, op: &Op) -> Result<(), OpRefused> {
        match op {
            Op::SetSessionBudget { limit_usd } => Ok(super::set_session_limit(
                &session.team,
                &self.0,
                *limit_usd,
            )?),
            _ => Ok(()),
        }
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
