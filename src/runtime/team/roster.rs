//! The agents of a team with the counts the scheduler asks on every status change.

use super::Agent;
use crate::protocol::{AgentId, AgentStatus};
use std::collections::{HashMap, VecDeque};
use std::time::Instant;

/// Deliveries in the order they happened, each waiting for its release
/// (`team/release.rs`): with one delay for all, the front is always the next one due.
pub(super) type ReleaseQueue = VecDeque<(AgentId, Instant)>;

/// The agents, with counts kept as statuses change so the checks made on every status
/// change (is the tree idle? how many are live?) do not walk ten thousand agents.
#[derive(Default)]
pub(super) struct Roster {
    map: HashMap<AgentId, Agent>,
    /// Agents running or waiting.
    pub(super) active: usize,
    /// Agents not failed or cancelled.
    pub(super) live: usize,
    /// Live agents that hold no slot of `max_live_agents` (`team/release.rs`).
    pub(super) free: usize,
    /// Releases waiting for their time, oldest delivery first.
    pub(super) releases: ReleaseQueue,
    /// Agents with input not yet taken up.
    pub(super) queued: usize,
    /// Most agents active at once since memory was last given back.
    pub(super) peak_active: usize,
    /// What the whole session has spent, in US dollars (`limits.max_session_cost_usd`).
    pub(super) cost_usd: f64,
    /// The last teammate's message id given (`team/mail.rs`).
    pub(super) next_mail: u64,
    /// Budgets set aside for workers and given back (`team/carve.rs`).
    pub(super) carve: super::carve::Ledger,
    /// The session's limit in US dollars: the persona's purse.
    pub(super) session_usd: Option<f64>,
}

impl std::ops::Deref for Roster {
    type Target = HashMap<AgentId, Agent>;
    fn deref(&self) -> &Self::Target {
        &self.map
    }
}

impl std::ops::DerefMut for Roster {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.map
    }
}

pub(super) fn is_live(status: AgentStatus) -> bool {
    !matches!(status, AgentStatus::Failed | AgentStatus::Cancelled)
}

impl Roster {
    /// Adjusts the counts for one agent's status going from `old` to `new`.
    pub(super) fn count_status(&mut self, old: Option<AgentStatus>, new: AgentStatus) {
        if let Some(old) = old {
            self.active -= usize::from(!old.is_idle());
            self.live -= usize::from(is_live(old));
        }
        self.active += usize::from(!new.is_idle());
        self.live += usize::from(is_live(new));
        self.peak_active = self.peak_active.max(self.active);
    }

    /// Whether a burst of workers just ended (at most the supervisor is left at work):
    /// the moment to give the allocator's freed memory back.
    pub(super) fn burst_ended(&mut self) -> bool {
        if self.active <= 1 && self.peak_active >= BURST {
            self.peak_active = self.active;
            return true;
        }
        false
    }
}

/// Agents active at once that count as a burst worth giving memory back after.
const BURST: usize = 64;
