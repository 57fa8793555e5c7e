//! What an agent may spend and has spent, and the session's spend: the figures the budget
//! checks (`runtime/budget.rs`) read, each in O(1).

use super::Team;
use crate::protocol::{AgentId, Budget};
use std::time::{Duration, Instant};

/// What an agent has spent so far.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Spend {
    /// Prompt and completion tokens of all its model calls.
    pub tokens: u64,
    pub cost_usd: f64,
    /// Since it was spawned (or restored).
    pub wall: Duration,
}

impl Team {
    /// The agent's budget and what it has spent against it.
    pub fn budget_and_spend(&self, id: AgentId) -> Option<(Budget, Spend)> {
        let now = Instant::now();
        self.with(id, |a| {
            (
                a.budget,
                Spend {
                    tokens: a.stats.prompt_tokens + a.stats.completion_tokens,
                    cost_usd: a.stats.cost_usd,
                    wall: now.saturating_duration_since(a.created),
                },
            )
        })
    }

    /// US dollars spent by every agent of the session, restored ones included.
    pub fn session_cost(&self) -> f64 {
        self.lock().cost_usd
    }
}
