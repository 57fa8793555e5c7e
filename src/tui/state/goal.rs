//! The user's goal as the screen shows it: the status bar reads `goal`, and each of its
//! events is a line in the persona's conversation.

use super::{EntryKind, SessionState};
use crate::protocol::{AgentId, EventKind, GoalEnd, dollars};
use std::time::Instant;

/// Lines of a failing check's output its conversation line quotes.
const QUOTED_LINES: usize = 3;

impl SessionState {
    /// Folds `goal_set`, `goal_checked` and `goal_ended` in; `apply` sends them here.
    pub(super) fn goal_event(&mut self, id: AgentId, kind: &EventKind, now: Instant) {
        let entry = match kind {
            EventKind::GoalSet { goal, spent_usd } => {
                self.goal.set(goal, *spent_usd);
                let cost = goal
                    .max_cost_usd
                    .map_or(String::new(), |d| format!(", {}", dollars(d)));
                EntryKind::Notice(format!(
                    "◎ goal: {} — met when {} (at most {} turns{cost})",
                    goal.text.trim(),
                    goal.end(),
                    goal.max_turns
                ))
            }
            EventKind::GoalChecked(check) => {
                self.goal.checked(check);
                if check.passed {
                    EntryKind::Notice(check.line())
                } else {
                    let lines: Vec<&str> = check.output_tail.lines().collect();
                    let quoted = lines[lines.len().saturating_sub(QUOTED_LINES)..].join("\n");
                    EntryKind::Warning(format!("{}\n{quoted}", check.line()).trim().into())
                }
            }
            EventKind::GoalEnded { reason } => {
                self.goal.end(*reason);
                let turns = self.goal.turns();
                EntryKind::Notice(match reason {
                    GoalEnd::Met => format!("◎ goal met after {turns} turn(s)"),
                    GoalEnd::Budget => {
                        format!("◎ goal not met: its budget is spent ({turns} turn(s))")
                    }
                    GoalEnd::Stopped => "◎ goal stopped".to_string(),
                })
            }
            _ => return,
        };
        self.agent_entry(id, now).conversation.push(entry);
    }

    /// The status bar's goal: `◎ TEXT · ✗ 2/10` while one is active.
    pub fn goal_summary(&self) -> Option<(String, String)> {
        if !self.goal.is_active() {
            return None;
        }
        let goal = self.goal.goal.as_ref()?;
        let max = goal.max_turns;
        let last = match &self.goal.last {
            None => format!("0/{max}"),
            Some(c) if c.passed => format!("✓ {}/{max}", c.turn),
            Some(c) => format!("✗ {}/{max}", c.turn),
        };
        Some((goal.text.trim().to_string(), last))
    }
}
