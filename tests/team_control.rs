//! The user in charge of a running team: pause and go on, stop everything, Ctrl+C that
//! leaves a complete log, and a killed run that continues where it stopped. Timing claims
//! are checked on the mock server's own clock (when each request arrived).

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use ::squad::protocol::{AgentStatus, ApprovalPolicy, EventKind, HistoryItem, Op};
use common::agents::*;
use common::engine::*;
use common::*;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A supervisor that spawns two workers and waits for them; each worker reads a file
/// (its first answer takes `worker_delay`), then returns.
fn two_readers(mock: &MockServer, worker_delay: Duration) {
    mock.set_responder(move |body| {
        if is_worker(body) {
            return match tool_count(body) {
                0 => MockResponse::tool_call("r", "read_file", r#"{"path":"a.txt"}"#)
                    .with_delay(worker_delay),
                _ => MockResponse::tool_call(
                    "ret",
                    "return_results",
                    &good_result("read it").to_string(),
                ),
            };
        }
        let last_user = transcript(body)
            .iter()
            .rev()
            .find(|(role, _)| role == "user")
            .map(|(_, text)| text.clone())
            .unwrap_or_default();
        if last_user.contains("hello again") {
            return MockResponse::text("fresh start");
        }
        match tool_count(body) {
            0 => MockResponse::tool_calls(vec![
                call(
                    "s1",
                    "spawn_agent",
                    json!({"role_name": "code_reviewer", "task_prompt": "read a.txt"}),
                ),
                call(
                    "s2",
                    "spawn_agent",
                    json!({"role_name": "code_reviewer", "task_prompt": "read a.txt too"}),
                ),
            ]),
            2 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            _ => MockResponse::text("both read it"),
        }
    });
}

#[tokio::test(flavor = "multi_thread")]
async fn pause_holds_every_new_call_until_resume_then_the_run_completes() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    two_readers(&mock, Duration::from_millis(500));
    let mut h = start_engine(&mock, &sb, ApprovalPolicy::Auto).await;
    let root = h.info.root_agent;
    let mut seen = Vec::new();
    h.ops
        .send(Op::UserMessage {
            to: None,
            text: "read it twice".into(),
        })
        .unwrap();
    // The supervisor's two calls and both workers' first (slow) calls.
    assert!(mock.wait_for_requests(4, Duration::from_secs(20)).await);
    h.ops.send(Op::Pause).unwrap();
    next_event(&mut h, &mut seen, |e| matches!(e.kind, EventKind::Paused)).await;
    let paused_at = Instant::now();
    // The workers' calls in flight finish; their read_file calls are then held.
    let mut held = 0;
    while held < 2 {
        next_event(&mut h, &mut seen, |e| {
            matches!(
                e.kind,
                EventKind::AgentStatus {
                    status: AgentStatus::Paused,
                    ..
                }
            )
        })
        .await;
        held += 1;
    }
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(mock.requests().len(), 4, "no request starts while paused");
    assert!(
        !seen
            .iter()
            .any(|e| matches!(e.kind, EventKind::ToolCallBegin { .. }) && e.agent_id != root),
        "no worker tool call starts while paused"
    );
    let resumed_at = Instant::now();
    h.ops.send(Op::Resume).unwrap();
    next_event(&mut h, &mut seen, |e| matches!(e.kind, EventKind::Resumed)).await;
    next_event(&mut h, &mut seen, |e| {
        e.agent_id == root && matches!(e.kind, EventKind::TurnFinished { .. })
    })
    .await;

    let reqs = mock.requests();
    assert_eq!(
        reqs.len(),
        7,
        "two worker returns and the supervisor's answer"
    );
    for r in &reqs[4..] {
        assert!(
            r.received_at > resumed_at,
            "a request started during the pause"
        );
    }
    assert!(reqs[..4].iter().all(|r| r.received_at < paused_at));
    let last = &reqs.last().unwrap().body;
    assert!(
        last.to_string().contains("read it"),
        "the results reached the supervisor"
    );
    // Each worker went running → paused → running → completed.
    for w in seen
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::AgentSpawned {
                    parent_id: Some(_),
                    ..
                }
            )
        })
        .map(|e| e.agent_id)
    {
        let s = statuses_of(&seen, w);
        assert_eq!(
            s,
            [
                AgentStatus::Running,
                AgentStatus::Paused,
                AgentStatus::Running,
                AgentStatus::Completed
            ],
            "{w}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn stop_cancels_every_worker_ends_the_turn_and_the_next_message_is_served() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    two_readers(&mock, Duration::from_secs(30));
    let mut h = start_engine(&mock, &sb, ApprovalPolicy::Auto).await;
    let root = h.info.root_agent;
    let mut seen = Vec::new();
    h.ops
        .send(Op::UserMessage {
            to: None,
            text: "read it twice".into(),
        })
        .unwrap();
    assert!(mock.wait_for_requests(4, Duration::from_secs(20)).await);
    let stop_at = Instant::now();
    h.ops.send(Op::Stop).unwrap();
    let stopped = next_event(&mut h, &mut seen, |e| {
        matches!(e.kind, EventKind::Stopped { .. })
    })
    .await;
    assert_eq!(stopped.kind, EventKind::Stopped { cancelled: 2 });
    next_event(&mut h, &mut seen, |e| matches!(e.kind, EventKind::Idle)).await;
    assert!(
        stop_at.elapsed() < Duration::from_secs(10),
        "the workers' 30 s calls were cut short"
    );
    let workers: Vec<_> = seen
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::AgentSpawned {
                    parent_id: Some(_),
                    ..
                }
            )
        })
        .map(|e| e.agent_id)
        .collect();
    assert_eq!(workers.len(), 2);
    for w in &workers {
        assert_eq!(
            statuses_of(&seen, *w).last(),
            Some(&AgentStatus::Cancelled),
            "{w}"
        );
    }
    assert!(
        seen.iter()
            .any(|e| e.agent_id == root && matches!(e.kind, EventKind::TurnFinished { .. }))
    );

    h.ops
        .send(Op::UserMessage {
            to: None,
            text: "hello again".into(),
        })
        .unwrap();
    next_event(&mut h, &mut seen, |e| {
        e.agent_id == root
            && matches!(&e.kind, EventKind::ItemAdded { item: HistoryItem::Assistant { text, .. } } if text == "fresh start")
    })
    .await;
    let reqs = mock.requests();
    assert_eq!(
        reqs.len(),
        5,
        "after the stop, one request: the new message"
    );
}

