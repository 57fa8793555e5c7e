//! The policies that watch calls, shape requests and touch files, each alone on a test
//! session with no model server and no agent tasks: stall marks, compaction (over a model
//! fake at the trait), isolation's worktrees and leases, verification's evidence, the
//! team's progress and the loop guard's rule across turns.

use crate::config::{Config, IsolationMode};
use crate::model::{ChatRequest, ChatResponse, ModelClient, ModelError, ModelProgress, Overflow};
use crate::protocol::{AgentId, ApprovalAction, Budget, EventKind, HistoryItem, ToolCall, TurnEnd};
use crate::roles::RoleSet;
use crate::runtime::cx::{AgentCx, Layer, ModelNext, Policies, Policy};
use crate::runtime::points::{Admit, Called, ModelCall, Purpose, ToolDone, ToolUse, Waiting};
use crate::runtime::policies::compaction::CompactionPolicy;
use crate::runtime::policies::compaction::compactor::Trigger;
use crate::runtime::policies::compaction::fit::{Recovery, ViaStack, after_overflow, compact};
use crate::runtime::policies::isolation::worker::WorkerIsolation;
use crate::runtime::policies::loop_guard::layer::LoopGuardPolicy;
use crate::runtime::policies::progress::ProgressPolicy;
use crate::runtime::policies::stall::{Pulse, watch};
use crate::runtime::policies::verification::checks::Checks;
use crate::runtime::request::RequestSetup;
use crate::runtime::team::Team;
use crate::runtime::testing::{Gate, Parts, Points, Shape, TestSession, ToolGate, agent};
use crate::runtime::testing::{call_tool, every, tool};
use crate::runtime::toolbox::Reach;
use async_trait::async_trait;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn session(dir: &std::path::Path) -> TestSession {
    TestSession::new(dir, Parts::default())
}

#[tokio::test]
async fn the_stall_watch_marks_a_quiet_call_stalled_until_it_ends_but_not_a_wait_for_the_team() {
    let dir = tempfile::tempdir().unwrap();
    let mut ts = session(dir.path());
    let _ = ts.kinds();
    let (team, root) = (&ts.session.team, ts.root);
    let after = Some(Duration::from_millis(40));
    let pulse = Pulse::default();
    let out = watch(team, root, after, &Waiting::ModelCall, &pulse, async {
        tokio::time::sleep(Duration::from_millis(250)).await;
        7
    })
    .await;
    assert_eq!(out, 7);
    let told = ts.kinds();
    assert!(
        matches!(told.as_slice(), [EventKind::Stalled { on, .. }, EventKind::Unstalled] if on == "model call"),
        "{told:?}"
    );
    let args = serde_json::json!({"agent_ids": []});
    let wait = tool(Reach::Team, &args, None);
    let team = &ts.session.team;
    watch(team, root, after, &Waiting::Tool(&wait), &pulse, async {
        tokio::time::sleep(Duration::from_millis(150)).await;
    })
    .await;
    assert!(ts.kinds().is_empty(), "waiting for workers is no stall");
}

#[tokio::test]
async fn a_beating_call_is_not_stalled() {
    let dir = tempfile::tempdir().unwrap();
    let mut ts = session(dir.path());
    let _ = ts.kinds();
    let pulse = Pulse::default();
    let after = Some(Duration::from_millis(80));
    watch(
        &ts.session.team,
        ts.root,
        after,
        &Waiting::ModelCall,
        &pulse,
        async {
            for _ in 0..10 {
                tokio::time::sleep(Duration::from_millis(20)).await;
                pulse.beat();
            }
        },
    )
    .await;
    assert!(ts.kinds().is_empty());
}

/// A model that answers every summary request with the same text, or fails.
struct Summarizer {
    fail: bool,
    calls: AtomicU32,
}

#[async_trait]
impl ModelClient for Summarizer {
    async fn stream_chat(
        &self,
        request: &ChatRequest,
        _progress: &(dyn Fn(ModelProgress) + Send + Sync),
        _cancel: &CancellationToken,
    ) -> Result<ChatResponse, ModelError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        assert!(
            request.tools.is_empty(),
            "a summary request offers no tools"
        );
        if self.fail {
            return Err(ModelError::Cancelled);
        }
        Ok(ChatResponse {
            text: "Goals: the task. Done: read ten files.".into(),
            ..Default::default()
        })
    }
}

