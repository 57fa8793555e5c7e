//! Temporary and kept workers. A worker is temporary unless spawned with `keep`: once its
//! outcome has reached its supervisor (and it is not at work again) it holds no slot of
//! `max_live_agents`, and `[team] release_after_s` later it is released
//! ([`Team::release`], the one place that lets a worker go): its task ends, the runtime
//! drops its conversation (the log and the front ends keep it), and it takes no more
//! messages. A kept worker holds its slot until despawned: it may be spoken to at any
//! time, so it is work the limit has to count.

use super::roster::{Roster, is_live};
use super::{Agent, ContextState, History, Team};
use crate::protocol::{AgentId, AgentStatus, EventKind};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// One worker's life after its work.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Life {
    /// Spawned with `keep`: never released on its own.
    pub(super) keep: bool,
    pub(super) released: bool,
    /// When its latest outcome reached its supervisor; its release is due
    /// `release_after` later.
    pub(super) delivered_at: Option<Instant>,
    /// Counted in `Roster::free`; kept in step by [`Roster::resettle`].
    pub(super) slot_free: bool,
}

/// The team's side of releasing: when, and the timer's wake-up.
pub(super) struct Releases {
    after: Duration,
    wake: Notify,
}

impl Default for Releases {
    fn default() -> Self {
        Self::new(crate::config::TeamConfig::default().release_after())
    }
}

impl Releases {
    pub(super) fn new(after: Duration) -> Self {
        Self {
            after,
            wake: Notify::new(),
        }
    }

    /// When a release delivered at `at` is due; `None` (never) past the clock's range.
    fn due(&self, at: Instant) -> Option<Instant> {
        at.checked_add(self.after)
    }
}

impl Agent {
    /// Holds no slot of `max_live_agents`: a temporary worker resting with its outcome
    /// delivered, or one released. (Failed and cancelled agents hold none anyway.)
    pub(super) fn frees_slot(&self) -> bool {
        is_live(self.status)
            && self.parent.is_some()
            && !self.life.keep
            && (self.life.released
                || (self.delivered && self.life.delivered_at.is_some() && self.status.is_idle()))
    }
}

/// Whether a worker may be released now.
enum Releasable {
    Yes,
    /// Settled, but a worker below it is at work (the user spoke to it): later.
    Busy,
    No,
}

impl Roster {
    /// Brings `free` in step with the agent's state after a change to it.
    pub(super) fn resettle(&mut self, id: AgentId) {
        let Some(a) = self.get(&id) else {
            return;
        };
        let free = a.frees_slot();
        if a.parent.is_some() && (free || !is_live(a.status)) {
            // Its work is over: what it did not spend goes back (`team/carve.rs`).
            self.carve.end(id);
        }
        let Some(a) = self.get_mut(&id) else {
            return;
        };
        if free == a.life.slot_free {
            return;
        }
        a.life.slot_free = free;
        if free {
            self.free += 1;
        } else {
            self.free -= 1;
        }
    }

    /// The agent's outcome reached its supervisor at `now`: a temporary worker's slot is
    /// free and its release is queued. True if one was queued.
    pub(super) fn delivered(&mut self, id: AgentId, now: Instant) -> bool {
        let Some(a) = self.get_mut(&id) else {
            return false;
        };
        let queued = a.parent.is_some() && !a.life.keep && !a.life.released;
        if queued {
            a.life.delivered_at = Some(now);
            self.releases.push_back((id, now));
        }
        self.resettle(id);
        queued
    }

    /// `delivered_at`: the delivery a queued release is for (a later one queued its own).
    fn releasable(&self, id: AgentId, delivered_at: Option<Instant>) -> Releasable {
        let Some(a) = self.get(&id) else {
            return Releasable::No;
        };
        let settled = a.parent.is_some()
            && !a.life.keep
            && !a.life.released
            && a.delivered
            && a.life.delivered_at.is_some()
            && delivered_at.is_none_or(|at| a.life.delivered_at == Some(at))
            && matches!(
                a.status,
                AgentStatus::Completed | AgentStatus::Inactive | AgentStatus::Failed
            )
            && !a.is_busy();
        if !settled {
            return Releasable::No;
        }
        let mut below: Vec<AgentId> = a.children.clone();
        while let Some(c) = below.pop() {
            if let Some(child) = self.get(&c) {
                if child.is_busy() {
                    return Releasable::Busy;
                }
                below.extend(child.children.iter().copied());
            }
        }
        Releasable::Yes
    }
}

