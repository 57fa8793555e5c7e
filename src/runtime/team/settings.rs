//! The user's choices for the rest of the session: the persona's model (`/model`) and the
//! approval policy (`/approval`). Kept here, with the agents they apply to.

use super::Team;
use crate::protocol::ApprovalPolicy;

impl Team {
    /// The persona's model from its next call on, and every persona's after a switch.
    pub fn choose_model(&self, model: String) {
        self.with(self.root, |a| {
            a.model = model.clone();
            // Another model: the last call's count no longer describes it.
            a.context.forget_measure();
        });
        *crate::sync::lock(&self.model_choice) = Some(model);
    }

    /// The model the user chose with `/model`, if they did.
    pub fn model_choice(&self) -> Option<String> {
        crate::sync::lock(&self.model_choice).clone()
    }

    /// Every agent's approval policy; workers spawned later take their parent's.
    pub fn set_policy_all(&self, policy: ApprovalPolicy) {
        for agent in self.lock().values_mut() {
            agent.policy = policy;
        }
    }
}
