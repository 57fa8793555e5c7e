//! The policies that watch calls, shape requests and touch files, each alone on a team
//! with no model server and no agent tasks: stall marks, compaction (over a model fake at
//! the trait), isolation's worktrees and leases, and verification's evidence.

use super::tests::{agent, anywhere, kinds, scope, team};
use super::*;
use crate::config::{Config, IsolationMode};
use crate::model::{ChatRequest, ChatResponse, ModelClient, ModelError, ModelProgress, Overflow};
use crate::protocol::{Budget, EventKind, HistoryItem, ToolCall};
use crate::roles::RoleSet;
use crate::runtime::checks::Checks;
use crate::runtime::compaction::Compactor;
use crate::runtime::isolation::WorkerIsolation;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use tokio::sync::Semaphore;

fn tool<'a>(reach: Reach, args: &'a Value, action: Option<&'a ApprovalAction>) -> ToolUse<'a> {
    ToolUse {
        call_id: "c1",
        name: "run_command",
        args,
        reach,
        reports: crate::tools::Reports::Nothing,
        writes: None,
        action,
    }
}

fn in_root<'a>(
    team: &'a Team,
    agent: AgentId,
    workspace: &'a Workspace,
    cancel: &'a CancellationToken,
) -> Scope<'a> {
    Scope {
        workspace,
        ..scope(team, agent, cancel)
    }
}

#[tokio::test]
async fn the_stall_layer_marks_a_quiet_call_stalled_until_it_ends_but_not_a_wait_for_the_team() {
    let (team, root, mut rx) = team();
    let cancel = CancellationToken::new();
    let cx = scope(&team, root, &cancel);
    let _ = kinds(&mut rx);
    let layers = Layers::new(vec![Arc::new(StallLayer::new(Some(
        Duration::from_millis(40),
    )))]);
    let pulse = Pulse::default();
    let out = layers
        .watch(&cx, &Waiting::ModelCall, &pulse, async {
            tokio::time::sleep(Duration::from_millis(250)).await;
            7
        })
        .await;
    assert_eq!(out, 7);
    let told = kinds(&mut rx);
    assert!(
        matches!(told.as_slice(), [EventKind::Stalled { on, .. }, EventKind::Unstalled] if on == "model call"),
        "{told:?}"
    );
    let args = serde_json::json!({"agent_ids": []});
    let wait = tool(Reach::Team, &args, None);
    layers
        .watch(&cx, &Waiting::Tool(&wait), &pulse, async {
            tokio::time::sleep(Duration::from_millis(150)).await;
        })
        .await;
    assert!(kinds(&mut rx).is_empty(), "waiting for workers is no stall");
}

