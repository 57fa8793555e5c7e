//! Workers' plans awaiting approval (`plan_submitted`), shown as a dialog like an
//! approval; a decision (`plan_decided`, the supervisor's or the user's) takes one down.
//! Unlike a question, one read back from the log still waits after a restart: the core
//! keeps it awaiting, so a resumed screen shows it too.

use super::SessionState;
use crate::protocol::{AgentId, PlanSubmitted};
use std::time::Instant;

#[derive(Clone, Debug, PartialEq)]
pub struct PendingPlan {
    pub agent_id: AgentId,
    pub role: String,
    pub plan_id: u64,
    pub plan: String,
    /// When it arrived, to take turns with approvals and questions.
    pub seq: u64,
}

impl SessionState {
    /// Queues worker `id`'s plan, in place of an earlier one of its own.
    pub(super) fn plan_submitted(
        &mut self,
        seq: u64,
        id: AgentId,
        p: &PlanSubmitted,
        now: Instant,
    ) {
        let role = self.agent_entry(id, now).role.clone();
        self.plans.retain(|q| q.agent_id != id);
        self.plans.push_back(PendingPlan {
            agent_id: id,
            role,
            plan_id: p.plan_id,
            plan: p.plan.clone(),
            seq,
        });
    }

    /// Drops worker `id`'s plan `plan_id` (decided, here or by its supervisor).
    /// Idempotent.
    pub fn resolve_plan(&mut self, id: AgentId, plan_id: u64) -> bool {
        let before = self.plans.len();
        self.plans
            .retain(|p| !(p.agent_id == id && p.plan_id == plan_id));
        before != self.plans.len()
    }
}