/// The session log of the sandbox's only session, as JSON values.
fn session_log(sb: &Sandbox) -> Vec<Value> {
    let dir = sb.data_dir().join("sessions");
    let entry = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .find(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .expect("a session log");
    std::fs::read_to_string(entry.path())
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Every tool call an agent made has exactly one result in the same agent's history.
fn assert_calls_paired(log: &[Value]) {
    let mut calls = Vec::new();
    let mut results = Vec::new();
    for e in of_type(log, "item_added") {
        let agent = e["agent_id"].as_str().unwrap().to_string();
        let item = &e["item"];
        if let Some(tc) = item["tool_calls"].as_array() {
            for c in tc {
                calls.push((agent.clone(), c["id"].as_str().unwrap().to_string()));
            }
        }
        if let Some(id) = item["call_id"].as_str() {
            results.push((agent.clone(), id.to_string()));
        }
    }
    assert!(!calls.is_empty());
    for c in &calls {
        assert_eq!(
            results.iter().filter(|r| *r == c).count(),
            1,
            "call {c:?} has no single result in the log"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sigint_mid_team_leaves_a_complete_log_and_prints_the_table() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    two_readers(&mock, Duration::from_secs(30));
    let mut cmd = sb.command(Some(&mock));
    cmd.args(["exec", "--approval", "auto", "read it twice"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().unwrap();
    assert!(mock.wait_for_requests(4, Duration::from_secs(20)).await);
    let pid = child.id().unwrap() as libc::pid_t;
    // SAFETY: sends a signal to the child this test started and still owns.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let out = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("squad stops after Ctrl+C")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("agent"), "the per-agent table: {stderr}");
    assert!(stderr.contains("total"), "the per-agent table: {stderr}");

    let log = session_log(&sb);
    assert_calls_paired(&log);
    assert_eq!(of_type(&log, "summary").len(), 1, "the log is closed");
    // The supervisor (waiting) and both workers (mid-call) were at work.
    let interrupted = of_type(&log, "agent_status")
        .into_iter()
        .filter(|e| e["status"] == "interrupted")
        .count();
    assert_eq!(interrupted, 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_exec_continues_to_the_final_answer_without_repeating_finished_calls() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    // This test is about continuing, not about checking results against the files.
    sb.workspace_config("[verify]\nenabled = false\n");
    // The first run hangs in the worker's second model call; the continued run does not.
    let hang = Arc::new(AtomicBool::new(true));
    let hang_in = hang.clone();
    mock.set_responder(move |body| {
        if is_worker(body) {
            return match tool_count(body) {
                0 => MockResponse::tool_call(
                    "w1",
                    "write_file",
                    r#"{"path":"out.txt","content":"written once\n"}"#,
                ),
                _ => {
                    let r = MockResponse::tool_call(
                        "ret",
                        "return_results",
                        &good_result("wrote out.txt").to_string(),
                    );
                    if hang_in.load(Ordering::SeqCst) {
                        r.with_delay(Duration::from_secs(60))
                    } else {
                        r
                    }
                }
            };
        }
        match tool_count(body) {
            0 => spawn("agentic_coder", "write out.txt"),
            1 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            _ => MockResponse::text("final: out.txt is written"),
        }
    });
    let mut cmd = sb.command(Some(&mock));
    cmd.args(["exec", "--approval", "auto", "have a worker write out.txt"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().unwrap();
    // Root spawn, worker write, root wait, worker's hanging return.
    let deadline = Instant::now() + Duration::from_secs(20);
    while mock
        .requests()
        .iter()
        .filter(|r| is_worker(&r.body) && tool_count(&r.body) == 1)
        .count()
        == 0
    {
        assert!(Instant::now() < deadline, "the worker never wrote");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    assert_eq!(sb.read("out.txt"), "written once\n");
    let before = mock.requests().len();

    hang.store(false, Ordering::SeqCst);
    std::fs::write(sb.ws().join("out.txt"), "changed by the user\n").unwrap();
    let run = sb
        .exec(
            &mock,
            &["--approval", "auto", "--resume", "last", "--continue"],
        )
        .await;
    run.assert_ok();
    assert!(
        run.stdout.contains("final: out.txt is written"),
        "{}",
        run.stdout
    );
    let after: Vec<_> = mock.requests().into_iter().skip(before).collect();
    // The worker redid only its unfinished model call: its write is not run again.
    let worker_calls: Vec<_> = after.iter().filter(|r| is_worker(&r.body)).collect();
    assert_eq!(worker_calls.len(), 1, "one worker request after continue");
    assert_eq!(tool_count(&worker_calls[0].body), 1);
    assert_eq!(
        sb.read("out.txt"),
        "changed by the user\n",
        "write_file ran again"
    );
    // A continue with nothing interrupted says so and fails.
    let run = sb.exec(&mock, &["--resume", "last", "--continue"]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("nothing to continue"), "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_message_to_a_running_agent_reaches_its_very_next_request() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    mock.set_responder(|body| match tool_count(body) {
        0 => MockResponse::tool_call("r", "read_file", r#"{"path":"a.txt"}"#)
            .with_delay(Duration::from_millis(800)),
        _ => MockResponse::text("done"),
    });
    let mut h = start_engine(&mock, &sb, ApprovalPolicy::Auto).await;
    let root = h.info.root_agent;
    let mut seen = Vec::new();
    h.ops
        .send(Op::UserMessage {
            to: None,
            text: "read a.txt".into(),
        })
        .unwrap();
    assert!(mock.wait_for_requests(1, Duration::from_secs(20)).await);
    h.ops
        .send(Op::UserMessage {
            to: Some(root),
            text: "STEER: only the first line".into(),
        })
        .unwrap();
    let queued = next_event(&mut h, &mut seen, |e| {
        matches!(e.kind, EventKind::MessageQueued { .. })
    })
    .await;
    assert_eq!(queued.agent_id, root);
    next_event(&mut h, &mut seen, |e| matches!(e.kind, EventKind::Idle)).await;
    let reqs = mock.requests();
    assert_eq!(
        reqs.len(),
        2,
        "one turn: the message joined it, it did not start another"
    );
    let t = transcript(&reqs[1].body);
    assert_eq!(
        t.last().unwrap(),
        &("user".to_string(), "STEER: only the first line".to_string()),
        "{t:?}"
    );
    assert_eq!(tool_messages(&reqs[1].body).len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn speak_to_agent_reaches_a_running_worker_and_returns_once_taken_up() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    mock.set_responder(|body| {
        if is_worker(body) {
            return match tool_count(body) {
                0 => MockResponse::tool_call("r", "read_file", r#"{"path":"a.txt"}"#)
                    .with_delay(Duration::from_millis(800)),
                // Slow, so the supervisor's next request comes while it is under way.
                _ => MockResponse::tool_call(
                    "ret",
                    "return_results",
                    &good_result("read it").to_string(),
                )
                .with_delay(Duration::from_millis(800)),
            };
        }
        match tool_count(body) {
            0 => spawn("code_reviewer", "read a.txt"),
            1 => {
                let id = spawned_ids(body).remove(0);
                MockResponse::tool_call(
                    "sp",
                    "speak_to_agent",
                    &json!({"agent_id": id, "message": "STEER: check the spelling too"})
                        .to_string(),
                )
            }
            2 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            _ => MockResponse::text("done"),
        }
    });
    let mut h = start_engine(&mock, &sb, ApprovalPolicy::Auto).await;
    let root = h.info.root_agent;
    let mut seen = Vec::new();
    h.ops
        .send(Op::UserMessage {
            to: None,
            text: "have a.txt read".into(),
        })
        .unwrap();
    next_event(&mut h, &mut seen, |e| {
        e.agent_id == root && matches!(e.kind, EventKind::TurnFinished { .. })
    })
    .await;
    let reqs = mock.requests();
    let worker: Vec<_> = reqs.iter().filter(|r| is_worker(&r.body)).collect();
    assert_eq!(worker.len(), 2);
    let t = transcript(&worker[1].body);
    assert_eq!(
        t.last().unwrap().1,
        "STEER: check the spelling too",
        "{t:?}"
    );
    // The supervisor's speak returned once the worker took the message up, before the
    // worker's turn ended.
    let root_reqs: Vec<_> = reqs.iter().filter(|r| !is_worker(&r.body)).collect();
    let spoke = tool_messages(&root_reqs[2].body)[1].1.clone();
    assert!(spoke.contains("\"taken_up\":true"), "{spoke}");
    assert!(root_reqs[2].received_at < worker[1].finished_at.unwrap());
}