/// A test session on a summarizing model, and the compaction policy alone.
fn compaction(dir: &std::path::Path, fail: bool) -> (TestSession, Arc<Summarizer>, Arc<Policies>) {
    let model = Arc::new(Summarizer {
        fail,
        calls: AtomicU32::new(0),
    });
    let ts = TestSession::new(
        dir,
        Parts {
            model: model.clone(),
            config: Config::default(),
            ..Parts::default()
        },
    );
    let policy: Box<dyn Policy> = Box::new(CompactionPolicy {
        compactor: ts.compactor.clone(),
        hooks: ts.hooks.clone(),
    });
    let policies = Arc::new(Policies::new(vec![policy]));
    (ts, model, policies)
}

/// A worker whose history is its task and twenty long read calls.
fn long_talker(team: &Team, root: AgentId) -> AgentId {
    let id = AgentId::new();
    let mut history = vec![HistoryItem::user("read every file")];
    for i in 0..20 {
        let id = format!("c{i}");
        history.push(HistoryItem::assistant(
            String::new(),
            vec![ToolCall {
                id: id.clone(),
                name: "read_file".into(),
                arguments: format!(r#"{{"path":"f{i}.rs"}}"#),
            }],
        ));
        history.push(HistoryItem::ToolResult {
            call_id: id,
            name: "read_file".into(),
            output: "x".repeat(800),
            is_error: false,
        });
    }
    let mut new = agent(id, Some(root), Budget::default());
    new.history = history;
    let _ = team.add(new);
    id
}

fn setup(team: &Team, agent: AgentId, window: u64) -> RequestSetup {
    RequestSetup {
        request: ChatRequest {
            model: "m".into(),
            system_prompt: "You work.".into(),
            history: team.request_view(agent).unwrap().history,
            tools: Arc::from(Vec::new()),
        },
        max_iterations: 50,
        fixed_tokens: 50,
        window,
    }
}

#[tokio::test]
async fn the_compaction_layer_shortens_a_request_past_its_threshold_and_leaves_others() {
    let dir = tempfile::tempdir().unwrap();
    let (ts, model, policies) = compaction(dir.path(), false);
    let team = &ts.session.team;
    let worker = long_talker(team, ts.root);
    let cx = ts.cx_with(&policies, worker);

    let mut roomy = setup(team, worker, 1_000_000);
    assert_eq!(cx.shape_request(&mut roomy).await, Shape::Kept);
    assert_eq!(model.calls.load(Ordering::Relaxed), 0);

    let mut tight = setup(team, worker, 4_000);
    let before = tight.request.history.len();
    assert_eq!(cx.shape_request(&mut tight).await, Shape::Changed);
    assert_eq!(model.calls.load(Ordering::Relaxed), 1);
    let after = &tight.request.history;
    assert!(after.len() < before, "{} of {before} items", after.len());
    assert!(
        after.iter().any(
            |i| matches!(i, HistoryItem::Summary { text, .. } if text.contains("read ten files"))
        ),
        "the request carries the summary"
    );
    // The request is the agent's history now.
    assert_eq!(*team.request_view(worker).unwrap().history, **after);
}

/// A layer below compaction that notes what each model call it passes on is for.
struct Purposes(Arc<std::sync::Mutex<Vec<Purpose>>>);

#[async_trait]
impl Layer for Purposes {
    async fn model_call(&self, cx: &AgentCx, call: &mut ModelCall, next: ModelNext<'_>) -> Called {
        crate::sync::lock(&self.0).push(call.purpose);
        next.run(cx, call).await
    }
}

/// The summary request is a model call of the agent's own, down the rest of its stack
/// (the layers below compaction, the model slots, the stall watch), and `/compact`'s goes
/// down the whole stack: before, both went to the model beside it.
#[tokio::test]
async fn a_summary_request_goes_down_the_agents_own_stack() {
    let dir = tempfile::tempdir().unwrap();
    let (ts, model, _) = compaction(dir.path(), false);
    let team = &ts.session.team;
    let worker = long_talker(team, ts.root);
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let below = {
        let seen = seen.clone();
        every(move || Purposes(seen.clone()))
    };
    let compacting: Box<dyn Policy> = Box::new(CompactionPolicy {
        compactor: ts.compactor.clone(),
        hooks: ts.hooks.clone(),
    });
    let cx = ts.cx(vec![compacting, below], worker);
    let mut tight = setup(team, worker, 4_000);
    assert_eq!(cx.shape_request(&mut tight).await, Shape::Changed);
    assert_eq!(*crate::sync::lock(&seen), [Purpose::Summary, Purpose::Turn]);
    assert_eq!(model.calls.load(Ordering::Relaxed), 1);

    // `/compact`, between turns: down the whole stack.
    let other = long_talker(team, ts.root);
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let only = {
        let seen = seen.clone();
        every(move || Purposes(seen.clone()))
    };
    let cx = ts.cx(vec![only], other);
    let mut req = setup(team, other, 4_000);
    let done = compact(
        &ts.compaction_policy(),
        &cx,
        &mut req,
        (Trigger::User, 1.0),
        &ViaStack(&cx),
    )
    .await;
    assert!(done.is_ok(), "{done:?}");
    assert_eq!(*crate::sync::lock(&seen), [Purpose::Summary]);
    assert_eq!(model.calls.load(Ordering::Relaxed), 2);
}

#[tokio::test]
async fn a_failed_compaction_is_told_once_and_not_tried_again_until_the_next_turn() {
    let dir = tempfile::tempdir().unwrap();
    let (mut ts, model, policies) = compaction(dir.path(), true);
    let worker = long_talker(&ts.session.team, ts.root);
    let cx = ts.cx_with(&policies, worker);
    cx.turn_start().await;
    let mut tight = setup(&ts.session.team, worker, 4_000);
    // A cancelled summary call ends the turn as interrupted.
    assert_eq!(cx.shape_request(&mut tight).await, Shape::Interrupted);
    assert_eq!(
        after_overflow(
            &ts.compaction_policy(),
            &cx,
            &mut tight,
            &Overflow::default(),
            bare()
        )
        .await,
        Recovery::Interrupted
    );
    assert_eq!(model.calls.load(Ordering::Relaxed), 2);
    let _ = ts.kinds();

    let (ts, model, policies) = compaction(dir.path(), false);
    let short = ts.add(ts.root, Budget::default());
    let cx = ts.cx_with(&policies, short);
    let mut req = setup(&ts.session.team, short, 8_000);
    // Nothing to compact or cut: an overflow cannot be helped, and says what does not fit.
    assert!(matches!(
        after_overflow(&ts.compaction_policy(), &cx, &mut req, &Overflow::default(), bare()).await,
        Recovery::GiveUp(why) if why.contains("nothing is left to compact")
    ));
    assert_eq!(model.calls.load(Ordering::Relaxed), 0);
}

/// The stack below the compaction layer: the core alone.
fn bare() -> ModelNext<'static> {
    ModelNext::bare(&crate::runtime::model_call::Core)
}

