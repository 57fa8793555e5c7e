//! The session's model requests in flight, under a limit that may move (see `in_flight` for
//! where it starts). squad holds a request back here, before its timeout starts, until
//! the limit lets it go; the request then tells how it went, and an adaptive limit moves:
//! additive increase, multiplicative decrease (AIMD).
//!
//! - Down: on 429/503 (halved, once for the requests sent under one limit), and on a
//!   local server when a reply waited in the server's queue (to what it tells the server
//!   serves at once: those in flight before it, over the typical requests' time it
//!   waited). A reply waited there when most of its wait for the first
//!   byte passed before a request sent before it ended, its first byte came about a
//!   typical time to first byte after that end, and it came slower than typical: a
//!   server that serves N at once starts the next only when one ends, so its time to
//!   first byte grows with the number in flight past N.
//! - Up: by one for a clean first byte while requests wait for the limit (until the first
//!   sign of overload), then by one every `3 × limit` such replies: each step up may
//!   keep one more waiting in a queue, so it is not tried often.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The most an adaptive limit grows to: `limits.max_live_agents`' default, plus room.
pub const MAX_ADAPTIVE: u32 = 16;
/// A reply counts as queued when at least this share of its wait for the first byte
/// passed before another request ended (a queued one waits for an end, then is served),
const QUEUED_SHARE: f64 = 0.4;
/// ... the first byte came at least this share of a typical time to first byte, and of
/// the wait before, after that end (the server began it then: not an end that merely
/// fell in its wait),
const SERVED_AFTER: f64 = 0.5;
const SERVED_AFTER_WAIT: f64 = 0.25;
/// ... and it took at least this many times a typical time to first byte.
const SLOWER_THAN_TYPICAL: f64 = 1.5;
/// Times to first byte kept for "typical" (their median), and ends kept.
const RECENT: usize = 16;
/// After the first sign of overload, clean replies (while requests wait) per step up, per
/// request of the limit.
const CLEAN_PER_STEP: u32 = 3;

/// What moves the limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Adapt {
    /// Nothing: configured, or the server said its slots.
    Fixed,
    /// 429/503 only: a remote API's queue is not the session's to see.
    Overload,
    /// 429/503 and replies that waited in the server's queue: a local server.
    Queue,
}

pub struct Limiter {
    slots: Arc<Semaphore>,
    adapt: Adapt,
    state: Mutex<State>,
}

struct State {
    limit: u32,
    /// Permits to swallow as they come back, after a shrink found fewer free.
    debt: u32,
    in_flight: u32,
    /// Requests waiting for the limit.
    waiting: u32,
    /// Grow on every clean reply, until the first sign of overload.
    slow_start: bool,
    /// Clean replies while requests waited, since the limit last moved.
    clean: u32,
    /// Bumped on each decrease: a 429 of a request sent before it is of an older limit.
    epoch: u64,
    /// The latest ends: when, and when that request was sent.
    ends: VecDeque<(Instant, Instant)>,
    /// Recent first attempts' times to first byte, of replies served at once.
    recent: VecDeque<Duration>,
    /// How long those requests took, sent to end.
    durations: VecDeque<Duration>,
}

impl Limiter {
    pub fn new(start: u32, adapt: Adapt) -> Arc<Self> {
        let limit = start.max(1);
        Arc::new(Self {
            slots: Arc::new(Semaphore::new(limit as usize)),
            adapt,
            state: Mutex::new(State {
                limit,
                debt: 0,
                in_flight: 0,
                waiting: 0,
                slow_start: true,
                clean: 0,
                epoch: 0,
                ends: VecDeque::new(),
                recent: VecDeque::new(),
                durations: VecDeque::new(),
            }),
        })
    }

    /// A limit that never moves (tests, and what a config or the server fixes).
    pub fn fixed(limit: u32) -> Arc<Self> {
        Self::new(limit, Adapt::Fixed)
    }

    pub fn limit(&self) -> u32 {
        self.lock().limit
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits for room under the limit. Cancel-safe: a dropped wait holds nothing.
    pub async fn acquire(self: &Arc<Self>) -> Permit {
        let waiting = Waiting::new(self);
        // The semaphore is never closed; were it, the request goes without a slot.
        let slot = self.slots.clone().acquire_owned().await.ok();
        drop(waiting);
        let mut s = self.lock();
        s.in_flight += 1;
        Permit {
            limiter: self.clone(),
            slot,
            sent: Instant::now(),
            in_flight: s.in_flight,
            epoch: s.epoch,
            seen: AtomicBool::new(false),
            retried: AtomicBool::new(false),
            clean: AtomicBool::new(false),
        }
    }

    /// Lowers the limit to `to` (never below 1), and says so in the log.
    fn decrease(&self, s: &mut State, to: u32, why: &str) {
        let to = to.max(1);
        s.slow_start = false;
        s.clean = 0;
        if to >= s.limit {
            return;
        }
        s.epoch += 1;
        let cut = s.limit - to;
        let forgotten = self.slots.forget_permits(cut as usize) as u32;
        s.debt += cut - forgotten;
        tracing::info!(from = s.limit, to, why, "model requests in flight");
        s.limit = to;
    }

    fn increase(&self, s: &mut State) {
        if s.limit >= MAX_ADAPTIVE {
            return;
        }
        s.clean = 0;
        if s.debt > 0 {
            s.debt -= 1;
        } else {
            self.slots.add_permits(1);
        }
        tracing::info!(
            from = s.limit,
            to = s.limit + 1,
            why = "replies come at once while requests wait",
            "model requests in flight"
        );
        s.limit += 1;
    }
}

/// Counts a request waiting for the limit while it waits (dropped when it gets in or its
/// wait is cancelled).
struct Waiting<'a>(&'a Limiter);

