//! The user's goal as the screen shows it: the status bar reads `goal`, and each of its
//! events is a line in the persona's conversation.

use super::{EntryKind, SessionState};
use crate::protocol::{AgentId, Goal, GoalCheck, GoalEnd, dollars};
use std::time::Instant;

/// Lines of a failing check's output its conversation line quotes.
const QUOTED_LINES: usize = 3;

impl SessionState {
    pub(super) fn goal_set(&mut self, id: AgentId, goal: &Goal, spent_usd: f64, now: Instant) {
        self.goal.set(goal, spent_usd);
        let cost = goal
            .max_cost_usd
            .map_or(String::new(), |d| format!(", {}", dollars(d)));
        let line = format!(
            "◎ goal: {} — met when {} (at most {} turns{cost})",
            goal.text.trim(),
            goal.end(),
            goal.max_turns
        );
        self.goal_line(id, EntryKind::Notice(line), now);
    }

    pub(super) fn goal_checked(&mut self, id: AgentId, check: &GoalCheck, now: Instant) {
        self.goal.checked(check);
        let entry = if check.passed {
            EntryKind::Notice(check.line())
        } else {
            let lines: Vec<&str> = check.output_tail.lines().collect();
            let quoted = lines[lines.len().saturating_sub(QUOTED_LINES)..].join("\n");
            EntryKind::Warning(format!("{}\n{quoted}", check.line()).trim().into())
        };
        self.goal_line(id, entry, now);
    }

    pub(super) fn goal_ended(&mut self, id: AgentId, reason: GoalEnd, now: Instant) {
        self.goal.end(reason);
        let turns = self.goal.turns();
        let line = match reason {
            GoalEnd::Met => format!("◎ goal met after {turns} turn(s)"),
            GoalEnd::Budget => format!("◎ goal not met: its budget is spent ({turns} turn(s))"),
            GoalEnd::Stopped => "◎ goal stopped".to_string(),
        };
        self.goal_line(id, EntryKind::Notice(line), now);
    }

    fn goal_line(&mut self, id: AgentId, entry: EntryKind, now: Instant) {
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
