use super::layer::{GoalPolicy, tail};
use super::{Goals, Next};
use crate::protocol::{EventKind, Goal, GoalCheck, GoalEnd, TurnEnd};
use crate::runtime::points::AfterTurn;
use crate::runtime::testing::{Parts, TestSession};
use std::sync::Arc;

fn goal(check: &str, turns: u32) -> Goal {
    Goal {
        max_turns: turns,
        ..Goal::new("make state.txt say fixed", check)
    }
}

fn checks(kinds: &[EventKind]) -> Vec<GoalCheck> {
    kinds
        .iter()
        .filter_map(|k| match k {
            EventKind::GoalChecked(c) => Some(c.clone()),
            _ => None,
        })
        .collect()
}

fn ended(kinds: &[EventKind]) -> Option<GoalEnd> {
    kinds.iter().find_map(|k| match k {
        EventKind::GoalEnded { reason } => Some(*reason),
        _ => None,
    })
}

#[tokio::test]
async fn without_a_goal_the_layer_never_intervenes() {
    let dir = tempfile::tempdir().unwrap();
    let mut ts = TestSession::new(dir.path(), Parts::default());
    let goals = Arc::new(Goals::default());
    let cx = ts.cx(vec![Box::new(GoalPolicy(goals))], ts.root);
    ts.kinds();
    for end in [TurnEnd::Completed, TurnEnd::MaxTokens, TurnEnd::Error] {
        assert_eq!(cx.turn_end(end, "done", true).await, AfterTurn::Rest);
    }
    assert!(ts.kinds().is_empty());
}

#[tokio::test]
async fn a_failing_check_sends_the_persona_on_until_it_passes() {
    let dir = tempfile::tempdir().unwrap();
    let mut ts = TestSession::new(dir.path(), Parts::default());
    let goals = Arc::new(Goals::default());
    let cx = ts.cx(vec![Box::new(GoalPolicy(goals.clone()))], ts.root);
    goals
        .set(&ts.session.team, Some(goal("grep -q fixed state.txt", 10)))
        .unwrap();
    std::fs::write(dir.path().join("state.txt"), "broken\n").unwrap();
    let AfterTurn::Pursue(message) = cx.turn_end(TurnEnd::Completed, "done", true).await else {
        panic!("a failing check goes on");
    };
    assert!(message.contains("make state.txt say fixed"), "{message}");
    assert!(message.contains("check 1/10"), "{message}");
    std::fs::write(dir.path().join("state.txt"), "fixed\n").unwrap();
    assert_eq!(
        cx.turn_end(TurnEnd::Completed, "done", true).await,
        AfterTurn::Rest
    );
    let kinds = ts.kinds();
    let c = checks(&kinds);
    assert_eq!(c.len(), 2);
    assert_eq!((c[0].passed, c[0].exit_code), (false, Some(1)));
    assert_eq!((c[1].turn, c[1].passed), (2, true));
    assert_eq!(ended(&kinds), Some(GoalEnd::Met));
    // Met: the next turn ends as any turn does.
    assert_eq!(
        cx.turn_end(TurnEnd::Completed, "", true).await,
        AfterTurn::Rest
    );
    assert!(ts.kinds().is_empty());
}

#[tokio::test]
async fn the_budget_of_turns_ends_the_goal() {
    let dir = tempfile::tempdir().unwrap();
    let mut ts = TestSession::new(dir.path(), Parts::default());
    let goals = Arc::new(Goals::default());
    let cx = ts.cx(vec![Box::new(GoalPolicy(goals.clone()))], ts.root);
    goals
        .set(&ts.session.team, Some(goal("echo no; exit 3", 2)))
        .unwrap();
    assert!(matches!(
        cx.turn_end(TurnEnd::Completed, "", true).await,
        AfterTurn::Pursue(_)
    ));
    assert_eq!(
        cx.turn_end(TurnEnd::Completed, "", true).await,
        AfterTurn::Rest
    );
    let kinds = ts.kinds();
    let c = checks(&kinds);
    assert_eq!(c.len(), 2);
    assert_eq!(c[1].exit_code, Some(3));
    assert_eq!(c[1].output_tail, "no");
    assert_eq!(ended(&kinds), Some(GoalEnd::Budget));
}

