//! Task figures (seed 001's metrics): how many tasks workers took on, finished and failed,
//! how often their results were sent back for correction. They are folded from the event
//! stream, so the live runtime, a resumed session and the TUI count the same way from the
//! same facts.

use super::{AgentId, Event, EventKind, HistoryItem, ResultStatus, TurnEnd};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::time::Instant;

/// Counts for one agent or a whole session. Rates are derived, never stored, so sums of
/// these stay exact.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskMetrics {
    /// Tasks given to the worker: its first message and each follow-up after a result.
    pub started: u64,
    /// Finished with a successful result that passed its checks (or an answer without
    /// `return_results`).
    pub completed: u64,
    /// Finished otherwise: an honest failure or partial result, failed checks after the
    /// last correction, an error, or the iteration limit.
    pub failed: u64,
    /// Correction rounds: results sent back to the worker.
    pub corrections: u64,
    /// Tasks completed without a single correction.
    pub first_pass: u64,
    /// Results whose checks ended (passed, or out of corrections).
    pub verified: u64,
    /// Of those, results that failed their checks at least once.
    pub caught: u64,
    /// Time from task start to its end, summed over `timed` tasks (tasks read back from a
    /// log have no clock).
    pub task_ms: u64,
    pub timed: u64,
}

impl TaskMetrics {
    pub fn add(&mut self, o: &TaskMetrics) {
        self.started += o.started;
        self.completed += o.completed;
        self.failed += o.failed;
        self.corrections += o.corrections;
        self.first_pass += o.first_pass;
        self.verified += o.verified;
        self.caught += o.caught;
        self.task_ms += o.task_ms;
        self.timed += o.timed;
    }

    pub fn finished(&self) -> u64 {
        self.completed + self.failed
    }

    /// Finished tasks that were completed without a correction.
    pub fn first_pass_rate(&self) -> Option<f64> {
        ratio(self.first_pass, self.finished())
    }

    /// Checked results that were corrections (a result returned again after a failed check).
    pub fn retry_rate(&self) -> Option<f64> {
        ratio(self.corrections, self.corrections + self.verified)
    }

    /// Checked results that failed at least once: what verification caught.
    pub fn catch_rate(&self) -> Option<f64> {
        ratio(self.caught, self.verified)
    }

    pub fn avg_task_ms(&self) -> Option<u64> {
        (self.timed > 0).then(|| self.task_ms / self.timed)
    }

    /// `"75%"`, or `"–"` when there is nothing to measure.
    pub fn percent(rate: Option<f64>) -> String {
        rate.map_or_else(|| "–".to_string(), |r| format!("{:.0}%", r * 100.0))
    }
}

fn ratio(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

/// The fold: every worker's open task and its counts.
#[derive(Clone, Debug, Default)]
pub struct TaskTally {
    agents: HashMap<AgentId, Tasks>,
}

#[derive(Clone, Debug, Default)]
struct Tasks {
    worker: bool,
    open: Option<Open>,
    /// How the worker's last turn ended, to tell a finished task from an interrupted one.
    last_end: Option<TurnEnd>,
    /// Whether the result returned for the open task is a success that passed its checks.
    result_ok: Option<bool>,
    /// Whether the latest verdict passed, for the result that follows it.
    verdict_passed: Option<bool>,
    metrics: TaskMetrics,
}

#[derive(Clone, Debug)]
struct Open {
    since: Option<Instant>,
    corrections: u32,
}

impl TaskTally {
    /// Folds one event in. `now` is when it happened, or `None` for events read back from
    /// a log (their tasks are counted but not timed).
    pub fn observe(&mut self, ev: &Event, now: Option<Instant>) {
        use super::AgentStatus as S;
        let relevant = matches!(
            ev.kind,
            EventKind::AgentSpawned { .. }
                | EventKind::ItemAdded {
                    item: HistoryItem::User { .. }
                }
                | EventKind::Verification(_)
                | EventKind::ResultReturned { .. }
                | EventKind::TurnFinished { .. }
                | EventKind::AgentStatus { .. }
                | EventKind::Despawned { .. }
        );
        if !relevant {
            return;
        }
        let t = self.agents.entry(ev.agent_id).or_default();
        match &ev.kind {
            EventKind::AgentSpawned { parent_id, .. } => t.worker = parent_id.is_some(),
            EventKind::ItemAdded { .. } if t.worker && t.open.is_none() => {
                t.open = Some(Open {
                    since: now,
                    corrections: 0,
                });
                t.metrics.started += 1;
                t.result_ok = None;
                t.last_end = None;
            }
            EventKind::Verification(v) => {
                t.verdict_passed = Some(v.passed);
                if !v.passed && v.attempt <= v.max_corrections {
                    t.metrics.corrections += 1;
                    if let Some(open) = &mut t.open {
                        open.corrections += 1;
                    }
                } else {
                    t.metrics.verified += 1;
                    if v.attempt > 1 || !v.passed {
                        t.metrics.caught += 1;
                    }
                }
            }
            EventKind::ResultReturned { result, .. } => {
                let passed = t
                    .verdict_passed
                    .take()
                    .or(result.verification.as_ref().map(|v| v.passed));
                t.result_ok = Some(result.status == ResultStatus::Success && passed != Some(false));
            }
            EventKind::TurnFinished { end } => t.last_end = Some(*end),
            EventKind::AgentStatus { status, .. } => match status {
                S::Completed => t.finish(t.result_ok.unwrap_or(true), now),
                S::Failed => t.finish(false, now),
                S::Inactive => match t.last_end {
                    // Interrupted: the task goes on with the next message.
                    Some(TurnEnd::Interrupted) => {}
                    Some(TurnEnd::MaxIterations | TurnEnd::Error) => t.finish(false, now),
                    _ => t.finish(true, now),
                },
                S::Cancelled => t.open = None,
                // Paused or cut off by the end of the process: the task goes on.
                S::Running | S::Waiting | S::Paused | S::Interrupted => {}
            },
            EventKind::Despawned { .. } => t.open = None,
            _ => {}
        }
    }

    /// One agent's counts.
    pub fn of(&self, id: AgentId) -> TaskMetrics {
        self.agents.get(&id).map(|t| t.metrics).unwrap_or_default()
    }

    /// The session's counts.
    pub fn total(&self) -> TaskMetrics {
        let mut sum = TaskMetrics::default();
        for t in self.agents.values() {
            sum.add(&t.metrics);
        }
        sum
    }
}

impl Tasks {
    fn finish(&mut self, ok: bool, now: Option<Instant>) {
        let Some(open) = self.open.take() else {
            return;
        };
        let m = &mut self.metrics;
        if ok {
            m.completed += 1;
            if open.corrections == 0 {
                m.first_pass += 1;
            }
        } else {
            m.failed += 1;
        }
        if let (Some(since), Some(now)) = (open.since, now) {
            m.task_ms += now.saturating_duration_since(since).as_millis() as u64;
            m.timed += 1;
        }
    }
}

#[cfg(test)]
mod tests;
