//! Whether a kept worker rests with nothing to do, so the board may offer it its next
//! task (`tasks/claims.rs`).

use super::Team;
use crate::protocol::AgentId;

impl Team {
    /// Kept, alive, between turns with nothing queued (a worker that just finished its
    /// turn counts: it settles next), and not held by the user.
    pub fn rests_kept(&self, id: AgentId) -> bool {
        self.with(id, |a| {
            a.life.keep
                && !a.life.released
                && !a.cancel.is_cancelled()
                && super::roster::is_live(a.status)
                && !a.in_turn
                && a.queued == 0
                && !a.hold
        })
        .unwrap_or(false)
    }
}
