//! The layer walk's rules, the pause and the budgets, the loop guard: each on a test
//! session with no model and no agent tasks.

use crate::protocol::{AgentStatus, Budget, EventKind, TurnEnd as End};
use crate::runtime::cx::{AgentCx, Layer, ModelNext, ToolNext};
use crate::runtime::points::{AfterTurn, Called, ModelCall, Reviewed, ToolUse};
use crate::runtime::policies::budget::layer::BudgetPolicy;
use crate::runtime::policies::budget::{SessionBudget, SessionLimits};
use crate::runtime::policies::loop_guard::layer::LoopGuardPolicy;
use crate::runtime::policies::pause::gate::PauseGate;
use crate::runtime::policies::pause::layer::PausePolicy;
use crate::runtime::testing::{Gate, Points, ToolGate};
use crate::runtime::testing::{Parts, TestSession, every};
use crate::runtime::tool_call::{ToolOut, ToolReq};
use crate::runtime::toolbox::Reach;
use async_trait::async_trait;
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn session() -> (tempfile::TempDir, TestSession) {
    let dir = tempfile::tempdir().unwrap();
    let ts = TestSession::new(dir.path(), Parts::default());
    (dir, ts)
}

/// A layer that says what it was told to and notes that it was asked.
struct Say {
    name: &'static str,
    gate: Gate,
    block: Option<&'static str>,
    after: Option<&'static str>,
    asked: Arc<Mutex<Vec<&'static str>>>,
}

#[async_trait]
impl Layer for Say {
    async fn model_call(&self, cx: &AgentCx, call: &mut ModelCall, next: ModelNext<'_>) -> Called {
        self.asked.lock().unwrap().push(self.name);
        match &self.gate {
            Gate::Go => next.run(cx, call).await,
            Gate::Hold => Called::Again,
            Gate::Stop(s) => Called::Stopped(s.clone()),
            Gate::Interrupted => Called::Interrupted,
        }
    }

    async fn tool_call(&self, cx: &AgentCx, req: &mut ToolReq<'_>, next: ToolNext<'_>) -> ToolOut {
        self.asked.lock().unwrap().push(self.name);
        match self.block {
            Some(why) => ToolOut::refused(why),
            None => next.run(cx, req).await,
        }
    }

    async fn turn_end(&self, _cx: &AgentCx, _end: End, _text: &str) -> AfterTurn {
        self.asked.lock().unwrap().push(self.name);
        match self.after {
            Some(m) => AfterTurn::Continue(m.to_string()),
            None => AfterTurn::Rest,
        }
    }
}

fn say(name: &'static str, asked: &Arc<Mutex<Vec<&'static str>>>) -> Say {
    Say {
        name,
        gate: Gate::Go,
        block: None,
        after: None,
        asked: asked.clone(),
    }
}

#[tokio::test]
async fn the_first_layer_that_does_not_go_decides_and_the_rest_are_not_asked() {
    let (_dir, ts) = session();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let (a, b, c) = (asked.clone(), asked.clone(), asked.clone());
    let cx = ts.cx(
        vec![
            every(move || say("a", &a)),
            every(move || Say {
                gate: Gate::Stop("spent".into()),
                block: Some("no rm -rf"),
                ..say("b", &b)
            }),
            every(move || say("c", &c)),
        ],
        ts.root,
    );
    assert_eq!(cx.before_model_call().await, Gate::Stop("spent".into()));
    let args = serde_json::json!({});
    let tool = ToolUse {
        call_id: "c1",
        name: "run_command",
        args: &args,
        reach: Reach::ChangesFiles,
        reports: crate::tools::Reports::Nothing,
        writes: None,
        action: None,
    };
    assert_eq!(
        cx.before_tool(&tool, 0).await.0,
        ToolGate::Block("no rm -rf".into())
    );
    assert_eq!(*asked.lock().unwrap(), ["a", "b", "a", "b"]);
}

#[tokio::test]
async fn the_first_layer_that_asks_to_go_on_after_a_turn_decides_as_at_every_point() {
    let (_dir, ts) = session();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let (a, b, c) = (asked.clone(), asked.clone(), asked.clone());
    let cx = ts.cx(
        vec![
            every(move || say("a", &a)),
            every(move || Say {
                after: Some("first"),
                ..say("b", &b)
            }),
            every(move || Say {
                after: Some("second"),
                ..say("c", &c)
            }),
        ],
        ts.root,
    );
    assert_eq!(
        cx.turn_end(End::Completed, "done", true).await,
        AfterTurn::Continue("first".into())
    );
    assert_eq!(*asked.lock().unwrap(), ["a", "b"]);
    let bare = ts.cx(Vec::new(), ts.root);
    assert_eq!(
        bare.turn_end(End::Completed, "", true).await,
        AfterTurn::Rest
    );
}

/// A layer that sends the agent on with the goal's kind of message.
struct Pursue;