impl Team {
    /// Lets a worker go for good, with everything below it (all resting: a worker is
    /// released only when nothing under it works): each gets a `released` event, its task
    /// ends, its conversation is dropped here (the log keeps it), and it takes no more
    /// messages. Returns the agents released. The one place a worker is released, so
    /// whatever it holds (a worktree…) is cleaned up here or by its caller.
    pub fn release(&self, id: AgentId) -> Vec<AgentId> {
        let ids = self.subtree(id);
        let mut released = Vec::with_capacity(ids.len());
        {
            let mut agents = self.lock();
            for a in ids {
                let Some(e) = agents.get_mut(&a) else {
                    continue;
                };
                if e.parent.is_none() || e.life.released {
                    continue;
                }
                e.life.released = true;
                e.cancel.cancel();
                e.history = History::default();
                e.context = ContextState::of(&[]);
                e.notices = Vec::new();
                agents.resettle(a);
                released.push(a);
            }
        }
        for a in &released {
            self.emit(*a, EventKind::Released);
        }
        self.bump();
        released
    }

    pub fn is_released(&self, id: AgentId) -> bool {
        self.with(id, |a| a.life.released).unwrap_or(false)
    }

    /// Releases `id` if its release is due (the timer may not have come round to it
    /// yet); true if it is released, now or before.
    pub fn release_if_due(&self, id: AgentId, now: Instant) -> bool {
        let due = {
            let agents = self.lock();
            let Some(a) = agents.get(&id) else {
                return false;
            };
            if a.life.released {
                return true;
            }
            a.life
                .delivered_at
                .and_then(|at| self.releases.due(at))
                .is_some_and(|due| due <= now)
                && matches!(agents.releasable(id, None), Releasable::Yes)
        };
        if due {
            self.release(id);
        }
        due
    }

    /// Releases every worker whose release is due at `now`; returns how many were
    /// (descendants not counted).
    pub fn release_due(&self, now: Instant) -> usize {
        let mut due = Vec::new();
        {
            let mut agents = self.lock();
            while let Some(&(id, at)) = agents.releases.front() {
                if self.releases.due(at).is_none_or(|t| t > now) {
                    break;
                }
                agents.releases.pop_front();
                match agents.releasable(id, Some(at)) {
                    Releasable::Yes => due.push(id),
                    Releasable::Busy => {
                        // Put off by a full period, as if delivered now.
                        if let Some(a) = agents.get_mut(&id) {
                            a.life.delivered_at = Some(now);
                        }
                        agents.releases.push_back((id, now));
                    }
                    Releasable::No => {}
                }
            }
        }
        for id in &due {
            self.release(*id);
        }
        due.len()
    }

    /// When the next queued release is due.
    fn next_release(&self) -> Option<Instant> {
        let agents = self.lock();
        let (_, at) = agents.releases.front()?;
        self.releases.due(*at)
    }

    /// Wakes the release timer: a release was queued.
    pub(super) fn releases_changed(&self) {
        self.releases.wake.notify_one();
    }

    /// The release timer, for the life of the session: sleeps until the next release is
    /// due (or one is queued), releases what is due. Ends when the session is cancelled.
    pub async fn run_releases(&self) {
        let Some(closed) = self.with(self.root, |a| a.cancel.clone()) else {
            return;
        };
        loop {
            let next = self.next_release();
            let sleep = async {
                match next {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = closed.cancelled() => return,
                _ = self.releases.wake.notified() => {}
                _ = sleep => {}
            }
            self.release_due(Instant::now());
        }
    }

    /// On resume: temporary workers the log shows delivered (and not released) are due
    /// a full period from now, since the old process's clock is gone.
    pub fn restore_releases(&self) {
        let now = Instant::now();
        let mut agents = self.lock();
        let ids: Vec<AgentId> = agents
            .values()
            .filter(|a| {
                a.parent.is_some()
                    && a.delivered
                    && !a.life.keep
                    && !a.life.released
                    && matches!(
                        a.status,
                        AgentStatus::Completed | AgentStatus::Inactive | AgentStatus::Failed
                    )
            })
            .map(|a| a.id)
            .collect();
        let mut queued = false;
        for id in ids {
            queued |= agents.delivered(id, now);
        }
        for id in agents.keys().copied().collect::<Vec<_>>() {
            agents.resettle(id);
        }
        drop(agents);
        if queued {
            self.releases_changed();
        }
    }
}
