//! The user's goal (`/goal`, `exec --goal`): a sentence, a command that says whether it
//! holds, and a budget. While it is active the persona's turns do not end the work: after
//! each, the check runs in the persona's sandbox, and a failing check sends the persona
//! back to work with what failed, until it passes, the budget is spent, or the user stops
//! it. Continuing is what the user asked for, not squad's guess, so it is not bounded by
//! the layers' few continues in a row (`agent.rs`) but by the goal's own turns and dollars.
//!
//! The state is the session's (`Goals`, shared by `Op::SetGoal`, `/stop` and the layer)
//! and every change is a durable event (`goal_set`, `goal_checked`, `goal_ended`), so a
//! resumed session folds them back (`GoalTrack`) and goes on toward an active goal.

pub mod layer;

#[cfg(test)]
mod tests;

use crate::protocol::{Goal, GoalCheck, GoalEnd, GoalTrack};
use crate::runtime::team::Team;
use std::sync::Mutex;

/// Why the user's `/goal` was refused (after `goal: `, `protocol::GOAL_REFUSED`).
#[derive(Debug, thiserror::Error)]
pub enum GoalRefused {
    #[error("no goal is set")]
    NoGoal,
    /// What `Goal::validate` said of it.
    #[error("{0}")]
    Invalid(String),
    #[error(
        "the goal's check is the project's rules, and none are configured: no \
         [tools] test_command, no [[verify.rules]]; give it --check CMD"
    )]
    NoRules,
}
/// The session's goal, if one was set.
#[derive(Default)]
pub struct Goals {
    track: Mutex<GoalTrack>,
}

/// What follows a check.
#[derive(Debug, PartialEq)]
pub enum Next {
    /// The goal ended (or was replaced or cleared while the check ran): the persona rests.
    Rest,
    /// Not met and budget left: the persona goes on.
    Again,
}

impl Goals {
    /// As a resumed log left it (`None`: a new session).
    pub fn new(restored: Option<GoalTrack>) -> Self {
        Self {
            track: Mutex::new(restored.unwrap_or_default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, GoalTrack> {
        crate::sync::lock(&self.track)
    }

    /// The goal being worked toward, and the turns spent on it.
    pub fn active(&self) -> Option<(Goal, u32)> {
        let t = self.lock();
        if !t.is_active() {
            return None;
        }
        t.goal.clone().map(|g| (g, t.turns()))
    }

    /// `Op::SetGoal`: a new goal replaces the active one; `None` stops it.
    pub fn set(&self, team: &Team, goal: Option<Goal>) -> Result<(), GoalRefused> {
        let Some(goal) = goal else {
            return match self.end_active(team, GoalEnd::Stopped) {
                true => Ok(()),
                false => Err(GoalRefused::NoGoal),
            };
        };
        goal.validate().map_err(GoalRefused::Invalid)?;
        let spent_usd = team.session_cost();
        self.lock().set(&goal, spent_usd);
        let kind = crate::protocol::EventKind::GoalSet { goal, spent_usd };
        team.emit(team.root(), kind);
        Ok(())
    }

    /// Ends the active goal for `reason`; false when there was none.
    pub fn end_active(&self, team: &Team, reason: GoalEnd) -> bool {
        let mut t = self.lock();
        if !t.is_active() {
            return false;
        }
        t.end(reason);
        drop(t);
        team.emit(
            team.root(),
            crate::protocol::EventKind::GoalEnded { reason },
        );
        true
    }

    /// Records a check of `goal` and says what follows: met, budget spent, or again. A
    /// check of a goal no longer active (cleared or replaced while it ran) is dropped.
    pub fn checked(&self, team: &Team, goal: &Goal, check: GoalCheck) -> Next {
        let mut t = self.lock();
        if !t.is_active() || t.goal.as_ref() != Some(goal) {
            return Next::Rest;
        }
        t.checked(&check);
        let spent = team.session_cost() - t.spent_at_set;
        let end = if check.passed {
            Some(GoalEnd::Met)
        } else if check.turn >= goal.max_turns || goal.max_cost_usd.is_some_and(|m| spent >= m) {
            Some(GoalEnd::Budget)
        } else {
            None
        };
        if let Some(reason) = end {
            t.end(reason);
        }
        drop(t);
        team.emit(team.root(), crate::protocol::EventKind::GoalChecked(check));
        match end {
            Some(reason) => {
                team.emit(
                    team.root(),
                    crate::protocol::EventKind::GoalEnded { reason },
                );
                Next::Rest
            }
            None => Next::Again,
        }
    }
}