#[tokio::test]
async fn a_beating_call_is_not_stalled() {
    let (team, root, mut rx) = team();
    let cancel = CancellationToken::new();
    let cx = scope(&team, root, &cancel);
    let _ = kinds(&mut rx);
    let layers = Layers::new(vec![Arc::new(StallLayer::new(Some(
        Duration::from_millis(80),
    )))]);
    let pulse = Pulse::default();
    layers
        .watch(&cx, &Waiting::ModelCall, &pulse, async {
            for _ in 0..10 {
                tokio::time::sleep(Duration::from_millis(20)).await;
                pulse.beat();
            }
        })
        .await;
    assert!(kinds(&mut rx).is_empty());
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

fn compaction(fail: bool) -> (CompactionLayer, Arc<Summarizer>) {
    let model = Arc::new(Summarizer {
        fail,
        calls: AtomicU32::new(0),
    });
    let compactor = Compactor {
        model: model.clone(),
        slots: Arc::new(Semaphore::new(1)),
        config: Arc::new(Config::default()),
    };
    let nobody: Arc<dyn Layer> = Arc::new(super::tests::Quiet);
    (CompactionLayer::new(Arc::new(compactor), nobody), model)
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
    let (team, root, _rx) = team();
    let worker = long_talker(&team, root);
    let cancel = CancellationToken::new();
    let cx = scope(&team, worker, &cancel);
    let (layer, model) = compaction(false);

    let mut roomy = setup(&team, worker, 1_000_000);
    assert_eq!(layer.shape_request(&cx, &mut roomy).await, Shape::Kept);
    assert_eq!(model.calls.load(Ordering::Relaxed), 0);

    let mut tight = setup(&team, worker, 4_000);
    let before = tight.request.history.len();
    assert_eq!(layer.shape_request(&cx, &mut tight).await, Shape::Changed);
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

#[tokio::test]
async fn a_failed_compaction_is_told_once_and_not_tried_again_until_the_next_turn() {
    let (team, root, mut rx) = team();
    let worker = long_talker(&team, root);
    let cancel = CancellationToken::new();
    let cx = scope(&team, worker, &cancel);
    let (layer, model) = compaction(true);
    layer.turn_start(&cx);
    let mut tight = setup(&team, worker, 4_000);
    // A cancelled summary call ends the turn as interrupted.
    assert_eq!(
        layer.shape_request(&cx, &mut tight).await,
        Shape::Interrupted
    );
    assert_eq!(
        layer.overflow(&cx, &mut tight, &Overflow::default()).await,
        Recovery::Interrupted
    );
    assert_eq!(model.calls.load(Ordering::Relaxed), 2);
    let _ = kinds(&mut rx);

    let (layer, model) = compaction(false);
    let short = {
        let id = AgentId::new();
        let _ = team.add(agent(id, Some(root), Budget::default()));
        id
    };
    let cx = scope(&team, short, &cancel);
    let mut req = setup(&team, short, 8_000);
    // Nothing to compact or cut: an overflow cannot be helped, and says what does not fit.
    assert!(matches!(
        layer.overflow(&cx, &mut req, &Overflow::default()).await,
        Recovery::GiveUp(why) if why.contains("nothing is left to compact")
    ));
    assert_eq!(model.calls.load(Ordering::Relaxed), 0);
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
    let iso = Arc::new(iso);
    let layer = IsolationLayer::new(iso.clone());
    let (team, root, mut rx) = team();
    let worker = AgentId::new();
    let _ = team.add(agent(worker, Some(root), Budget::default()));
    let cancel = CancellationToken::new();
    let ws = Workspace::new(repo.path()).unwrap();
    let cx = in_root(&team, worker, &ws, &cancel);
    let args = serde_json::json!({});

    layer
        .prepare_tool(&cx, &tool(Reach::Reads, &args, None))
        .await;
    assert!(!iso.has_own(worker), "a read costs no worktree");
    layer
        .prepare_tool(&cx, &tool(Reach::ChangesFiles, &args, None))
        .await;
    assert!(iso.has_own(worker));
    assert!(
        kinds(&mut rx)
            .iter()
            .any(|k| matches!(k, EventKind::WorktreeCreated { .. }))
    );
    // The persona writes in the workspace itself.
    let cx = in_root(&team, root, &ws, &cancel);
    layer
        .prepare_tool(&cx, &tool(Reach::ChangesFiles, &args, None))
        .await;
    assert!(!iso.has_own(root));
    iso.close(&team).await;
}

#[tokio::test]
async fn in_a_shared_workspace_a_file_one_worker_writes_is_refused_to_another() {
    let dir = tempfile::tempdir().unwrap();
    let (iso, _) = WorkerIsolation::open(
        IsolationMode::Shared,
        &RoleSet::default(),
        dir.path(),
        None,
        "s",
    );
    let layer = IsolationLayer::new(Arc::new(iso));
    let (team, root, _rx) = team();
    let (first, second) = (AgentId::new(), AgentId::new());
    for id in [first, second] {
        let _ = team.add(agent(id, Some(root), Budget::default()));
    }
    let cancel = CancellationToken::new();
    let ws = Workspace::new(dir.path()).unwrap();
    let args = serde_json::json!({"path": "notes.md"});
    let change = ApprovalAction::FileChange {
        path: "notes.md".into(),
        diff: String::new(),
    };
    let write = tool(Reach::ChangesFiles, &args, Some(&change));
    let by = |id| in_root(&team, id, &ws, &cancel);
    assert_eq!(layer.before_tool(&by(first), &write).await, ToolGate::Go);
    assert_eq!(layer.before_tool(&by(first), &write).await, ToolGate::Go);
    assert!(matches!(
        layer.before_tool(&by(second), &write).await,
        ToolGate::Block(why) if why.contains("notes.md")
    ));
    // The persona takes no leases.
    assert_eq!(layer.before_tool(&by(root), &write).await, ToolGate::Go);
}

#[tokio::test]
async fn the_verification_layer_records_what_a_workers_calls_changed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("old.txt"), "old\n").unwrap();
    let checks = Arc::new(Checks::new(true, &RoleSet::default()));
    let layer = VerificationLayer::new(checks.clone());
    let (team, root, _rx) = team();
    let worker = AgentId::new();
    let _ = team.add(agent(worker, Some(root), Budget::default()));
    let cancel = CancellationToken::new();
    let ws = Workspace::new(dir.path()).unwrap();
    let cx = in_root(&team, worker, &ws, &cancel);

    let mut task = "write new.txt".to_string();
    layer.before_task(&cx, &mut task).await;
    assert!(checks.is_tracked(worker));
    // A command is measured by a snapshot before and after.
    let args = serde_json::json!({"command": "touch new.txt"});
    let command = tool(Reach::ChangesFiles, &args, None);
    layer.before_run(&cx, &command).await;
    std::fs::write(dir.path().join("new.txt"), "new\n").unwrap();
    let done = ToolDone {
        output: "",
        is_error: false,
    };
    layer.after_tool(&cx, &command, &done).await;
    // A file tool names its file.
    let change = ApprovalAction::FileChange {
        path: "./sub/../old.txt".into(),
        diff: String::new(),
    };
    let edit = tool(Reach::ChangesFiles, &args, Some(&change));
    layer.before_run(&cx, &edit).await;
    layer.after_tool(&cx, &edit, &done).await;
    // A read records nothing.
    std::fs::write(dir.path().join("other.txt"), "x").unwrap();
    let read = tool(Reach::Reads, &args, None);
    layer.before_run(&cx, &read).await;
    layer.after_tool(&cx, &read, &done).await;

    let attempt = checks.next_attempt(worker).unwrap();
    assert_eq!(attempt.text, "write new.txt");
    let touched: Vec<&str> = attempt.touched.iter().map(String::as_str).collect();
    assert_eq!(touched, ["new.txt", "old.txt"]);

    // The persona's calls are never checked.
    let mut text = String::new();
    layer
        .before_task(&in_root(&team, root, &ws, &cancel), &mut text)
        .await;
    assert!(!checks.is_tracked(root));
    let _ = anywhere();
}

