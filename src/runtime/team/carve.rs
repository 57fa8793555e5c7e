//! Budgets carved, not shared (issue 55 part 2): a worker's token and dollar budget is
//! set aside out of what its supervisor has left when it is spawned, and what it did not
//! spend goes back when it ends. So the reservations under any agent never pass its own
//! budget, and those under the persona never pass the session's limit, at any depth.
//!
//! The ledger is pure bookkeeping, O(depth) per change: each agent's own spend, its
//! subtree's spend, and what its children hold of it. A live child holds the larger of
//! its reservation and its subtree's spend (a call may pass a budget: it is checked
//! before a call, never cut off half-way); an ended one holds what its subtree spent.
//! Wall time is not carved: workers spend it side by side, not out of one purse.

use crate::protocol::AgentId;
use std::collections::HashMap;

/// Tokens and US dollars: the two measures carved.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Amount {
    pub tokens: f64,
    pub cost_usd: f64,
}

impl Amount {
    fn zip(self, other: Amount, f: impl Fn(f64, f64) -> f64) -> Amount {
        Amount {
            tokens: f(self.tokens, other.tokens),
            cost_usd: f(self.cost_usd, other.cost_usd),
        }
    }

    fn add(&mut self, d: Amount) {
        *self = self.zip(d, |a, b| a + b);
    }
}

/// An agent's budget in the carved measures; `None` is no limit.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Limit {
    pub tokens: Option<f64>,
    pub cost_usd: Option<f64>,
}

impl Limit {
    fn amount(self) -> Amount {
        Amount {
            tokens: self.tokens.unwrap_or(0.0),
            cost_usd: self.cost_usd.unwrap_or(0.0),
        }
    }
}

#[derive(Clone, Debug)]
struct Entry {
    parent: Option<AgentId>,
    limit: Limit,
    own: Amount,
    subtree: Amount,
    /// What its children hold of its budget, summed.
    children: Amount,
    live_children: usize,
    live: bool,
}

impl Entry {
    /// What it holds of its parent's budget.
    fn held(&self) -> Amount {
        if self.live {
            self.limit.amount().zip(self.subtree, f64::max)
        } else {
            self.subtree
        }
    }
}

/// An agent's purse as a spawn sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Purse {
    pub limit: Limit,
    /// Spent by it and every agent under it.
    pub spent: Amount,
    /// Set aside for its live workers and not spent by them yet.
    pub reserved: Amount,
    pub live_workers: usize,
}

impl Purse {
    /// What is neither spent nor reserved; `None` where there is no limit.
    pub fn left(&self) -> Limit {
        let used = self.spent.zip(self.reserved, |a, b| a + b);
        Limit {
            tokens: self.limit.tokens.map(|l| l - used.tokens),
            cost_usd: self.limit.cost_usd.map(|l| l - used.cost_usd),
        }
    }
}

/// Why a worker's budget could not be set aside: the measure, what was asked, the purse.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Short {
    pub tokens: bool,
    pub asked: f64,
    pub purse: Purse,
}

#[derive(Default)]
pub struct Ledger {
    map: HashMap<AgentId, Entry>,
}

impl Ledger {
    /// Puts an agent in the ledger as it is (a restored one with its spend), reserving
    /// its budget under its parent whatever is left: for agents the log brings back.
    pub fn enter(&mut self, id: AgentId, parent: Option<AgentId>, limit: Limit, spent: Amount) {
        if self.map.contains_key(&id) {
            return;
        }
        let entry = Entry {
            parent,
            limit,
            own: Amount::default(),
            subtree: Amount::default(),
            children: Amount::default(),
            live_children: 0,
            live: true,
        };
        let held = entry.held();
        self.map.insert(id, entry);
        if let Some(p) = parent.and_then(|p| self.map.get_mut(&p)) {
            p.children.add(held);
            p.live_children += 1;
        }
        self.spend(id, spent);
    }

    /// Sets aside `limit` of `parent`'s purse for a new worker `id`, or says which
    /// measure is short. Nothing is set aside on a refusal.
    pub fn reserve(&mut self, parent: AgentId, id: AgentId, limit: Limit) -> Result<(), Short> {
        let purse = self.purse(parent);
        let left = purse.left();
        for (tokens, asked, left) in [
            (true, limit.tokens, left.tokens),
            (false, limit.cost_usd, left.cost_usd),
        ] {
            // A worker without a limit where its parent has one is refused by the
            // spawn's budget (`for_worker` gives it one); here it holds what it spends.
            if let (Some(asked), Some(left)) = (asked, left)
                && asked > left + 1e-9
            {
                return Err(Short {
                    tokens,
                    asked,
                    purse,
                });
            }
        }
        self.enter(id, Some(parent), limit, Amount::default());
        Ok(())
    }

    /// An agent's purse (an unknown one: empty, no limit).
    pub fn purse(&self, id: AgentId) -> Purse {
        let Some(e) = self.map.get(&id) else {
            return Purse::default();
        };
        let children_spent = e.subtree.zip(e.own, |s, o| s - o);
        Purse {
            limit: e.limit,
            spent: e.subtree,
            // Sums of floats drift: what is left within a billionth is nothing.
            reserved: e.children.zip(
                children_spent,
                |h, s| {
                    if h - s > 1e-9 { h - s } else { 0.0 }
                },
            ),
            live_workers: e.live_children,
        }
    }

    /// A new limit for an agent (the persona's: the session's, set by the user).
    pub fn set_limit(&mut self, id: AgentId, limit: Limit) {
        self.update(id, |e| e.limit = limit);
    }

    /// What an agent spent, counted up its line: each ancestor's subtree, and what each
    /// holds of its parent.
    pub fn spend(&mut self, id: AgentId, d: Amount) {
        if let Some(e) = self.map.get_mut(&id) {
            e.own.add(d);
        }
        let mut node = Some(id);
        while let Some(n) = node {
            node = self.update(n, |e| e.subtree.add(d));
        }
    }

    /// The agent ended (released, failed or cancelled): what it did not spend goes back
    /// to its parent. Ended is final here: a worker spoken to again after its end spends
    /// within its own budget, counted as spend, not as a reservation.
    pub fn end(&mut self, id: AgentId) {
        if self.map.get(&id).is_some_and(|e| e.live) {
            let parent = self.update(id, |e| e.live = false);
            if let Some(p) = parent.and_then(|p| self.map.get_mut(&p)) {
                p.live_children = p.live_children.saturating_sub(1);
            }
        }
    }

    /// Changes an entry, then moves what it holds of its parent by the difference;
    /// returns the parent.
    fn update(&mut self, id: AgentId, f: impl FnOnce(&mut Entry)) -> Option<AgentId> {
        let e = self.map.get_mut(&id)?;
        let before = e.held();
        f(e);
        let after = e.held();
        let parent = e.parent;
        if let Some(p) = parent.and_then(|p| self.map.get_mut(&p)) {
            p.children.add(after.zip(before, |a, b| a - b));
        }
        parent
    }
}

#[cfg(test)]
#[path = "carve_tests.rs"]
mod tests;