fn git(dir: &std::path::Path, args: &[&str]) {
    let ok = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
        .status
        .success();
    assert!(ok, "git {args:?}");
}

#[tokio::test]
async fn the_isolation_layer_gives_a_worker_its_worktree_at_its_first_change_not_its_first_read() {
    let repo = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    git(repo.path(), &["init", "-q"]);
    std::fs::write(repo.path().join("a.txt"), "a\n").unwrap();
    git(repo.path(), &["add", "."]);
    git(repo.path(), &["commit", "-q", "-m", "start"]);
    let (iso, _) = WorkerIsolation::open(
        IsolationMode::Worktree,
        &RoleSet::default(),
        repo.path(),
        Some(data.path()),
        "session-1",
    );
    let mut ts = TestSession::new(
        repo.path(),
        Parts {
            isolation: Some(iso),
            ..Parts::default()
        },
    );
    let iso = ts.isolation.clone();
    let worker = ts.add(ts.root, Budget::default());
    let policies = Arc::new(Policies::new(vec![Box::new(ts.isolation_policy())]));
    let cx = ts.cx_with(&policies, worker);
    let args = serde_json::json!({});

    cx.before_tool(&tool(Reach::Reads, &args, None), 0).await;
    assert!(!iso.has_own(worker), "a read costs no worktree");
    cx.before_tool(&tool(Reach::ChangesFiles, &args, None), 0)
        .await;
    assert!(iso.has_own(worker));
    assert!(
        ts.kinds()
            .iter()
            .any(|k| matches!(k, EventKind::WorktreeCreated { .. }))
    );
    // The persona writes in the workspace itself.
    let cx = ts.cx_with(&policies, ts.root);
    cx.before_tool(&tool(Reach::ChangesFiles, &args, None), 0)
        .await;
    assert!(!iso.has_own(ts.root));
    iso.close(&ts.session.team).await;
}

