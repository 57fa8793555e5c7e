//! Task figures (seed 001's metrics): how many tasks workers took on, finished and failed,
//! how often their results were sent back for correction, how their checks scored and how
//! long workers lived. They are folded from the event stream, timed by each event's `ts`,
//! so the live runtime, a resumed session and the TUI count and time the same way from
//! the same facts.

use super::{AgentId, AgentStatus, Event, EventKind, HistoryItem, ResultStatus, TurnEnd, Verdict};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// Counts for one agent or a whole session. Rates are derived, never stored, so sums of
/// these stay exact.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TaskMetrics {
    /// Tasks given to the worker: its first message and each follow-up after a result.
    pub started: u64,
    /// Finished with a successful result that passed its checks (or an answer without
    /// `return_results`, unless a check had failed or its change was kept unmerged).
    pub completed: u64,
    /// Finished otherwise: an honest failure or partial result, failed checks after the
    /// last correction (or a correction answered without a result), a change kept unmerged
    /// because it did not pass its checks, an error, or the iteration limit.
    pub failed: u64,
    /// Correction rounds: results sent back to the worker.
    pub corrections: u64,
    /// Tasks completed without a single correction.
    pub first_pass: u64,
    /// Results whose checks ended (passed, or out of corrections).
    pub verified: u64,
    /// Of those, results that failed their checks at least once.
    pub caught: u64,
    /// Time from task start to its end, summed over `timed` tasks (tasks of a log written
    /// before events had a clock are not timed).
    pub task_ms: u64,
    pub timed: u64,
    /// Verification scores (0–100), summed over every check (`scored`).
    pub score_sum: u64,
    pub scored: u64,
    /// Results that went up with nothing checked (no change, no claim of one, no command):
    /// neither scored nor counted as verified.
    pub unchecked: u64,
    /// Spawn to release (or despawn), summed over the workers whose life ended
    /// (`lifespans`).
    pub lifespan_ms: u64,
    pub lifespans: u64,
}

/// The figures derived from [`TaskMetrics`], as the `summary` event and `get_agents`
/// carry them; `None` where there is nothing to measure yet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TaskRates {
    /// Completed ÷ finished tasks.
    pub success_rate: Option<f64>,
    /// Completed without a correction ÷ finished tasks.
    pub first_pass_rate: Option<f64>,
    /// squad's own: corrections ÷ checked results.
    pub retry_rate: Option<f64>,
    /// Seed 001's: corrections ÷ tasks (can pass 1 when tasks are corrected twice).
    pub seed_retry_rate: Option<f64>,
    /// Checked results that failed at least once ÷ checked results.
    pub qc_catch_rate: Option<f64>,
    /// Mean verification score, 0–100.
    pub avg_verification_score: Option<f64>,
    pub avg_task_ms: Option<u64>,
    /// Mean spawn-to-release time of the workers whose life ended.
    pub avg_lifespan_ms: Option<u64>,
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
        self.score_sum += o.score_sum;
        self.scored += o.scored;
        self.unchecked += o.unchecked;
        self.lifespan_ms += o.lifespan_ms;
        self.lifespans += o.lifespans;
    }

    pub fn finished(&self) -> u64 {
        self.completed + self.failed
    }

    /// Finished tasks that were completed.
    pub fn success_rate(&self) -> Option<f64> {
        ratio(self.completed, self.finished())
    }

    /// Finished tasks that were completed without a correction.
    pub fn first_pass_rate(&self) -> Option<f64> {
        ratio(self.first_pass, self.finished())
    }

    /// Checked results that were corrections (a result returned again after a failed check).
    pub fn retry_rate(&self) -> Option<f64> {
        ratio(self.corrections, self.corrections + self.verified)
    }

    /// Seed 001's retry rate: corrections per task taken on.
    pub fn seed_retry_rate(&self) -> Option<f64> {
        ratio(self.corrections, self.started)
    }

    /// Checked results that failed at least once: what verification caught.
    pub fn catch_rate(&self) -> Option<f64> {
        ratio(self.caught, self.verified)
    }

    pub fn avg_score(&self) -> Option<f64> {
        ratio(self.score_sum, self.scored)
    }

    pub fn avg_task_ms(&self) -> Option<u64> {
        (self.timed > 0).then(|| self.task_ms / self.timed)
    }

    pub fn avg_lifespan_ms(&self) -> Option<u64> {
        (self.lifespans > 0).then(|| self.lifespan_ms / self.lifespans)
    }

    pub fn rates(&self) -> TaskRates {
        TaskRates {
            success_rate: self.success_rate(),
            first_pass_rate: self.first_pass_rate(),
            retry_rate: self.retry_rate(),
            seed_retry_rate: self.seed_retry_rate(),
            qc_catch_rate: self.catch_rate(),
            avg_verification_score: self.avg_score(),
            avg_task_ms: self.avg_task_ms(),
            avg_lifespan_ms: self.avg_lifespan_ms(),
        }
    }

    /// Whether there is anything to tell: a task, a check or an ended worker.
    pub fn any(&self) -> bool {
        self.started > 0 || self.scored > 0 || self.lifespans > 0
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
    role: String,
    /// When it was spawned (`ts`), until its life ends and is counted.
    spawned: Option<u64>,
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
    /// The `ts` of its first message; `None` in a log without a clock.
    since: Option<u64>,
    corrections: u32,
}

