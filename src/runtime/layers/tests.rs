//! The layers alone: the runner's order rules, the pause and the budgets, on a team with
//! no model and no agent tasks.

use super::*;
use crate::protocol::{AgentStatus, ApprovalPolicy, Budget, Event, EventKind, TurnEnd as End};
use crate::runtime::budget::{SessionBudget, SessionLimits};
use crate::runtime::events::EventSink;
use crate::runtime::pause::PauseGate;
use crate::runtime::team::{AgentStats, NewAgent};
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::mpsc;

/// A layer that does nothing at any point.
pub(super) struct Quiet;

impl Layer for Quiet {}

pub(super) fn team() -> (Team, AgentId, mpsc::UnboundedReceiver<Event>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let root = AgentId::new();
    let team = Team::new(EventSink::new(None, 0, tx), root);
    let _ = team.add(agent(root, None, Budget::default()));
    (team, root, rx)
}

pub(super) fn agent(id: AgentId, parent: Option<AgentId>, budget: Budget) -> NewAgent {
    NewAgent {
        id,
        parent,
        role: "r".into(),
        model: "m".into(),
        depth: u32::from(parent.is_some()),
        task: "t".into(),
        policy: ApprovalPolicy::Auto,
        tools: vec![],
        history: Vec::new(),
        status: AgentStatus::Running,
        stats: AgentStats::default(),
        budget,
        result: None,
        first_message: None,
        announce: true,
        options: Default::default(),
        released: false,
    }
}

/// A workspace for layers that do not look at files.
pub(super) fn anywhere() -> &'static Workspace {
    static WS: std::sync::OnceLock<Workspace> = std::sync::OnceLock::new();
    WS.get_or_init(|| Workspace::new(&std::env::temp_dir()).unwrap())
}

pub(super) fn scope<'a>(
    team: &'a Team,
    agent: AgentId,
    cancel: &'a CancellationToken,
) -> Scope<'a> {
    Scope {
        team,
        agent,
        role: "r",
        workspace: anywhere(),
        cancel,
    }
}

pub(super) fn kinds(rx: &mut mpsc::UnboundedReceiver<Event>) -> Vec<EventKind> {
    let mut out = Vec::new();
    while let Ok(ev) = rx.try_recv() {
        out.push(ev.kind);
    }
    out
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
    async fn before_model_call(&self, _cx: &Scope<'_>) -> Gate {
        self.asked.lock().unwrap().push(self.name);
        match &self.gate {
            Gate::Go => Gate::Go,
            Gate::Hold => Gate::Hold,
            Gate::Stop(s) => Gate::Stop(s.clone()),
            Gate::Interrupted => Gate::Interrupted,
        }
    }

    async fn before_tool(&self, _cx: &Scope<'_>, _tool: &ToolUse<'_>) -> ToolGate {
        self.asked.lock().unwrap().push(self.name);
        match self.block {
            Some(why) => ToolGate::Block(why.to_string()),
            None => ToolGate::Go,
        }
    }

    async fn turn_end(&self, _cx: &Scope<'_>, _end: End, _text: &str) -> AfterTurn {
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
    let (team, root, _rx) = team();
    let cancel = CancellationToken::new();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let layers = Layers::new(vec![
        Arc::new(say("a", &asked)),
        Arc::new(Say {
            gate: Gate::Stop("spent".into()),
            block: Some("no rm -rf"),
            ..say("b", &asked)
        }),
        Arc::new(say("c", &asked)),
    ]);
    let cx = scope(&team, root, &cancel);
    assert_eq!(
        layers.before_model_call(&cx).await,
        Gate::Stop("spent".into())
    );
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
        layers.before_tool(&cx, &tool).await,
        ToolGate::Block("no rm -rf".into())
    );
    assert_eq!(*asked.lock().unwrap(), ["a", "b", "a", "b"]);
}

