//! What an agent may spend and has spent, and the session's spend: the figures the budget
//! checks (`policies/budget`) read, each in O(1); and a new worker's budget, fixed when it
//! is spawned (`for_worker`).

use super::Team;
use crate::config::Limits;
use crate::protocol::{AgentId, Budget, BudgetMeasure};
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

/// Why a spawn's budget was refused; the spawning model reads it and may ask again.
#[derive(Debug, thiserror::Error)]
pub enum BudgetRefused {
    #[error(
        "your own {field} budget is spent ({limit} limit): you cannot give a worker any; \
         return your results"
    )]
    Spent { field: &'static str, limit: String },
    #[error("budget.{field} must be above 0, found {found}")]
    NotPositive { field: &'static str, found: f64 },
    #[error(
        "budget.{field} = {asked} is looser than its ceiling of {ceiling} ({from}): ask for \
         at most that, or leave budget.{field} out"
    )]
    Looser {
        field: &'static str,
        asked: String,
        ceiling: String,
        from: &'static str,
    },
}

/// The budget of a new worker whose parent has `parent` (its budget and spend). Each measure `asked` must be positive and no
/// looser than the config's per-agent limit or what the parent has left of its own
/// budget; a measure not asked gets the tightest of those (or none).
pub fn for_worker(
    limits: &Limits,
    parent: (Budget, Spend),
    asked: Budget,
) -> Result<Budget, BudgetRefused> {
    let (own, spent) = parent;
    let left = |limit: Option<f64>, used: f64| limit.map(|l| l - used);
    let measures = [
        (
            BudgetMeasure::Tokens,
            asked.tokens.map(|t| t as f64),
            limits.max_tokens_per_agent.map(|t| t as f64),
            "limits.max_tokens_per_agent",
            left(own.tokens.map(|t| t as f64), spent.tokens as f64),
        ),
        (
            BudgetMeasure::CostUsd,
            asked.cost_usd,
            limits.max_cost_per_agent_usd,
            "limits.max_cost_per_agent_usd",
            left(own.cost_usd, spent.cost_usd),
        ),
        (
            BudgetMeasure::WallS,
            asked.wall_s.map(|w| w as f64),
            limits.max_agent_wall_s.map(|w| w as f64),
            "limits.max_agent_wall_s",
            // Whole seconds: a parent with less than one left has none to give.
            left(own.wall_s.map(|w| w as f64), spent.wall.as_secs_f64()).map(f64::floor),
        ),
    ];
    let mut out = [None; 3];
    for (slot, measure) in out.iter_mut().zip(measures) {
        *slot = worker_measure(measure, &own)?;
    }
    let [tokens, cost_usd, wall_s] = out;
    Ok(Budget {
        tokens: tokens.map(|t| t as u64),
        cost_usd,
        wall_s: wall_s.map(|w| w as u64),
    })
}

/// One measure of a worker's budget: its name, what the spawn asked, the config's
/// per-agent limit and its key, and what the parent has left of its own.
type Measure = (
    BudgetMeasure,
    Option<f64>,
    Option<f64>,
    &'static str,
    Option<f64>,
);

/// One measure of a worker's budget (see [`for_worker`]): what was asked, refused when it
/// is not positive or looser than the ceiling; the ceiling when nothing was asked.
fn worker_measure(
    (measure, asked, config, key, parent_left): Measure,
    own: &Budget,
) -> Result<Option<f64>, BudgetRefused> {
    let field = measure.field();
    if parent_left.is_some_and(|l| l <= 0.0) {
        let limit = measure.amount(own_limit(own, measure));
        return Err(BudgetRefused::Spent { field, limit });
    }
    let ceiling = match (config, parent_left) {
        (Some(c), Some(p)) if p < c => Some((p, "what your own budget has left")),
        (Some(c), _) => Some((c, key)),
        (None, Some(p)) => Some((p, "what your own budget has left")),
        (None, None) => None,
    };
    if let Some(a) = asked {
        if !(a.is_finite() && a > 0.0) {
            return Err(BudgetRefused::NotPositive { field, found: a });
        }
        if let Some((c, from)) = ceiling.filter(|(c, _)| a > *c) {
            return Err(BudgetRefused::Looser {
                field,
                asked: measure.amount(a),
                ceiling: measure.amount(c),
                from,
            });
        }
    }
    Ok(asked.or(ceiling.map(|(c, _)| c)))
}

/// The config's per-agent limits as a budget.
pub fn from_limits(limits: &Limits) -> Budget {
    Budget {
        tokens: limits.max_tokens_per_agent,
        cost_usd: limits.max_cost_per_agent_usd,
        wall_s: limits.max_agent_wall_s,
    }
}

fn own_limit(own: &Budget, measure: BudgetMeasure) -> f64 {
    match measure {
        BudgetMeasure::Tokens => own.tokens.unwrap_or(0) as f64,
        BudgetMeasure::CostUsd => own.cost_usd.unwrap_or(0.0),
        BudgetMeasure::WallS => own.wall_s.unwrap_or(0) as f64,
    }
}