/// An event's clock: `None` for a log written before events had one.
fn clock(ev: &Event) -> Option<u64> {
    (ev.ts > 0).then_some(ev.ts)
}

impl TaskTally {
    /// Folds one event in, timed by its `ts`. Only the events that count below make an
    /// agent's entry.
    pub fn observe(&mut self, ev: &Event) {
        let now = clock(ev);
        let id = ev.agent_id;
        match &ev.kind {
            EventKind::AgentSpawned {
                parent_id, role, ..
            } => {
                let t = self.entry(id);
                t.worker = parent_id.is_some();
                t.role = role.clone();
                t.spawned = now;
            }
            EventKind::ItemAdded {
                item: HistoryItem::User { .. },
            } => self.entry(id).message(now),
            EventKind::Verification(v) => self.entry(id).verdict(v),
            EventKind::ResultReturned { result, .. } => {
                let t = self.entry(id);
                let passed = t
                    .verdict_passed
                    .take()
                    .or(result.verification.as_ref().map(|v| v.passed));
                t.result_ok = Some(result.status == ResultStatus::Success && passed != Some(false));
            }
            EventKind::MergeReport(r) => {
                let t = self.entry(id);
                // A change kept unmerged did not pass its checks: the task failed.
                if r.state == super::MergeState::FailedChecks {
                    t.result_ok = Some(false);
                }
            }
            EventKind::TurnFinished { end } => self.entry(id).last_end = Some(*end),
            EventKind::AgentStatus { status, .. } => self.entry(id).status(*status, now),
            EventKind::Despawned { .. } => {
                let t = self.entry(id);
                t.open = None;
                t.end_life(now);
            }
            EventKind::Released => self.entry(id).end_life(now),
            // Nothing a task's count or time depends on.
            EventKind::SessionStarted { .. }
            | EventKind::AgentBudget { .. }
            | EventKind::AgentSandbox { .. }
            | EventKind::AgentOptions(_)
            | EventKind::FarSide(_)
            | EventKind::TurnStarted
            | EventKind::ItemAdded { .. }
            | EventKind::TextDelta { .. }
            | EventKind::ToolCallBegin { .. }
            | EventKind::ToolCallEnd { .. }
            | EventKind::ApprovalRequested { .. }
            | EventKind::ApprovalResolved { .. }
            | EventKind::ApprovalUnanswered { .. }
            | EventKind::QuestionAsked { .. }
            | EventKind::QuestionAnswered { .. }
            | EventKind::Usage { .. }
            | EventKind::Compacted { .. }
            | EventKind::InstructionsLoaded { .. }
            | EventKind::Retrying { .. }
            | EventKind::Stalled { .. }
            | EventKind::Unstalled
            | EventKind::Error { .. }
            | EventKind::Notice { .. }
            | EventKind::HookRan { .. }
            | EventKind::ResultDelivered { .. }
            | EventKind::RoleSaved { .. }
            | EventKind::SupervisorMessage { .. }
            | EventKind::InboxDelivered { .. }
            | EventKind::McpServer { .. }
            | EventKind::TaskUpdated { .. }
            | EventKind::MessageQueued { .. }
            | EventKind::AgentMessage { .. }
            | EventKind::PlanSubmitted(_)
            | EventKind::PlanDecided(_)
            | EventKind::CoordinateOnly { .. }
            | EventKind::AgentMessagesDelivered { .. }
            | EventKind::Paused
            | EventKind::Resumed
            | EventKind::Stopped { .. }
            | EventKind::DeadlockDetected { .. }
            | EventKind::BudgetReached { .. }
            | EventKind::SessionBudgetSet { .. }
            | EventKind::StaleWorktreesRemoved { .. }
            | EventKind::WorktreeCreated { .. }
            | EventKind::DiffStat(_)
            | EventKind::Merged { .. }
            | EventKind::MergeUndone { .. }
            | EventKind::UndoRefused { .. }
            | EventKind::MergeConflict { .. }
            | EventKind::WorktreeRemoved { .. }
            | EventKind::Diff { .. }
            | EventKind::Idle
            | EventKind::Summary { .. }
            | EventKind::Quote(_)
            | EventKind::CheckpointStarted { .. }
            | EventKind::CheckpointTaken { .. }
            | EventKind::Rewound { .. }
            | EventKind::Checkpoints { .. }
            | EventKind::RewindRefused { .. }
            | EventKind::Files { .. }
            | EventKind::Models { .. }
            | EventKind::ModelSet { .. }
            | EventKind::ApprovalSet { .. }
            | EventKind::ReviewStarted { .. }
            | EventKind::ReviewFinished { .. }
            | EventKind::GoalSet { .. }
            | EventKind::GoalChecked(_)
            | EventKind::GoalEnded { .. }
            | EventKind::Batch(_) => {}
        }
    }

