//! Pausing the whole team: while paused, no model call and no tool call starts anywhere in
//! the tree. Calls already in flight finish (a model call cancelled half-way wastes what it
//! already cost, and a tool call cut off may leave a half-written change); the next one
//! waits here. The agent that waits shows `paused` until the team goes on.

use crate::protocol::{AgentId, AgentStatus};
use crate::runtime::team::Team;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

pub struct PauseGate {
    paused: watch::Sender<bool>,
}

impl PauseGate {
    pub fn new(paused: bool) -> Self {
        Self {
            paused: watch::Sender::new(paused),
        }
    }

    /// Pauses or goes on; false when it already was so.
    pub fn set(&self, paused: bool) -> bool {
        self.paused
            .send_if_modified(|p| std::mem::replace(p, paused) != paused)
    }

    pub fn is_paused(&self) -> bool {
        *self.paused.borrow()
    }

    /// Returns at once unless paused; otherwise marks `agent` paused, waits until the team
    /// goes on, and marks it as it was again (calls of one batch may wait together: the
    /// status before the first of them is what comes back). False when `cancel` fired first.
    pub async fn pass(&self, team: &Team, agent: AgentId, cancel: &CancellationToken) -> bool {
        let mut rx = self.paused.subscribe();
        if !*rx.borrow_and_update() {
            return true;
        }
        let before = (team.status(agent))
            .filter(|s| *s != AgentStatus::Paused)
            .unwrap_or(AgentStatus::Running);
        team.set_status(agent, AgentStatus::Paused, None);
        let went_on = loop {
            if !*rx.borrow_and_update() {
                break true;
            }
            tokio::select! {
                changed = rx.changed() => if changed.is_err() { break true },
                _ = cancel.cancelled() => break false,
            }
        };
        if went_on {
            team.set_status(agent, before, None);
        }
        went_on
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_reports_changes_only() {
        let gate = PauseGate::new(false);
        assert!(!gate.set(false));
        assert!(gate.set(true));
        assert!(*gate.paused.borrow());
        assert!(!gate.set(true));
        assert!(gate.set(false));
        assert!(!*gate.paused.borrow());
    }
}