#[tokio::test]
async fn a_stopped_turn_and_workers_are_not_checked_and_a_clear_stops_the_goal() {
    let dir = tempfile::tempdir().unwrap();
    let mut ts = TestSession::new(dir.path(), Parts::default());
    let goals = Arc::new(Goals::default());
    let cx = ts.cx(vec![Box::new(GoalPolicy(goals.clone()))], ts.root);
    let worker = ts.add(ts.root, Default::default());
    let worker_cx = ts.cx(vec![Box::new(GoalPolicy(goals.clone()))], worker);
    let session = ts.session.clone();
    let team = &session.team;
    goals.set(team, Some(goal("false", 5))).unwrap();
    assert_eq!(cx.turn_end(TurnEnd::Error, "", true).await, AfterTurn::Rest);
    assert_eq!(
        worker_cx.turn_end(TurnEnd::Completed, "", true).await,
        AfterTurn::Rest
    );
    assert!(checks(&ts.kinds()).is_empty());
    goals.set(team, None).unwrap();
    assert_eq!(ended(&ts.kinds()), Some(GoalEnd::Stopped));
    assert!(goals.set(team, None).is_err(), "nothing left to clear");
    assert_eq!(
        cx.turn_end(TurnEnd::Completed, "", true).await,
        AfterTurn::Rest
    );
}

#[test]
fn a_check_of_a_goal_replaced_meanwhile_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let ts = TestSession::new(dir.path(), Parts::default());
    let goals = Goals::default();
    let (old, new) = (goal("a", 3), goal("b", 3));
    goals.set(&ts.session.team, Some(old.clone())).unwrap();
    goals.set(&ts.session.team, Some(new)).unwrap();
    let check = GoalCheck {
        turn: 1,
        max_turns: 3,
        passed: true,
        exit_code: Some(0),
        output_tail: String::new(),
    };
    assert_eq!(goals.checked(&ts.session.team, &old, check), Next::Rest);
    assert!(goals.active().is_some());
}

#[test]
fn bad_goals_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ts = TestSession::new(dir.path(), Parts::default());
    let goals = Goals::default();
    let team = &ts.session.team;
    assert!(goals.set(team, Some(goal("", 3))).is_err());
    assert!(goals.set(team, Some(goal("true", 0))).is_err());
    let broke = Goal {
        max_cost_usd: Some(0.0),
        ..goal("true", 3)
    };
    assert!(goals.set(team, Some(broke)).is_err());
}

#[test]
fn the_tail_keeps_the_last_lines_within_its_bytes() {
    let text: String = (1..=50).map(|i| format!("line {i}\n")).collect();
    let t = tail(&text);
    assert!(t.starts_with("line 31\n") && t.ends_with("line 50"), "{t}");
    let long = "é".repeat(3_000);
    assert!(tail(&long).len() <= 2_000 + "…".len());
}

#[tokio::test]
async fn with_rules_the_projects_checks_must_pass_too() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = crate::config::Config::default();
    config.verify.rules.push(crate::config::CommandRule {
        id: "lint".into(),
        command: "echo lint says no; exit 4".into(),
        severity: crate::protocol::Severity::Error,
        when_changed: Vec::new(),
    });
    let mut ts = TestSession::new(
        dir.path(),
        Parts {
            config,
            ..Parts::default()
        },
    );
    let goals = Arc::new(Goals::default());
    let cx = ts.cx(vec![Box::new(GoalPolicy(goals.clone()))], ts.root);
    let goal = Goal {
        rules: true,
        ..goal("true", 3)
    };
    goals.set(&ts.session.team, Some(goal)).unwrap();
    let AfterTurn::Pursue(message) = cx.turn_end(TurnEnd::Completed, "", true).await else {
        panic!("the rule fails");
    };
    assert!(
        message.contains("`echo lint says no; exit 4` failed (exit 4)"),
        "{message}"
    );
    let c = checks(&ts.kinds());
    assert_eq!(
        (c[0].exit_code, c[0].output_tail.as_str()),
        (Some(4), "lint says no")
    );
}