#[tokio::test]
async fn in_a_shared_workspace_a_file_one_worker_writes_is_refused_to_another() {
    let dir = tempfile::tempdir().unwrap();
    let ts = session(dir.path());
    let policies = Arc::new(Policies::new(vec![Box::new(ts.isolation_policy())]));
    let (first, second) = (
        ts.add(ts.root, Budget::default()),
        ts.add(ts.root, Budget::default()),
    );
    let args = serde_json::json!({"path": "notes.md"});
    let change = ApprovalAction::FileChange {
        path: "notes.md".into(),
        diff: String::new(),
    };
    let write = tool(Reach::ChangesFiles, &args, Some(&change));
    let by = |id| ts.cx_with(&policies, id);
    assert_eq!(by(first).before_tool(&write, 0).await.0, ToolGate::Go);
    assert_eq!(by(first).before_tool(&write, 0).await.0, ToolGate::Go);
    assert!(matches!(
        by(second).before_tool(&write, 0).await.0,
        ToolGate::Block(why) if why.contains("notes.md")
    ));
    // The persona takes no leases.
    assert_eq!(by(ts.root).before_tool(&write, 0).await.0, ToolGate::Go);
}

#[tokio::test]
async fn the_verification_layer_records_what_a_workers_calls_changed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("old.txt"), "old\n").unwrap();
    let checks = Arc::new(Checks::new(true, &RoleSet::default()));
    let ts = TestSession::new(
        dir.path(),
        Parts {
            checks: Some(checks.clone()),
            ..Parts::default()
        },
    );
    let policies = Arc::new(Policies::new(vec![Box::new(ts.verification_policy())]));
    let worker = ts.add(ts.root, Budget::default());
    let cx = ts.cx_with(&policies, worker);

    let mut task = "write new.txt".to_string();
    assert_eq!(cx.before_task(&mut task, false).await, Admit::Go);
    assert!(checks.is_tracked(worker));
    // A command is measured by a snapshot before and after.
    let args = serde_json::json!({"command": "touch new.txt"});
    let command = tool(Reach::ChangesFiles, &args, None);
    let done = ToolDone {
        output: "",
        is_error: false,
    };
    let new = dir.path().join("new.txt");
    call_tool(&cx, &command, &done, move || {
        std::fs::write(new, "new\n").unwrap()
    })
    .await;
    // A file tool names its file.
    let change = ApprovalAction::FileChange {
        path: "./sub/../old.txt".into(),
        diff: String::new(),
    };
    let edit = tool(Reach::ChangesFiles, &args, Some(&change));
    call_tool(&cx, &edit, &done, || {}).await;
    // A read records nothing.
    std::fs::write(dir.path().join("other.txt"), "x").unwrap();
    let read = tool(Reach::Reads, &args, None);
    call_tool(&cx, &read, &done, || {}).await;

    let attempt = checks.next_attempt(worker).unwrap();
    assert_eq!(attempt.text, "write new.txt");
    let touched: Vec<&str> = attempt.touched.iter().map(String::as_str).collect();
    assert_eq!(touched, ["new.txt", "old.txt"]);

    // The persona's calls are never checked.
    let mut text = String::new();
    ts.cx_with(&policies, ts.root)
        .before_task(&mut text, true)
        .await;
    assert!(!checks.is_tracked(ts.root));
}

