//! What an agent may spend and has spent, and the session's spend: the figures the budget
//! checks (`policies/budget`) read, each in O(1); and a new worker's budget, fixed when it
//! is spawned (`for_worker`) and set aside out of its supervisor's (`reserve`).

use super::carve::{Amount, Limit, Purse};
use super::roster::Roster;
use super::{NewAgent, Team};
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
    /// The agent's budget and what it spent against it: its own spend and its workers'
    /// (`team/carve.rs`), and its own wall time. What is set aside for its live workers
    /// and not spent yet does not stop its own calls: a supervisor stopped while it
    /// waits would cancel the very workers it set the budget aside for.
    pub fn budget_and_spend(&self, id: AgentId) -> Option<(Budget, Spend)> {
        let now = Instant::now();
        let agents = self.lock();
        let purse = agents.carve.purse(id);
        let a = agents.get(&id)?;
        Some((
            a.budget,
            Spend {
                tokens: purse.spent.tokens as u64,
                cost_usd: purse.spent.cost_usd,
                wall: now.saturating_duration_since(a.created),
            },
        ))
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
    #[error(
        "nothing of your {field} budget is left to set aside for a worker: {purse}; wait for \
         your workers (what they do not spend comes back) or return your results"
    )]
    AllSetAside { field: &'static str, purse: String },
    #[error(
        "budget.{field} = {asked} cannot be set aside for the worker: {purse}, so {left} is \
         left; ask for at most that"
    )]
    Short {
        field: &'static str,
        asked: String,
        left: String,
        purse: String,
    },
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

/// What a supervisor can give a worker: its budget (the persona's in dollars is the
/// session's limit), what it and its workers spent and set aside (`team/carve.rs`), its
/// own wall time, and the free slots of `max_live_agents`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Giver {
    pub budget: Budget,
    pub purse: Purse,
    pub wall: Duration,
    pub slots: u32,
}

impl Giver {
    /// `your budget of $1.00: $0.30 spent, $0.50 set aside for 2 live workers`.
    fn describe(&self, measure: BudgetMeasure) -> String {
        let (limit, spent, reserved) = match measure {
            BudgetMeasure::Tokens => (
                self.purse.limit.tokens,
                self.purse.spent.tokens,
                self.purse.reserved.tokens,
            ),
            _ => (
                self.purse.limit.cost_usd,
                self.purse.spent.cost_usd,
                self.purse.reserved.cost_usd,
            ),
        };
        format!(
            "your budget of {}: {} spent, {} set aside for {} live worker{}",
            measure.amount(limit.unwrap_or(0.0)),
            measure.amount(spent),
            measure.amount(reserved),
            self.purse.live_workers,
            if self.purse.live_workers == 1 {
                ""
            } else {
                "s"
            }
        )
    }
}

impl Team {
    /// What `id` can give a worker (see [`Giver`]); `max_live` is `limits.max_live_agents`.
    pub fn giver(&self, id: AgentId, max_live: u32) -> Giver {
        let now = Instant::now();
        let agents = self.lock();
        let slots = (max_live as usize).saturating_sub(agents.live).max(1) as u32;
        let purse = agents.carve.purse(id);
        let Some(a) = agents.get(&id) else {
            return Giver::default();
        };
        let mut budget = a.budget;
        if a.parent.is_none() {
            budget.cost_usd = agents.session_usd;
        }
        Giver {
            budget,
            purse,
            wall: now.saturating_duration_since(a.created),
            slots,
        }
    }

    /// Sets a new worker's budget aside out of its supervisor's; refused, with the
    /// figures, when another spawn took what was left since the budget was worked out.
    pub fn reserve(
        &self,
        parent: AgentId,
        id: AgentId,
        budget: &Budget,
    ) -> Result<(), BudgetRefused> {
        let mut agents = self.lock();
        let short = match agents.carve.reserve(parent, id, limit_of(budget)) {
            Ok(()) => return Ok(()),
            Err(short) => short,
        };
        drop(agents);
        let mut giver = self.giver(parent, u32::MAX);
        giver.purse = short.purse;
        let measure = if short.tokens {
            BudgetMeasure::Tokens
        } else {
            BudgetMeasure::CostUsd
        };
        let left = match measure {
            BudgetMeasure::Tokens => short.purse.left().tokens,
            _ => short.purse.left().cost_usd,
        };
        Err(BudgetRefused::Short {
            field: measure.field(),
            asked: measure.amount(short.asked),
            left: measure.amount(left.unwrap_or(0.0).max(0.0)),
            purse: giver.describe(measure),
        })
    }

    /// The session's limit in dollars: the persona's purse, which its workers' budgets
    /// are set aside from.
    pub fn carve_session(&self, limit_usd: Option<f64>) {
        let mut agents = self.lock();
        agents.session_usd = limit_usd;
        let limit = Limit {
            tokens: None,
            cost_usd: limit_usd,
        };
        agents.carve.set_limit(self.root, limit);
    }