#[tokio::test]
async fn the_progress_layer_stops_a_persona_turn_whose_calls_bring_nothing_new() {
    let (team, root, mut rx) = team();
    let worker = AgentId::new();
    let _ = team.add(agent(worker, Some(root), Budget::default()));
    let cancel = CancellationToken::new();
    let (me, it) = (scope(&team, root, &cancel), scope(&team, worker, &cancel));
    let layer = ProgressLayer::new(3);
    let done = |output| ToolDone {
        output,
        is_error: false,
    };
    let read = |path: &'static str| serde_json::json!({"path": path});
    let (a, b) = (read("a.rs"), read("b.rs"));
    layer.turn_start(&me);
    // Distinct reads are progress, however many: 50 calls, each new.
    for i in 0..50 {
        assert_eq!(layer.before_model_call(&me).await, Gate::Go, "call {i}");
        let args = serde_json::json!({"path": format!("f{i}.rs")});
        layer
            .after_tool(&me, &tool(Reach::Reads, &args, None), &done("x"))
            .await;
    }
    // Two reads, then the same two answered the same, round and round: once three calls in
    // a row brought nothing new, the next is not made.
    for args in [&a, &b, &a, &b, &a] {
        assert_eq!(layer.before_model_call(&me).await, Gate::Go);
        layer
            .after_tool(&me, &tool(Reach::Reads, args, None), &done("x"))
            .await;
    }
    let _ = kinds(&mut rx);
    assert!(matches!(
        layer.before_model_call(&me).await,
        Gate::Stop(why) if why.contains("limits.max_turn_calls") && why.contains("nothing new")
    ));
    assert!(
        kinds(&mut rx)
            .iter()
            .any(|k| matches!(k, EventKind::Error { message } if message.contains("no progress")))
    );
    // The same read answered otherwise (the file changed) is new; so is a worker's outcome,
    // and a worker's own new result.
    layer
        .after_tool(&me, &tool(Reach::Reads, &a, None), &done("y"))
        .await;
    for _ in 0..3 {
        assert_eq!(layer.before_model_call(&me).await, Gate::Go);
    }
    assert!(matches!(layer.before_model_call(&me).await, Gate::Stop(_)));
    layer.settle(&it, TurnEnd::Returned).await;
    assert_eq!(layer.before_model_call(&me).await, Gate::Go);
    // A worker's calls are not counted; its new results are progress.
    for _ in 0..10 {
        assert_eq!(layer.before_model_call(&it).await, Gate::Go);
    }
    layer
        .after_tool(&it, &tool(Reach::Reads, &a, None), &done("x"))
        .await;
    for _ in 0..3 {
        assert_eq!(layer.before_model_call(&me).await, Gate::Go);
    }
    // A new turn starts afresh.
    layer.turn_start(&me);
    layer
        .after_tool(&me, &tool(Reach::Reads, &a, None), &done("x"))
        .await;
    for _ in 0..3 {
        assert_eq!(layer.before_model_call(&me).await, Gate::Go);
    }
    assert_eq!(
        ProgressLayer::new(0).before_model_call(&me).await,
        Gate::Go,
        "0: never"
    );
}

