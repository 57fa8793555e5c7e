use super::*;
use crate::protocol::{AgentResult, AgentStatus, Verdict};
use std::time::Duration;

struct Run {
    tally: TaskTally,
    worker: AgentId,
    seq: u64,
    t0: Instant,
}

impl Run {
    fn new() -> Self {
        let mut r = Self {
            tally: TaskTally::default(),
            worker: AgentId::new(),
            seq: 0,
            t0: Instant::now(),
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
            agent_id: self.worker,
            kind,
        };
        self.tally
            .observe(&ev, Some(self.t0 + Duration::from_millis(at_ms)));
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
            score: if passed { 100 } else { 40 },
            max_corrections: 2,
            ..Verdict::default()
        };
        self.feed(EventKind::Verification(v), 0);
    }

    fn returned(&mut self, status: ResultStatus, verdict: Option<(u32, bool)>, at: u64) {
        let result = AgentResult {
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
        tally.observe(
            &Event {
                seq: 1,
                agent_id: root,
                kind,
            },
            None,
        );
    }
    assert_eq!(tally.of(root), TaskMetrics::default());
}

#[test]
fn tasks_read_back_from_a_log_are_counted_but_not_timed() {
    let mut r = Run::new();
    let w = r.worker;
    let mut tally = TaskTally::default();
    let spawn = Event {
        seq: 1,
        agent_id: w,
        kind: EventKind::AgentSpawned {
            parent_id: Some(AgentId::new()),
            role: "r".into(),
            model: "m".into(),
            task: "t".into(),
            depth: 1,
        },
    };
    tally.observe(&spawn, None);
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
        tally.observe(
            &Event {
                seq: 2,
                agent_id: w,
                kind,
            },
            None,
        );
    }
    let m = tally.of(w);
    assert_eq!((m.completed, m.timed, m.avg_task_ms()), (1, 0, None));
    r.task(0);
    assert_eq!(TaskMetrics::percent(None), "–");
    assert_eq!(TaskMetrics::percent(Some(0.756)), "76%");
}
