use super::*;
use crate::protocol::{AgentResult, AgentStatus, Verdict};

/// 2026-01-01T00:00:00Z, in milliseconds since the epoch: where every run's clock starts.
const T0: u64 = 1_767_225_600_000;

struct Run {
    tally: TaskTally,
    worker: AgentId,
    seq: u64,
}

impl Run {
    fn new() -> Self {
        let mut r = Self {
            tally: TaskTally::default(),
            worker: AgentId::new(),
            seq: 0,
        };
        r.feed(
            EventKind::AgentSpawned {
                parent_id: Some(AgentId::new()),
                role: "implementer".into(),
                model: "m".into(),
                task: "t".into(),
                depth: 1,
            },
            0,
        );
        r
    }

    fn feed(&mut self, kind: EventKind, at_ms: u64) {
        self.seq += 1;
        let ev = Event {
            seq: self.seq,
            ts: T0 + at_ms,
            agent_id: self.worker,
            kind,
        };
        self.tally.observe(&ev);
    }

    fn task(&mut self, at: u64) {
        self.feed(
            EventKind::ItemAdded {
                item: HistoryItem::user("do it"),
            },
            at,
        );
        self.status(AgentStatus::Running, at);
    }

    fn status(&mut self, status: AgentStatus, at: u64) {
        self.feed(
            EventKind::AgentStatus {
                parent_id: None,
                status,
                reason: None,
            },
            at,
        );
    }

    fn verdict(&mut self, attempt: u32, passed: bool) {
        let v = Verdict {
            attempt,
            passed,
            score: Some(if passed { 100 } else { 40 }),
            max_corrections: 2,
            ..Verdict::default()
        };
        self.feed(EventKind::Verification(v), 0);
    }

    fn returned(&mut self, status: ResultStatus, verdict: Option<(u32, bool)>, at: u64) {
        let result = AgentResult {
            completed_at: None,
            status,
            summary: "s".into(),
            artifacts: vec![],
            known_issues: vec![],
            verification: verdict.map(|(attempt, passed)| Verdict {
                attempt,
                passed,
                ..Verdict::default()
            }),
            merge: None,
        };
        self.feed(
            EventKind::ResultReturned {
                parent_id: None,
                result,
            },
            at,
        );
        self.feed(
            EventKind::TurnFinished {
                end: TurnEnd::Returned,
            },
            at,
        );
        self.status(AgentStatus::Completed, at);
    }

    fn m(&self) -> TaskMetrics {
        self.tally.of(self.worker)
    }
}

#[test]
fn a_result_that_passes_at_once_is_a_first_pass_completion() {
    let mut r = Run::new();
    r.task(0);
    r.verdict(1, true);
    r.returned(ResultStatus::Success, Some((1, true)), 300);
    let m = r.m();
    assert_eq!(
        (m.started, m.completed, m.failed, m.first_pass),
        (1, 1, 0, 1)
    );
    assert_eq!((m.verified, m.caught, m.corrections), (1, 0, 0));
    assert_eq!(m.avg_task_ms(), Some(300));
    assert_eq!(m.first_pass_rate(), Some(1.0));
    assert_eq!(m.catch_rate(), Some(0.0));
}

#[test]
fn a_corrected_result_counts_the_correction_and_the_catch() {
    let mut r = Run::new();
    r.task(0);
    r.verdict(1, false);
    r.verdict(2, true);
    r.returned(ResultStatus::Success, Some((2, true)), 100);
    let m = r.m();
    assert_eq!((m.completed, m.first_pass, m.corrections), (1, 0, 1));
    assert_eq!((m.verified, m.caught), (1, 1));
    assert_eq!(m.retry_rate(), Some(0.5));
    assert_eq!(m.first_pass_rate(), Some(0.0));
}