#[tokio::test]
async fn the_same_message_to_the_same_worker_with_nothing_changed_since_is_not_sent_again() {
    let (team, root, _rx) = team();
    let worker = AgentId::new();
    let _ = team.add(agent(worker, Some(root), Budget::default()));
    let cancel = CancellationToken::new();
    let (me, it) = (scope(&team, root, &cancel), scope(&team, worker, &cancel));
    let layer = LoopGuardLayer::new(crate::config::GuardsConfig::default());
    let ack = serde_json::json!({"agent_id": "abc", "message": "Thanks, all done."});
    let speak = ToolUse {
        name: "speak_to_agent",
        ..tool(Reach::Team, &ack, None)
    };
    assert_eq!(layer.before_tool(&me, &speak).await, ToolGate::Go);
    // Across turns too.
    layer.turn_start(&me);
    assert!(matches!(
        layer.before_tool(&me, &speak).await,
        ToolGate::Block(why) if why.contains("not sent")
    ));
    // Another message goes.
    let other = serde_json::json!({"agent_id": "abc", "message": "Now add tests."});
    let new_work = ToolUse {
        name: "speak_to_agent",
        ..tool(Reach::Team, &other, None)
    };
    assert_eq!(layer.before_tool(&me, &new_work).await, ToolGate::Go);
    // Once a file changed, the same message may matter again.
    let args = serde_json::json!({});
    let done = ToolDone {
        output: "",
        is_error: false,
    };
    layer
        .after_tool(&it, &tool(Reach::ChangesFiles, &args, None), &done)
        .await;
    assert_eq!(layer.before_tool(&me, &speak).await, ToolGate::Go);
    // Other tools are not its business.
    let read = tool(Reach::Reads, &args, None);
    assert_eq!(layer.before_tool(&me, &read).await, ToolGate::Go);
    assert_eq!(layer.before_tool(&me, &read).await, ToolGate::Go);
}