#[tokio::test]
async fn every_layer_hears_a_turn_end_and_the_first_that_asks_to_go_on_decides() {
    let (team, root, _rx) = team();
    let cancel = CancellationToken::new();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let layers = Layers::new(vec![
        Arc::new(say("a", &asked)),
        Arc::new(Say {
            after: Some("first"),
            ..say("b", &asked)
        }),
        Arc::new(Say {
            after: Some("second"),
            ..say("c", &asked)
        }),
    ]);
    let cx = scope(&team, root, &cancel);
    assert_eq!(
        layers.turn_end(&cx, End::Completed, "done").await,
        AfterTurn::Continue("first".into())
    );
    assert_eq!(*asked.lock().unwrap(), ["a", "b", "c"]);
    assert_eq!(
        Layers::default().turn_end(&cx, End::Completed, "").await,
        AfterTurn::Rest
    );
}

#[tokio::test]
async fn the_pause_layer_holds_a_call_until_the_team_goes_on_and_gives_up_on_cancel() {
    let (team, root, mut rx) = team();
    let gate = Arc::new(PauseGate::new(true));
    let layer = PauseLayer::new(gate.clone());
    let cancel = CancellationToken::new();
    let opener = {
        let gate = gate.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            gate.set(false);
        })
    };
    assert_eq!(
        layer.before_model_call(&scope(&team, root, &cancel)).await,
        Gate::Go
    );
    opener.await.unwrap();
    let statuses: Vec<AgentStatus> = kinds(&mut rx)
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
    cancel.cancel();
    assert_eq!(
        layer.before_model_call(&scope(&team, root, &cancel)).await,
        Gate::Interrupted
    );
}

#[tokio::test]
async fn the_budget_layer_stops_a_worker_over_its_own_and_holds_the_team_over_the_sessions() {
    let (team, root, mut rx) = team();
    let worker = AgentId::new();
    let _ = team.add(agent(
        worker,
        Some(root),
        Budget {
            tokens: Some(100),
            ..Budget::default()
        },
    ));
    let pause = Arc::new(PauseGate::new(false));
    let layer = BudgetLayer::new(SessionLimits {
        budget: Arc::new(SessionBudget::new(Some(1.0))),
        pause: pause.clone(),
    });
    let cancel = CancellationToken::new();
    assert_eq!(
        layer
            .before_model_call(&scope(&team, worker, &cancel))
            .await,
        Gate::Go
    );
    team.add_usage(worker, 90, 20, 0.5);
    assert!(matches!(
        layer.before_model_call(&scope(&team, worker, &cancel)).await,
        Gate::Stop(why) if why.contains("tokens")
    ));
    // The session's limit is reached by the root's spend: the team is paused at once.
    team.add_usage(root, 10, 10, 0.6);
    layer.after_usage(&scope(&team, root, &cancel));
    assert!(!pause.set(true), "after_usage closed the pause gate");
    assert_eq!(
        layer.before_model_call(&scope(&team, root, &cancel)).await,
        Gate::Hold
    );
    let told = kinds(&mut rx);
    assert!(
        told.iter().any(|k| matches!(k, EventKind::Paused)),
        "{told:?}"
    );
}

#[tokio::test]
async fn the_loop_guard_layer_counts_repeats_per_agent_and_turn() {
    use crate::runtime::guard::{CallKind, Verdict};
    let (team, root, _rx) = team();
    let worker = AgentId::new();
    let _ = team.add(agent(worker, Some(root), Budget::default()));
    let layer = LoopGuardLayer::new(crate::config::GuardsConfig::default());
    let cancel = CancellationToken::new();
    let ask = Reviewed {
        name: "ask_user",
        arguments: r#"{"question":"what now?"}"#,
        kind: CallKind::Other,
        reports: crate::tools::Reports::Nothing,
        output: "nobody can answer",
        is_error: false,
    };
    let (me, other) = (scope(&team, root, &cancel), scope(&team, worker, &cancel));
    layer.turn_start(&me);
    layer.turn_start(&other);
    let verdicts: Vec<Verdict> = (0..5).map(|_| layer.review(&me, &ask)).collect();
    assert!(matches!(verdicts[2], Verdict::Note(_)), "{verdicts:?}");
    assert!(matches!(verdicts[4], Verdict::Stop(_)), "{verdicts:?}");
    // Another agent's count is its own, and a new turn starts afresh.
    assert_eq!(layer.review(&other, &ask), Verdict::Pass);
    layer.turn_start(&me);
    assert_eq!(layer.review(&me, &ask), Verdict::Pass);
    assert_eq!(
        layer.turn_end(&me, End::Completed, "").await,
        AfterTurn::Rest
    );
}