#[test]
fn out_of_corrections_is_a_failed_task() {
    let mut r = Run::new();
    r.task(0);
    r.verdict(1, false);
    r.verdict(2, false);
    r.verdict(3, false);
    r.returned(ResultStatus::Success, Some((3, false)), 10);
    let m = r.m();
    assert_eq!((m.completed, m.failed, m.corrections), (0, 1, 2));
    assert_eq!((m.verified, m.caught), (1, 1));
}

#[test]
fn honest_failures_errors_and_iteration_limits_fail_the_task() {
    let mut r = Run::new();
    r.task(0);
    r.returned(ResultStatus::Failure, None, 10);
    r.task(20);
    r.feed(
        EventKind::TurnFinished {
            end: TurnEnd::MaxIterations,
        },
        30,
    );
    r.status(AgentStatus::Inactive, 30);
    r.task(40);
    r.status(AgentStatus::Failed, 50);
    let m = r.m();
    assert_eq!((m.started, m.completed, m.failed), (3, 0, 3));
    assert_eq!(m.first_pass_rate(), Some(0.0));
    assert_eq!(m.retry_rate(), None, "nothing was checked");
}

#[test]
fn an_interrupted_task_goes_on_and_a_follow_up_starts_a_new_one() {
    let mut r = Run::new();
    r.task(0);
    r.feed(
        EventKind::TurnFinished {
            end: TurnEnd::Interrupted,
        },
        5,
    );
    r.status(AgentStatus::Inactive, 5);
    // The user's next message continues the same task.
    r.task(10);
    assert_eq!(r.m().started, 1);
    r.feed(
        EventKind::TurnFinished {
            end: TurnEnd::Completed,
        },
        20,
    );
    r.status(AgentStatus::Inactive, 20);
    assert_eq!((r.m().completed, r.m().task_ms), (1, 20));
    // A follow-up after the answer is a second task.
    r.task(30);
    assert_eq!(r.m().started, 2);
}

#[test]
fn cancelled_tasks_count_as_started_only_and_the_root_has_no_tasks() {
    let mut r = Run::new();
    r.task(0);
    r.status(AgentStatus::Cancelled, 5);
    let m = r.m();
    assert_eq!((m.started, m.finished()), (1, 0));

    let root = AgentId::new();
    let mut tally = TaskTally::default();
    for kind in [
        EventKind::AgentSpawned {
            parent_id: None,
            role: "copilot".into(),
            model: "m".into(),
            task: String::new(),
            depth: 0,
        },
        EventKind::ItemAdded {
            item: HistoryItem::user("hi"),
        },
    ] {
        tally.observe(&Event {
            seq: 1,
            ts: T0,
            agent_id: root,
            kind,
        });
    }
    assert_eq!(tally.of(root), TaskMetrics::default());
}

#[test]
fn tasks_of_a_log_without_a_clock_are_counted_but_not_timed() {
    let mut r = Run::new();
    let w = r.worker;
    let mut tally = TaskTally::default();
    let spawn = Event {
        seq: 1,
        ts: 0,
        agent_id: w,
        kind: EventKind::AgentSpawned {
            parent_id: Some(AgentId::new()),
            role: "r".into(),
            model: "m".into(),
            task: "t".into(),
            depth: 1,
        },
    };
    tally.observe(&spawn);
    for kind in [
        EventKind::ItemAdded {
            item: HistoryItem::user("go"),
        },
        EventKind::AgentStatus {
            parent_id: None,
            status: AgentStatus::Completed,
            reason: None,
        },
    ] {
        tally.observe(&Event {
            seq: 2,
            ts: 0,
            agent_id: w,
            kind,
        });
    }
    let m = tally.of(w);
    assert_eq!((m.completed, m.timed, m.avg_task_ms()), (1, 0, None));
    r.task(0);
    assert_eq!(TaskMetrics::percent(None), "–");
    assert_eq!(TaskMetrics::percent(Some(0.756)), "76%");
}

