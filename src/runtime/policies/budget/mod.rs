//! Budgets: what a worker may spend (tokens, dollars, wall time) and what the whole session
//! may (dollars). Spend is the servers' own `usage`, counted by the team as calls finish.
//!
//! A worker's budget is fixed when it is spawned (`for_worker`): the config's per-agent
//! limits, narrowed by what its parent has left of its own and by what the spawn asked.
//! It is checked before each of the worker's model calls (`before_call`), so a call is
//! never cut off half-way (it would waste what it already cost): the worker that reached
//! its budget stops there, `failed` with a `budget: …` reason its supervisor reads.
//! The session's limit is checked after each call and before each one: reaching it pauses
//! the team through the pause gate until the user raises the limit or stops.

pub mod layer;

use crate::protocol::{
    AgentId, Budget, BudgetMeasure, BudgetReached, BudgetScope, EventKind, dollars,
};
use crate::runtime::policies::pause::gate::PauseGate;
use crate::runtime::team::{Spend, Team};
use std::sync::{Arc, Mutex};

/// The session's cost limit: the config's, then whatever the user sets.
pub struct SessionBudget {
    state: Mutex<SessionLimit>,
}

struct SessionLimit {
    limit_usd: Option<f64>,
    /// The team is held because the limit was reached (and the user was told).
    holding: bool,
}

impl SessionBudget {
    pub fn new(limit_usd: Option<f64>) -> Self {
        Self {
            state: Mutex::new(SessionLimit {
                limit_usd,
                holding: false,
            }),
        }
    }

    pub fn limit(&self) -> Option<f64> {
        crate::sync::lock(&self.state).limit_usd
    }

    /// Marks the team held by the budget; true if it was not already.
    fn hold(&self) -> bool {
        !std::mem::replace(&mut crate::sync::lock(&self.state).holding, true)
    }

    /// A new limit; returns whether the budget was holding the team.
    fn set(&self, limit_usd: Option<f64>) -> bool {
        let mut s = crate::sync::lock(&self.state);
        s.limit_usd = limit_usd;
        std::mem::take(&mut s.holding)
    }
}

/// What the turn does before a model call.
pub enum Gate {
    Go,
    /// The session's budget is spent: the team is paused; pass the pause gate again.
    Hold,
    /// The agent's own budget is spent: the turn ends with this reason.
    Stop(String),
}

/// The session's limit and the gate reaching it closes.
#[derive(Clone)]
pub struct SessionLimits {
    pub budget: Arc<SessionBudget>,
    pub pause: Arc<PauseGate>,
}

/// Before a model call of `agent`: its own budget, then the session's.
pub fn before_call(team: &Team, agent: AgentId, session: &SessionLimits) -> Gate {
    if let Some(reached) = team
        .budget_and_spend(agent)
        .and_then(|(b, s)| reached(&b, &s))
    {
        team.emit(
            agent,
            EventKind::BudgetReached {
                scope: BudgetScope::Agent,
                measure: reached.measure,
                spent: reached.spent,
                limit: reached.limit,
            },
        );
        return Gate::Stop(reached.to_string());
    }
    if session_reached(team, session) {
        Gate::Hold
    } else {
        Gate::Go
    }
}

/// After a model call's usage was counted: reaching the session's limit pauses the team
/// at once, so no further call or tool starts while the user is asked.
pub fn after_usage(team: &Team, session: &SessionLimits) {
    session_reached(team, session);
}

/// Whether the session spent its limit; if so, the team is paused and the user told
/// (once per pause).
fn session_reached(team: &Team, session: &SessionLimits) -> bool {
    let Some(limit) = session.budget.limit() else {
        return false;
    };
    let spent = team.session_cost();
    if spent < limit {
        return false;
    }
    let root = team.root();
    let newly_paused = session.pause.set(true);
    let newly_held = session.budget.hold();
    if newly_paused || newly_held {
        team.emit(
            root,
            EventKind::BudgetReached {
                scope: BudgetScope::Session,
                measure: BudgetMeasure::CostUsd,
                spent,
                limit,
            },
        );
    }
    if newly_paused {
        team.emit(root, EventKind::Paused);
    }
    true
}

/// Why the user's new session limit was refused.
#[derive(Debug, thiserror::Error)]
pub enum LimitRefused {
    #[error("a session budget is a positive amount of US dollars, not {0}")]
    NotPositive(f64),
    #[error("the session has spent {0} already: a new budget must be above that (or /budget off)")]
    BelowSpent(String),
}

/// The user's new session limit (`None`: none). It must be above what was spent; a team
/// the budget paused goes on.
pub fn set_session_limit(
    team: &Team,
    session: &SessionLimits,
    limit_usd: Option<f64>,
) -> Result<(), LimitRefused> {
    if let Some(limit) = limit_usd {
        if !(limit.is_finite() && limit > 0.0) {
            return Err(LimitRefused::NotPositive(limit));
        }
        let spent = team.session_cost();
        if limit <= spent {
            return Err(LimitRefused::BelowSpent(dollars(spent)));
        }
    }
    let was_holding = session.budget.set(limit_usd);
    team.carve_session(limit_usd);
    let root = team.root();
    team.emit(root, EventKind::SessionBudgetSet { limit_usd });
    if was_holding && session.pause.set(false) {
        team.emit(root, EventKind::Resumed);
    }
    Ok(())
}

/// The first measure of `budget` that `spend` reached.
fn reached(budget: &Budget, spend: &Spend) -> Option<BudgetReached> {
    let checks = [
        (
            BudgetMeasure::Tokens,
            budget.tokens.map(|t| t as f64),
            spend.tokens as f64,
        ),
        (BudgetMeasure::CostUsd, budget.cost_usd, spend.cost_usd),
        (
            BudgetMeasure::WallS,
            budget.wall_s.map(|w| w as f64),
            spend.wall.as_secs_f64(),
        ),
    ];
    checks.into_iter().find_map(|(measure, limit, spent)| {
        let limit = limit?;
        (spent >= limit).then_some(BudgetReached {
            measure,
            spent,
            limit,
        })
    })
}

#[cfg(test)]
mod tests;
