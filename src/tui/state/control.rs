//! The team as a whole: paused (by the user, or held by the session's budget), an agent's
//! or the session's budget reached, the budget raised or lifted, the team resumed or
//! stopped. Each sets `paused` and `budget_hold` and says so in a conversation.

use super::{EntryKind, SessionState};
use crate::protocol::{AgentId, BudgetMeasure, BudgetReached, BudgetScope, dollars};
use std::time::Instant;

impl SessionState {
    fn say(&mut self, id: AgentId, entry: EntryKind, now: Instant) {
        self.agent_entry(id, now).conversation.push(entry);
    }

    pub(super) fn paused(&mut self, id: AgentId, now: Instant) {
        self.paused = true;
        // The budget's own notice says why and what to do.
        if self.budget_hold.is_none() {
            let line =
                "team paused: no model or tool call starts until /unpause (calls under way finish)";
            self.say(id, EntryKind::Notice(line.into()), now);
        }
    }

    pub(super) fn budget_reached(
        &mut self,
        id: AgentId,
        scope: BudgetScope,
        measure: BudgetMeasure,
        spent: f64,
        limit: f64,
        now: Instant,
    ) {
        let line = match scope {
            BudgetScope::Agent => {
                let reached = BudgetReached {
                    measure,
                    spent,
                    limit,
                };
                format!("{reached}: stopped before its next model call")
            }
            BudgetScope::Session => {
                self.budget_hold = Some((spent, limit));
                format!(
                    "session budget reached: {} of {} spent. The team is paused: \
                     /budget USD raises the limit and goes on, /stop ends the work",
                    dollars(spent),
                    dollars(limit)
                )
            }
        };
        self.say(id, EntryKind::Warning(line), now);
    }

    pub(super) fn session_budget_set(&mut self, id: AgentId, limit_usd: Option<f64>, now: Instant) {
        self.budget_hold = None;
        let line = match limit_usd {
            Some(l) => format!("session budget set to {}", dollars(l)),
            None => "session budget lifted: no limit".to_string(),
        };
        self.say(id, EntryKind::Notice(line), now);
    }

    pub(super) fn resumed(&mut self, id: AgentId, now: Instant) {
        self.paused = false;
        self.budget_hold = None;
        self.say(id, EntryKind::Notice("team goes on".into()), now);
    }

    pub(super) fn stopped(&mut self, id: AgentId, cancelled: usize, now: Instant) {
        self.budget_hold = None;
        let workers = match cancelled {
            0 => "no worker was running".to_string(),
            1 => "1 worker cancelled".to_string(),
            n => format!("{n} workers cancelled"),
        };
        let line = format!("team stopped: {workers}; the session goes on with your next message");
        self.say(id, EntryKind::Notice(line), now);
    }
}