impl<'a> Waiting<'a> {
    fn new(limiter: &'a Limiter) -> Self {
        limiter.lock().waiting += 1;
        Self(limiter)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut s = self.0.lock();
        s.waiting = s.waiting.saturating_sub(1);
    }
}

/// One request's room under the limit, held until it ends; what the request tells it
/// moves an adaptive limit.
pub struct Permit {
    limiter: Arc<Limiter>,
    slot: Option<OwnedSemaphorePermit>,
    sent: Instant,
    /// In flight when it was let go, itself included.
    in_flight: u32,
    epoch: u64,
    seen: AtomicBool,
    retried: AtomicBool,
    /// Its first byte came at once: its length is a typical request's.
    clean: AtomicBool,
}

impl Permit {
    /// The request goes out now: its time to first byte counts from here.
    pub fn sending(&mut self) {
        self.sent = Instant::now();
    }

    /// The first byte of the answer arrived (only a first attempt's counts).
    pub fn first_byte(&self) {
        if self.seen.swap(true, Ordering::Relaxed) || self.retried.load(Ordering::Relaxed) {
            return;
        }
        let limiter = &self.limiter;
        if limiter.adapt == Adapt::Fixed {
            return;
        }
        let now = Instant::now();
        let ttfb = now.duration_since(self.sent);
        let mut s = limiter.lock();
        let typical = median(&s.recent);
        if limiter.adapt == Adapt::Queue && self.queued(&s, now, typical) {
            let to = self.served_at_once(&s, now);
            limiter.decrease(&mut s, to, "a reply waited in the server's queue");
            return;
        }
        // Only replies served at once say what is typical: queued ones would raise it
        // until no wait looked long.
        if s.recent.len() == RECENT {
            s.recent.pop_front();
        }
        s.recent.push_back(ttfb);
        self.clean.store(true, Ordering::Relaxed);
        if s.waiting == 0 {
            return; // the limit held nobody back: no sign more would help
        }
        s.clean += 1;
        if s.slow_start || s.clean >= CLEAN_PER_STEP * s.limit {
            limiter.increase(&mut s);
        }
    }

    /// Whether this reply waited in the server's queue: most of its wait passed before
    /// a request sent before it ended, the server began it then, and it was slower than
    /// typical.
    fn queued(&self, s: &State, now: Instant, typical: Option<Duration>) -> bool {
        let end = s
            .ends
            .iter()
            .filter(|(end, sent)| *sent <= self.sent && *end > self.sent)
            .map(|(end, _)| *end)
            .max();
        let (Some(end), Some(typical)) = (end, typical) else {
            return false;
        };
        let ttfb = now.duration_since(self.sent);
        let (wait, after) = (end.duration_since(self.sent), now.duration_since(end));
        self.in_flight > 1
            && wait >= ttfb.mul_f64(QUEUED_SHARE)
            && after >= typical.mul_f64(SERVED_AFTER)
            && after >= wait.mul_f64(SERVED_AFTER_WAIT)
            && ttfb >= typical.mul_f64(SLOWER_THAN_TYPICAL)
    }

    /// How many the server serves at once, as this queued reply tells: it waited about
    /// `rounds` typical requests' time for those sent before it, so the server served
    /// at most `(in flight - 1) / rounds` of them at a time.
    fn served_at_once(&self, s: &State, now: Instant) -> u32 {
        let ttfb = now.duration_since(self.sent);
        let typical = median(&s.durations)
            .or_else(|| median(&s.recent))
            .unwrap_or(ttfb);
        let rounds = (ttfb.saturating_sub(typical.min(ttfb)).as_secs_f64()
            / typical.as_secs_f64().max(1e-3))
        .round()
        .max(1.0);
        (((self.in_flight - 1) as f64 / rounds).floor() as u32).max(1)
    }

    /// The attempt failed and the request is tried again; `overloaded`: the server said
    /// 429 or 503.
    pub fn retrying(&self, overloaded: bool) {
        self.retried.store(true, Ordering::Relaxed);
        if overloaded {
            self.overloaded();
        }
    }

    /// The server said 429 or 503: halve the limit, once per limit.
    pub fn overloaded(&self) {
        let limiter = &self.limiter;
        if limiter.adapt == Adapt::Fixed {
            return;
        }
        let mut s = limiter.lock();
        if s.epoch == self.epoch {
            let to = s.limit / 2;
            limiter.decrease(&mut s, to, "the server answered 429/503");
        }
    }
}

/// The median of the recent times to first byte (`None`: none yet).
fn median(recent: &VecDeque<Duration>) -> Option<Duration> {
    let mut sorted: Vec<Duration> = recent.iter().copied().collect();
    sorted.sort();
    sorted.get(sorted.len() / 2).copied()
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut s = self.limiter.lock();
        s.in_flight = s.in_flight.saturating_sub(1);
        let now = Instant::now();
        if s.ends.len() == RECENT {
            s.ends.pop_front();
        }
        s.ends.push_back((now, self.sent));
        if self.clean.load(Ordering::Relaxed) && !self.retried.load(Ordering::Relaxed) {
            if s.durations.len() == RECENT {
                s.durations.pop_front();
            }
            s.durations.push_back(now.duration_since(self.sent));
        }
        if s.debt > 0
            && let Some(slot) = self.slot.take()
        {
            slot.forget();
            s.debt -= 1;
        }
    }
}

#[cfg(test)]
mod tests;