    fn entry(&mut self, id: AgentId) -> &mut Tasks {
        self.agents.entry(id).or_default()
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

    /// The workers' counts by role, so a supervisor can see which role does best.
    pub fn by_role(&self) -> BTreeMap<String, TaskMetrics> {
        let mut out: BTreeMap<String, TaskMetrics> = BTreeMap::new();
        for t in self.agents.values().filter(|t| t.worker) {
            out.entry(t.role.clone()).or_default().add(&t.metrics);
        }
        out
    }
}

impl Tasks {
    /// A user message: a worker with no open task starts one.
    fn message(&mut self, now: Option<u64>) {
        if !self.worker || self.open.is_some() {
            return;
        }
        self.open = Some(Open {
            since: now,
            corrections: 0,
        });
        self.metrics.started += 1;
        self.result_ok = None;
        self.verdict_passed = None;
        self.last_end = None;
    }

    fn verdict(&mut self, v: &Verdict) {
        self.verdict_passed = Some(v.passed);
        if v.unchecked || v.score.is_none() {
            self.metrics.unchecked += 1;
            return;
        }
        self.metrics.score_sum += u64::from(v.score.unwrap_or(0));
        self.metrics.scored += 1;
        if !v.passed && v.attempt <= v.max_corrections {
            self.metrics.corrections += 1;
            if let Some(open) = &mut self.open {
                open.corrections += 1;
            }
        } else {
            self.metrics.verified += 1;
            if v.attempt > 1 || !v.passed {
                self.metrics.caught += 1;
            }
        }
    }

    fn status(&mut self, status: AgentStatus, now: Option<u64>) {
        use AgentStatus as S;
        match status {
            S::Completed => self.finish(self.result_ok.unwrap_or(true), now),
            S::Failed => self.finish(false, now),
            S::Inactive => match self.last_end {
                // Interrupted: the task goes on with the next message.
                Some(TurnEnd::Interrupted) => {}
                Some(TurnEnd::MaxIterations | TurnEnd::Error) => self.finish(false, now),
                // An answer after a failed check (no result passed), or a change kept
                // unmerged, is no success.
                _ => {
                    let ok = self.result_ok.unwrap_or(true) && self.verdict_passed != Some(false);
                    self.finish(ok, now);
                }
            },
            S::Cancelled => self.open = None,
            // Paused or cut off by the end of the process: the task goes on.
            S::Running | S::Waiting | S::Paused | S::Interrupted => {}
        }
    }

    fn finish(&mut self, ok: bool, now: Option<u64>) {
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
            m.task_ms += now.saturating_sub(since);
            m.timed += 1;
        }
    }

    /// A worker was released or despawned: its lifespan counts, once.
    fn end_life(&mut self, now: Option<u64>) {
        if !self.worker {
            return;
        }
        if let (Some(spawned), Some(now)) = (self.spawned.take(), now) {
            self.metrics.lifespan_ms += now.saturating_sub(spawned);
            self.metrics.lifespans += 1;
        }
    }
}

#[cfg(test)]
mod tests;