    /// The session's limit, set before the persona is added (`start/build.rs`).
    pub fn session_limit(self, limit_usd: Option<f64>) -> Self {
        self.lock().session_usd = limit_usd;
        self
    }
}

/// A new agent's spend in the session's, and in the ledger as it comes (restored, or the persona); a spawned worker is
/// there already ([`Team::reserve`]).
pub(super) fn enter(agents: &mut Roster, new: &NewAgent) {
    agents.cost_usd += new.stats.cost_usd;
    let limit = if new.parent.is_none() {
        Limit {
            tokens: None,
            cost_usd: agents.session_usd,
        }
    } else {
        limit_of(&new.budget)
    };
    let spent = Amount {
        tokens: (new.stats.prompt_tokens + new.stats.completion_tokens) as f64,
        cost_usd: new.stats.cost_usd,
    };
    agents.carve.enter(new.id, new.parent, limit, spent);
}

fn limit_of(budget: &Budget) -> Limit {
    Limit {
        tokens: budget.tokens.map(|t| t as f64),
        cost_usd: budget.cost_usd,
    }
}

/// The budget of a new worker of `parent`. Each measure `asked` must be positive and no
/// looser than the config's per-agent limit or what the parent has left of its own
/// budget (neither spent nor set aside for its other workers); a measure not asked gets
/// the per-agent limit, or less: an equal share of what is left, counting the parent and
/// every free live slot, so the first spawn does not take it all.
pub fn for_worker(limits: &Limits, parent: &Giver, asked: Budget) -> Result<Budget, BudgetRefused> {
    let left = parent.purse.left();
    let share = |l: Option<f64>| l.map(|l| l / (f64::from(parent.slots) + 1.0));
    let measures = [
        (
            BudgetMeasure::Tokens,
            asked.tokens.map(|t| t as f64),
            limits.max_tokens_per_agent.map(|t| t as f64),
            "limits.max_tokens_per_agent",
            left.tokens,
            share(left.tokens).map(f64::floor),
        ),
        (
            BudgetMeasure::CostUsd,
            asked.cost_usd,
            limits.max_cost_per_agent_usd,
            "limits.max_cost_per_agent_usd",
            left.cost_usd,
            share(left.cost_usd),
        ),
        (
            BudgetMeasure::WallS,
            asked.wall_s.map(|w| w as f64),
            limits.max_agent_wall_s.map(|w| w as f64),
            "limits.max_agent_wall_s",
            // Whole seconds: a parent with less than one left has none to give.
            parent
                .budget
                .wall_s
                .map(|w| (w as f64 - parent.wall.as_secs_f64()).floor()),
            None,
        ),
    ];
    let mut out = [None; 3];
    for (slot, measure) in out.iter_mut().zip(measures) {
        *slot = worker_measure(measure, parent)?;
    }
    let [tokens, cost_usd, wall_s] = out;
    Ok(Budget {
        tokens: tokens.map(|t| t as u64),
        cost_usd,
        wall_s: wall_s.map(|w| w as u64),
    })
}

/// One measure of a worker's budget: its name, what the spawn asked, the config's
/// per-agent limit and its key, what the parent has left of its own, and its default
/// share of that (carved measures only).
type Measure = (
    BudgetMeasure,
    Option<f64>,
    Option<f64>,
    &'static str,
    Option<f64>,
    Option<f64>,
);

/// One measure of a worker's budget (see [`for_worker`]): what was asked, refused when it
/// is not positive or looser than the ceiling; the default when nothing was asked.
fn worker_measure(
    (measure, asked, config, key, parent_left, share): Measure,
    parent: &Giver,
) -> Result<Option<f64>, BudgetRefused> {
    let field = measure.field();
    let carved = share.is_some();
    if parent_left.is_some_and(|l| l <= 0.0) {
        if carved && parent.purse.live_workers > 0 {
            let purse = parent.describe(measure);
            return Err(BudgetRefused::AllSetAside { field, purse });
        }
        let limit = measure.amount(own_limit(&parent.budget, measure));
        return Err(BudgetRefused::Spent { field, limit });
    }
    if let Some(a) = asked {
        if !(a.is_finite() && a > 0.0) {
            return Err(BudgetRefused::NotPositive { field, found: a });
        }
        if let Some(c) = config.filter(|c| a > *c) {
            return Err(BudgetRefused::Looser {
                field,
                asked: measure.amount(a),
                ceiling: measure.amount(c),
                from: key,
            });
        }
        if let Some(l) = parent_left.filter(|l| a > *l) {
            if carved {
                return Err(BudgetRefused::Short {
                    field,
                    asked: measure.amount(a),
                    left: measure.amount(l),
                    purse: parent.describe(measure),
                });
            }
            return Err(BudgetRefused::Looser {
                field,
                asked: measure.amount(a),
                ceiling: measure.amount(l),
                from: "what your own budget has left",
            });
        }
        return Ok(Some(a));
    }
    Ok(match (config, share.or(parent_left)) {
        (Some(c), Some(l)) => Some(c.min(l)),
        (c, l) => c.or(l),
    })
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
