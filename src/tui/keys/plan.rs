//! `/lead` (Ctrl+L): the persona coordinates only, or writes again. And the keys of the
//! dialog for a worker's plan awaiting approval: `1` (or the highlighted
//! option and Enter) approves it, a typed reason and Enter rejects it with that reason,
//! Esc puts it aside for now (its supervisor may still decide; it comes back if the
//! worker submits again). Every key goes to it, none in its first moments.

use super::APPROVAL_GUARD;
use crate::protocol::Op;
use crate::tui::app::{Action, App};
use crate::tui::question::{APPROVE_PLAN, Reply};
use crate::tui::state::Dialog;
use crossterm::event::KeyEvent;
use std::time::Instant;

impl App {
    /// The state comes back as `coordinate_only`, which the status bar shows.
    pub(super) fn toggle_lead(&mut self, now: Instant) -> Vec<Action> {
        let on = !self.state.coordinate_only;
        self.set_notice(
            if on {
                "the lead coordinates only: no writing tools for it, its workers keep theirs"
            } else {
                "the lead may write again"
            },
            now,
        );
        vec![Action::Send(Op::SetCoordinateOnly { on })]
    }

    pub(super) fn plan_key(&mut self, key: KeyEvent, now: Instant) -> Vec<Action> {
        let Some(Dialog::Plan(p)) = self.state.dialog() else {
            return Vec::new();
        };
        let (agent_id, plan_id) = (p.agent_id, p.plan_id);
        let Some(view) = self.question.as_mut() else {
            return Vec::new();
        };
        if now.saturating_duration_since(view.shown) < APPROVAL_GUARD {
            return Vec::new();
        }
        let typed_nothing = view.typed().is_empty();
        let decided = match view.key(key, &[APPROVE_PLAN.to_string()]) {
            None => return Vec::new(),
            Some(Reply::Answer(text)) if typed_nothing && text == APPROVE_PLAN => {
                Some((true, String::new()))
            }
            Some(Reply::Answer(reason)) => Some((false, reason)),
            Some(Reply::Decline) => None,
        };
        self.state.resolve_plan(agent_id, plan_id);
        self.sync_dialogs(now);
        let Some((approve, reason)) = decided else {
            self.set_notice(
                "plan put aside: its supervisor may still decide (/tasks and the tree show it waiting)",
                now,
            );
            return Vec::new();
        };
        vec![Action::Send(Op::DecidePlan {
            agent_id,
            approve,
            reason,
        })]
    }
}