#[async_trait]
impl Layer for Pursue {
    async fn turn_end(&self, _cx: &AgentCx, _end: End, _text: &str) -> AfterTurn {
        AfterTurn::Pursue("the goal".into())
    }
}

#[tokio::test]
async fn with_the_continues_spent_a_layers_continue_is_passed_over_and_the_next_decide() {
    let (_dir, ts) = session();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let (a, b) = (asked.clone(), asked.clone());
    let cx = ts.cx(
        vec![
            every(move || Say {
                after: Some("once more"),
                ..say("hook", &a)
            }),
            every(move || say("quiet", &b)),
            every(|| Pursue),
        ],
        ts.root,
    );
    assert_eq!(
        cx.turn_end(End::Completed, "", true).await,
        AfterTurn::Continue("once more".into())
    );
    assert_eq!(
        cx.turn_end(End::Completed, "", false).await,
        AfterTurn::Pursue("the goal".into())
    );
    assert_eq!(*asked.lock().unwrap(), ["hook", "hook", "quiet"]);
}

#[tokio::test]
async fn the_pause_layer_holds_a_call_until_the_team_goes_on_and_gives_up_on_cancel() {
    let (_dir, mut ts) = session();
    let gate = Arc::new(PauseGate::new(true));
    let cx = ts.cx(vec![Box::new(PausePolicy(gate.clone()))], ts.root);
    let opener = {
        let gate = gate.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            gate.set(false);
        })
    };
    // Held until the team goes on; the request is then built again (with what came
    // meanwhile), and passes.
    assert_eq!(cx.before_model_call().await, Gate::Hold);
    opener.await.unwrap();
    assert_eq!(cx.before_model_call().await, Gate::Go);
    let statuses: Vec<AgentStatus> = ts
        .kinds()
        .into_iter()
        .filter_map(|k| match k {
            EventKind::AgentStatus { status, .. } => Some(status),
            _ => None,
        })
        .collect();
    assert!(
        statuses.ends_with(&[AgentStatus::Paused, AgentStatus::Running]),
        "{statuses:?}"
    );

    gate.set(true);
    cx.cancel().cancel();
    assert_eq!(cx.before_model_call().await, Gate::Interrupted);
}

#[tokio::test]
async fn the_budget_layer_stops_a_worker_over_its_own_and_holds_the_team_over_the_sessions() {
    let (_dir, mut ts) = session();
    let worker = ts.add(
        ts.root,
        Budget {
            tokens: Some(100),
            ..Budget::default()
        },
    );
    let pause = Arc::new(PauseGate::new(false));
    let limits = SessionLimits {
        budget: Arc::new(SessionBudget::new(Some(1.0))),
        pause: pause.clone(),
    };
    let policy = || -> Vec<Box<dyn crate::runtime::cx::Policy>> {
        vec![Box::new(BudgetPolicy(limits.clone()))]
    };
    let (me, it) = (ts.cx(policy(), ts.root), ts.cx(policy(), worker));
    assert_eq!(it.before_model_call().await, Gate::Go);
    let team = &ts.session.team;
    team.add_usage(worker, 90, 20, 0.5);
    assert!(matches!(
        it.before_model_call().await,
        Gate::Stop(why) if why.contains("tokens")
    ));
    // The session's limit is reached by the root's spend: the team is paused at once.
    team.add_usage(ts.root, 10, 10, 0.6);
    super::budget::after_usage(team, &limits);
    assert!(!pause.set(true), "after_usage closed the pause gate");
    assert_eq!(me.before_model_call().await, Gate::Hold);
    let told = ts.kinds();
    assert!(
        told.iter().any(|k| matches!(k, EventKind::Paused)),
        "{told:?}"
    );
}

#[tokio::test]
async fn the_loop_guard_layer_counts_repeats_per_agent_and_turn() {
    use crate::runtime::points::{CallKind, Verdict};
    let (_dir, ts) = session();
    let worker = ts.add(ts.root, Budget::default());
    let policies = Arc::new(crate::runtime::cx::Policies::new(vec![Box::new(
        LoopGuardPolicy::new(crate::config::GuardsConfig::default()),
    )]));
    let ask = Reviewed {
        name: "ask_user",
        arguments: r#"{"question":"what now?"}"#,
        kind: CallKind::Other,
        reports: crate::tools::Reports::Nothing,
        output: "nobody can answer",
        is_error: false,
    };
    let (me, other) = (
        ts.cx_with(&policies, ts.root),
        ts.cx_with(&policies, worker),
    );
    me.turn_start().await;
    other.turn_start().await;
    let verdicts: Vec<Verdict> = (0..5).map(|_| me.review(&ask)).collect();
    assert!(matches!(verdicts[2], Verdict::Note(_)), "{verdicts:?}");
    assert!(matches!(verdicts[4], Verdict::Stop(_)), "{verdicts:?}");
    // Another agent's count is its own, and a new turn starts afresh.
    assert_eq!(other.review(&ask), Verdict::Pass);
    me.turn_start().await;
    assert_eq!(me.review(&ask), Verdict::Pass);
}
