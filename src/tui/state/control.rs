//! The team as a whole: paused (by the user, or held by the session's budget), an agent's
//! or the session's budget reached, the budget raised or lifted, the team resumed or
//! stopped. Each sets `paused` and `budget_hold` and says so in a conversation.

use super::{EntryKind, SessionState};
use crate::protocol::{AgentId, BudgetReached, BudgetScope, EventKind, dollars};
use std::time::Instant;

impl SessionState {
    /// Folds one of the team's control events (`Paused`, `Resumed`, `Stopped`,
    /// `BudgetReached`, `SessionBudgetSet`) in; `apply` sends them here.
    pub(super) fn control(&mut self, id: AgentId, kind: &EventKind, now: Instant) {
        match kind {
            // The budget's own notice says why and what to do.
            EventKind::Paused if self.budget_hold.is_some() => self.paused = true,
            EventKind::Paused => {
                self.paused = true;
                self.agent_entry(id, now).conversation.push(EntryKind::Notice(
                    "team paused: no model or tool call starts until /unpause (calls under way finish)"
                        .into(),
                ));
            }
            EventKind::BudgetReached {
                scope: BudgetScope::Agent,
                measure,
                spent,
                limit,
            } => {
                let reached = BudgetReached {
                    measure: *measure,
                    spent: *spent,
                    limit: *limit,
                };
                self.agent_entry(id, now)
                    .conversation
                    .push(EntryKind::Warning(format!(
                        "{reached}: stopped before its next model call"
                    )));
            }
            EventKind::BudgetReached {
                scope: BudgetScope::Session,
                spent,
                limit,
                ..
            } => {
                self.budget_hold = Some((*spent, *limit));
                self.agent_entry(id, now)
                    .conversation
                    .push(EntryKind::Warning(format!(
                        "session budget reached: {} of {} spent. The team is paused: \
                         /budget USD raises the limit and goes on, /stop ends the work",
                        dollars(*spent),
                        dollars(*limit)
                    )));
            }
            EventKind::SessionBudgetSet { limit_usd } => {
                self.budget_hold = None;
                let line = match limit_usd {
                    Some(l) => format!("session budget set to {}", dollars(*l)),
                    None => "session budget lifted: no limit".to_string(),
                };
                self.agent_entry(id, now)
                    .conversation
                    .push(EntryKind::Notice(line));
            }
            EventKind::Resumed => {
                self.paused = false;
                self.budget_hold = None;
                self.agent_entry(id, now)
                    .conversation
                    .push(EntryKind::Notice("team goes on".into()));
            }
            EventKind::Stopped { cancelled } => {
                self.budget_hold = None;
                let workers = match cancelled {
                    0 => "no worker was running".to_string(),
                    1 => "1 worker cancelled".to_string(),
                    n => format!("{n} workers cancelled"),
                };
                self.agent_entry(id, now)
                    .conversation
                    .push(EntryKind::Notice(format!(
                        "team stopped: {workers}; the session goes on with your next message"
                    )));
            }
            // `apply` sends only the events above.
            _ => {}
        }
    }
}
