//! A goal: a sentence the user wants true, a command that says whether it is, and a budget.
//! The persona keeps working across turns until the check passes, the budget is spent, or
//! the user stops it (`runtime/policies/goal`). The types the `goal_*` events carry, and
//! the one fold of those events that the TUI and replay both read.

use serde::{Deserialize, Serialize};

/// How the core's `error` refusing an `Op::SetGoal` begins, so a front end waiting for
/// `goal_set` knows this error is its answer.
pub const GOAL_REFUSED: &str = "goal: ";

/// Turns a goal gets when the user names none.
pub const DEFAULT_GOAL_TURNS: u32 = 10;

/// What the user asked for (`/goal`, `exec --goal`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Goal {
    /// The sentence, as the user wrote it.
    pub text: String,
    /// A shell command run in the persona's sandbox after each of its turns: exit 0 is met.
    /// Empty when `rules` is the whole check.
    #[serde(default)]
    pub check: String,
    /// The project's own checks must pass too: its test command and its `[[verify.rules]]`
    /// commands, as a worker's result is checked.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rules: bool,
    /// Checks (one per turn) before the goal ends as `budget`.
    #[serde(default = "default_turns")]
    pub max_turns: u32,
    /// US dollars the session may spend on it from when it was set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
}

fn default_turns() -> u32 {
    DEFAULT_GOAL_TURNS
}

impl Goal {
    pub fn new(text: impl Into<String>, check: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            check: check.into(),
            rules: false,
            max_turns: DEFAULT_GOAL_TURNS,
            max_cost_usd: None,
        }
    }

    /// Whether the session can work toward it: words, a command, a budget above nothing.
    pub fn validate(&self) -> Result<(), String> {
        if self.text.trim().is_empty() {
            return Err("a goal needs a sentence".into());
        }
        if self.check.trim().is_empty() && !self.rules {
            return Err("a goal needs a check: a command (--check CMD) or --rules".into());
        }
        if self.max_turns == 0 {
            return Err("a goal needs at least one turn".into());
        }
        if self.max_cost_usd.is_some_and(|d| d.is_nan() || d <= 0.0) {
            return Err("a goal's budget must be above $0".into());
        }
        Ok(())
    }

    /// The message that starts the work when the user gave no other.
    pub fn brief(&self) -> String {
        format!(
            "Goal: {}\nIt is met when {}; I check after each of your turns.",
            self.text.trim(),
            self.end()
        )
    }

    /// What its check is, in words: "the command `make` exits 0", "the project's checks
    /// pass", or both.
    pub fn end(&self) -> String {
        let command = format!("the command `{}` exits 0", self.check.trim());
        match (self.check.trim().is_empty(), self.rules) {
            (false, false) => command,
            (true, _) => "the project's checks (its test command and verify rules) pass".into(),
            (false, true) => format!("{command} and the project's checks pass"),
        }
    }
}

/// One run of the goal's check, after the persona's `turn`th turn toward it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GoalCheck {
    pub turn: u32,
    pub max_turns: u32,
    pub passed: bool,
    /// `None`: killed, timed out, or it could not start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The end of its output (a few lines, clipped).
    #[serde(default)]
    pub output_tail: String,
}

impl GoalCheck {
    /// `passed` / `failed (exit 1)`.
    pub fn verdict(&self) -> String {
        match (self.passed, self.exit_code) {
            (true, _) => "passed".into(),
            (false, Some(code)) => format!("failed (exit {code})"),
            (false, None) => "failed (did not finish)".into(),
        }
    }

    /// `◎ goal check 2/10: failed (exit 1)`, the same in every front end.
    pub fn line(&self) -> String {
        format!(
            "◎ goal check {}/{}: {}",
            self.turn,
            self.max_turns,
            self.verdict()
        )
    }
}

/// Why a goal ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GoalEnd {
    /// Its check passed.
    Met,
    /// Its turns or dollars were spent with the check still failing.
    Budget,
    /// The user stopped it (`/stop`, `/goal clear`).
    Stopped,
}

impl GoalEnd {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Met => "met",
            Self::Budget => "budget spent",
            Self::Stopped => "stopped",
        }
    }
}

/// A goal as its events leave it: replay resumes an active one, the TUI draws it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GoalTrack {
    pub goal: Option<Goal>,
    /// What the session had spent when it was set (its dollars count from there).
    pub spent_at_set: f64,
    pub last: Option<GoalCheck>,
    /// How the latest goal ended; `None` while it is active (or none was set).
    pub ended: Option<GoalEnd>,
}

impl GoalTrack {
    pub fn set(&mut self, goal: &Goal, spent_usd: f64) {
        *self = Self {
            goal: Some(goal.clone()),
            spent_at_set: spent_usd,
            last: None,
            ended: None,
        };
    }

    pub fn checked(&mut self, check: &GoalCheck) {
        self.last = Some(check.clone());
    }

    pub fn end(&mut self, reason: GoalEnd) {
        if self.is_active() {
            self.ended = Some(reason);
        }
    }

    pub fn is_active(&self) -> bool {
        self.goal.is_some() && self.ended.is_none()
    }

    /// Turns spent on the goal so far.
    pub fn turns(&self) -> u32 {
        self.last.as_ref().map_or(0, |c| c.turn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_track_is_active_from_set_to_end() {
        let mut t = GoalTrack::default();
        assert!(!t.is_active());
        t.set(&Goal::new("fix it", "true"), 0.5);
        assert!(t.is_active());
        let check = GoalCheck {
            turn: 2,
            max_turns: 10,
            passed: false,
            exit_code: Some(1),
            output_tail: String::new(),
        };
        t.checked(&check);
        assert_eq!(t.turns(), 2);
        assert_eq!(check.line(), "◎ goal check 2/10: failed (exit 1)");
        t.end(GoalEnd::Met);
        assert!(!t.is_active());
        assert_eq!(t.ended, Some(GoalEnd::Met));
    }

    #[test]
    fn a_goal_without_turns_gets_the_default() {
        let g: Goal = serde_json::from_str(r#"{"text":"t","check":"c"}"#).unwrap();
        assert_eq!(g.max_turns, DEFAULT_GOAL_TURNS);
    }
}
