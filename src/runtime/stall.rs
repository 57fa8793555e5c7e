//! Stall detection: a model call that streams nothing, or a tool call that does not end,
//! for `[guards] stall_after_s` marks its agent stalled (`stalled` event), and `unstalled`
//! follows when it moves again or ends. Only a mark for the user, who may cancel the agent;
//! the model call's idle timeout stays the hard limit.
//!
//! The hot path (every streamed chunk) only stores a timestamp in a [`Pulse`]; a timer
//! beside the call looks at it when the call could first be stalled, then every so often
//! while it is.

use super::team::Team;
use crate::protocol::{AgentId, EventKind};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// When a call last made progress: milliseconds since it started, one relaxed store a beat.
pub struct Pulse {
    start: Instant,
    last_ms: AtomicU64,
}

impl Default for Pulse {
    fn default() -> Self {
        Self {
            start: Instant::now(),
            last_ms: AtomicU64::new(0),
        }
    }
}

impl Pulse {
    /// The call made progress (bytes arrived, a retry began).
    pub fn beat(&self) {
        let ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    fn last(&self) -> u64 {
        self.last_ms.load(Ordering::Relaxed)
    }

    /// Time since the last beat (or the start).
    fn quiet_for(&self) -> Duration {
        self.start
            .elapsed()
            .saturating_sub(Duration::from_millis(self.last()))
    }
}

/// Runs `work` for `agent`, telling the front ends when `pulse` has been quiet for `after`
/// (`stalled`, with `on()` saying what it is stuck on) and when it beats again or `work`
/// ends (`unstalled`). `after: None` just runs it.
pub async fn watch<F: Future>(
    team: &Team,
    agent: AgentId,
    after: Option<Duration>,
    pulse: &Pulse,
    on: impl FnOnce() -> String,
    work: F,
) -> F::Output {
    let Some(after) = after else {
        return work.await;
    };
    // While stalled, how often to look for progress again.
    let recheck = (after / 4).clamp(Duration::from_millis(100), Duration::from_secs(1));
    // Worked out once, at the first stall: most calls never stall.
    let mut on = Some(on);
    let mut label: Option<String> = None;
    // The beat the stall was seen at; any later beat ends it.
    let mut stalled_at: Option<u64> = None;
    tokio::pin!(work);
    loop {
        let wait = match stalled_at {
            Some(_) => recheck,
            None => after.saturating_sub(pulse.quiet_for()),
        };
        tokio::select! {
            out = &mut work => {
                if stalled_at.is_some() {
                    team.emit(agent, EventKind::Unstalled);
                }
                return out;
            }
            _ = tokio::time::sleep(wait) => {}
        }
        match stalled_at {
            Some(at) if pulse.last() != at => {
                stalled_at = None;
                team.emit(agent, EventKind::Unstalled);
            }
            Some(_) => {}
            None => {
                let quiet = pulse.quiet_for();
                if quiet >= after {
                    stalled_at = Some(pulse.last());
                    let on = label
                        .get_or_insert_with(|| on.take().map_or_else(String::new, |f| f()))
                        .clone();
                    team.emit(
                        agent,
                        EventKind::Stalled {
                            on,
                            since_s: quiet.as_secs(),
                        },
                    );
                }
            }
        }
    }
}