#[test]
fn seed_figures_success_score_lifespan_and_retries_per_task() {
    let mut r = Run::new();
    // Task 1: corrected twice, then it passes, 1 s after it started.
    r.task(0);
    r.verdict(1, false);
    r.verdict(2, false);
    r.verdict(3, true);
    r.returned(ResultStatus::Success, Some((3, true)), 1000);
    // Task 2: an honest failure after 0.5 s; the worker is released at 5 s.
    r.task(2000);
    r.returned(ResultStatus::Failure, None, 2500);
    r.feed(EventKind::Released, 5000);
    let m = r.m();
    assert_eq!((m.started, m.completed, m.failed), (2, 1, 1));
    assert_eq!(m.success_rate(), Some(0.5));
    assert_eq!(m.avg_score(), Some(60.0), "(40 + 40 + 100) / 3");
    assert_eq!(
        m.retry_rate(),
        Some(2.0 / 3.0),
        "squad's: of 3 checked results"
    );
    assert_eq!(
        m.seed_retry_rate(),
        Some(1.0),
        "the seed's: 2 retries, 2 tasks"
    );
    assert_eq!(m.avg_task_ms(), Some(750));
    assert_eq!(m.avg_lifespan_ms(), Some(5000));
    // A despawn after the release does not count the life twice.
    r.feed(EventKind::Despawned { parent_id: None }, 9000);
    assert_eq!(r.m().lifespans, 1);
    let rates = r.m().rates();
    assert_eq!(rates.success_rate, Some(0.5));
    assert_eq!(rates.seed_retry_rate, Some(1.0));
    assert_eq!(rates.avg_lifespan_ms, Some(5000));
    assert_eq!(rates.avg_verification_score, Some(60.0));
}

#[test]
fn nothing_measured_is_none_and_roles_are_summed_apart() {
    let m = TaskMetrics::default();
    assert!(!m.any());
    assert_eq!(m.rates(), TaskRates::default());
    let mut a = Run::new();
    a.task(0);
    a.returned(ResultStatus::Success, None, 100);
    let mut tally = a.tally.clone();
    let other = AgentId::new();
    for (seq, kind) in [
        EventKind::AgentSpawned {
            parent_id: Some(AgentId::new()),
            role: "tester".into(),
            model: "m".into(),
            task: "t".into(),
            depth: 1,
        },
        EventKind::ItemAdded {
            item: HistoryItem::user("go"),
        },
        EventKind::AgentStatus {
            parent_id: None,
            status: AgentStatus::Failed,
            reason: None,
        },
    ]
    .into_iter()
    .enumerate()
    {
        tally.observe(&Event {
            seq: 100 + seq as u64,
            ts: T0,
            agent_id: other,
            kind,
        });
    }
    let roles = tally.by_role();
    assert_eq!(roles.len(), 2);
    assert_eq!(roles["implementer"].success_rate(), Some(1.0));
    assert_eq!(roles["tester"].success_rate(), Some(0.0));
    assert_eq!(tally.total().success_rate(), Some(0.5));
}

#[test]
fn a_correction_answered_in_words_or_a_change_kept_unmerged_is_a_failed_task() {
    let words = |r: &mut Run, at| {
        r.feed(
            EventKind::TurnFinished {
                end: TurnEnd::Completed,
            },
            at,
        );
        r.status(AgentStatus::Inactive, at);
    };
    // Its result failed its checks; it answered the correction in words.
    let mut r = Run::new();
    r.task(0);
    r.verdict(1, false);
    words(&mut r, 10);
    assert_eq!((r.m().completed, r.m().failed), (0, 1));
    // The next task starts clean: an answer is a completion again.
    r.task(20);
    words(&mut r, 30);
    assert_eq!((r.m().completed, r.m().failed), (1, 1));
    // An answer whose change was kept unmerged (failed checks).
    let mut r = Run::new();
    r.task(0);
    r.feed(
        EventKind::MergeReport(crate::protocol::MergeReport {
            state: crate::protocol::MergeState::FailedChecks,
            files: vec![],
            conflicts: vec![],
            note: "kept".into(),
        }),
        10,
    );
    words(&mut r, 10);
    assert_eq!((r.m().completed, r.m().failed), (0, 1));
}
