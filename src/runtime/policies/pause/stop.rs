//! The user's `/stop`: the team's work ends, the session stays open.

use super::gate::PauseGate;
use crate::protocol::EventKind;
use crate::runtime::team::Team;

/// Every worker cancelled (descendants included), the persona's turn ended; the session
/// stays open. A stop also lifts a pause: the next message starts afresh.
pub fn stop(team: &Team, pause: &PauseGate) {
    let root = team.root();
    let cancelled: usize = team
        .children(root)
        .into_iter()
        .filter(|c| !team.is_settled(*c))
        .map(|c| team.cancel_subtree(c, "stopped by the user"))
        .sum();
    team.interrupt(root);
    if pause.set(false) {
        team.emit(root, EventKind::Resumed);
    }
    team.emit(root, EventKind::Stopped { cancelled });
}