#[tokio::test]
async fn the_progress_layer_stops_a_persona_turn_whose_calls_bring_nothing_new() {
    let dir = tempfile::tempdir().unwrap();
    let mut ts = session(dir.path());
    let worker = ts.add(ts.root, Budget::default());
    let policies = Arc::new(Policies::new(vec![Box::new(ProgressPolicy::new(3))]));
    let (me, it) = (
        ts.cx_with(&policies, ts.root),
        ts.cx_with(&policies, worker),
    );
    let done = |output| ToolDone {
        output,
        is_error: false,
    };
    let read = |path: &'static str| serde_json::json!({"path": path});
    let (a, b) = (read("a.rs"), read("b.rs"));
    me.turn_start().await;
    // Distinct reads are progress, however many: 50 calls, each new.
    for i in 0..50 {
        assert_eq!(me.before_model_call().await, Gate::Go, "call {i}");
        let args = serde_json::json!({"path": format!("f{i}.rs")});
        me.after_tool(&tool(Reach::Reads, &args, None), &done("x"))
            .await;
    }
    // Two reads, then the same two answered the same, round and round: once three calls in
    // a row brought nothing new, the next is not made.
    for args in [&a, &b, &a, &b, &a] {
        assert_eq!(me.before_model_call().await, Gate::Go);
        me.after_tool(&tool(Reach::Reads, args, None), &done("x"))
            .await;
    }
    let _ = ts.kinds();
    assert!(matches!(
        me.before_model_call().await,
        Gate::Stop(why) if why.contains("limits.max_turn_calls") && why.contains("nothing new")
    ));
    assert!(
        ts.kinds()
            .iter()
            .any(|k| matches!(k, EventKind::Error { message } if message.contains("no progress")))
    );
    // The same read answered otherwise (the file changed) is new; so is a worker's outcome,
    // and a worker's own new result.
    me.after_tool(&tool(Reach::Reads, &a, None), &done("y"))
        .await;
    for _ in 0..3 {
        assert_eq!(me.before_model_call().await, Gate::Go);
    }
    assert!(matches!(me.before_model_call().await, Gate::Stop(_)));
    it.settle(TurnEnd::Returned).await;
    assert_eq!(me.before_model_call().await, Gate::Go);
    // A worker's calls are not counted; its new results are progress.
    for _ in 0..10 {
        assert_eq!(it.before_model_call().await, Gate::Go);
    }
    it.after_tool(&tool(Reach::Reads, &a, None), &done("x"))
        .await;
    for _ in 0..3 {
        assert_eq!(me.before_model_call().await, Gate::Go);
    }
    // A new turn starts afresh.
    me.turn_start().await;
    me.after_tool(&tool(Reach::Reads, &a, None), &done("x"))
        .await;
    for _ in 0..3 {
        assert_eq!(me.before_model_call().await, Gate::Go);
    }
    let never = ts.cx(vec![Box::new(ProgressPolicy::new(0))], ts.root);
    never.turn_start().await;
    for _ in 0..10 {
        assert_eq!(never.before_model_call().await, Gate::Go, "0: never");
    }
}

#[tokio::test]
async fn the_same_message_to_the_same_worker_with_nothing_changed_since_is_not_sent_again() {
    let dir = tempfile::tempdir().unwrap();
    let ts = session(dir.path());
    let worker = ts.add(ts.root, Budget::default());
    let policies = Arc::new(Policies::new(vec![Box::new(LoopGuardPolicy::new(
        crate::config::GuardsConfig::default(),
    ))]));
    let (me, it) = (
        ts.cx_with(&policies, ts.root),
        ts.cx_with(&policies, worker),
    );
    let ack = serde_json::json!({"agent_id": "abc", "message": "Thanks, all done."});
    let speak = ToolUse {
        name: "speak_to_agent",
        ..tool(Reach::Team, &ack, None)
    };
    assert_eq!(me.before_tool(&speak, 0).await.0, ToolGate::Go);
    // Across turns too.
    me.turn_start().await;
    assert!(matches!(
        me.before_tool(&speak, 0).await.0,
        ToolGate::Block(why) if why.contains("not sent")
    ));
    // Another message goes.
    let other = serde_json::json!({"agent_id": "abc", "message": "Now add tests."});
    let new_work = ToolUse {
        name: "speak_to_agent",
        ..tool(Reach::Team, &other, None)
    };
    assert_eq!(me.before_tool(&new_work, 0).await.0, ToolGate::Go);
    // Once a file changed, the same message may matter again.
    let args = serde_json::json!({});
    let done = ToolDone {
        output: "",
        is_error: false,
    };
    it.after_tool(&tool(Reach::ChangesFiles, &args, None), &done)
        .await;
    assert_eq!(me.before_tool(&speak, 0).await.0, ToolGate::Go);
    // Other tools are not its business.
    let read = tool(Reach::Reads, &args, None);
    assert_eq!(me.before_tool(&read, 0).await.0, ToolGate::Go);
    assert_eq!(me.before_tool(&read, 0).await.0, ToolGate::Go);
}
