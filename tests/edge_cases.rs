//! Edge cases of the multi-agent runtime, each once a real bug found in review: despawns
//! during waits and approvals, results owed across a crash, approvals that must not cover
//! more than they say. They drive the real binary (`exec`) or the public API against the
//! mock server, like `tests/team.rs` and `tests/runtime_api.rs`.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use ::squad::protocol::{AgentStatus, ApprovalDecision, ApprovalPolicy, EventKind, Op};
use common::agents::*;
use common::engine::*;
use common::*;
use serde_json::{Value, json};
use std::time::Duration;

// ---------------------------------------------------------------------------------------
// Helpers (the same conventions as tests/team.rs and tests/runtime_api.rs)
// ---------------------------------------------------------------------------------------

/// `squad exec ARGS…` that must finish within `secs` (shorter than the common 60 s guard,
/// so a hang fails fast with a clear message).
async fn exec_within(sb: &Sandbox, mock: &MockServer, args: &[&str], secs: u64) -> Run {
    let mut cmd = sb.command(Some(mock));
    cmd.arg("exec").args(args);
    cmd.stdin(std::process::Stdio::null());
    match tokio::time::timeout(Duration::from_secs(secs), cmd.output()).await {
        Ok(out) => Run::from(out.unwrap()),
        Err(_) => panic!(
            "squad exec hung: no exit within {secs} s. Statuses in the session log:\n{}",
            logged_statuses(sb)
        ),
    }
}

/// `agent_id status` of every agent_status event in the sandbox's session logs.
fn logged_statuses(sb: &Sandbox) -> String {
    let mut out = String::new();
    for entry in std::fs::read_dir(sb.data_dir().join("sessions"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let log = std::fs::read_to_string(entry.path()).unwrap_or_default();
        for line in log.lines() {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            if v["type"] == "agent_status" {
                out.push_str(&format!(
                    "  {} {}\n",
                    &v["agent_id"].as_str().unwrap_or("")[..8],
                    v["status"].as_str().unwrap_or("")
                ));
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// 1. A worker despawned while it blocks in wait_for_agents on its own worker ends up
//    `running` for ever: the tree never rests and exec never returns.
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn despawn_while_the_worker_waits_on_its_own_workers_does_not_hang() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_role(body, "test_writer") {
            // The grandchild is slow; it is cancelled long before it answers.
            return MockResponse::text("never seen").with_delay(Duration::from_secs(40));
        }
        if is_role(body, "agentic_coder") {
            return match tool_count(body) {
                0 => spawn("test_writer", "sub task"),
                1 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
                _ => MockResponse::tool_call("r", "return_results", &good_result("x").to_string()),
            };
        }
        match tool_count(body) {
            0 => spawn("agentic_coder", "lead the work"),
            // Long enough for the worker to be inside its own wait_for_agents.
            1 => MockResponse::tool_call("w", "wait_for_agents", r#"{"timeout_s": 1.5}"#),
            2 => {
                let id = spawned_ids(body)[0].clone();
                MockResponse::tool_call("d", "despawn_agent", &json!({"agent_id": id}).to_string())
            }
            _ => MockResponse::text("stopped it"),
        }
    });
    let run = exec_within(&sb, &mock, &["--json", "delegate then stop"], 25).await;
    run.assert_ok();
    let events = run.events();
    let worker = of_type(&events, "agent_spawned")[1]["agent_id"].clone();
    let last = of_type(&events, "agent_status")
        .into_iter()
        .rfind(|e| e["agent_id"] == worker)
        .unwrap()["status"]
        .clone();
    assert_eq!(last, "cancelled");
}

// ---------------------------------------------------------------------------------------
// 2. A despawned (or failed-cascade-cancelled) agent that still had input queued keeps
//    `queued > 0` for ever, so it counts as busy: no `idle`, its parent waits for ever.
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn despawning_a_worker_with_a_queued_message_lets_the_session_rest() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_worker(body) {
            return MockResponse::text("slow").with_delay(Duration::from_secs(30));
        }
        match tool_count(body) {
            0 => spawn("agentic_coder", "slow work"),
            _ => MockResponse::text("spawned it"),
        }
    });
    let mut handle = start_engine(&mock, &sb, ApprovalPolicy::Auto).await;
    let root = handle.info.root_agent;
    say(&handle, "start a worker");
    let mut seen = Vec::new();
    let running = wait_event(&mut handle, &mut seen, Duration::from_secs(20), |e| {
        e.agent_id != root
            && matches!(
                e.kind,
                EventKind::AgentStatus {
                    status: AgentStatus::Running,
                    ..
                }
            )
    })
    .await
    .expect("the worker starts");
    let worker = running.agent_id;
    // The user types to the busy worker (queued), then cancels it.
    handle
        .ops
        .send(Op::UserMessage {
            to: Some(worker),
            text: "one more thing".into(),
        })
        .unwrap();
    handle.ops.send(Op::Despawn { agent_id: worker }).unwrap();
    let idle = wait_event(&mut handle, &mut seen, Duration::from_secs(10), |e| {
        matches!(e.kind, EventKind::Idle)
    })
    .await;
    assert!(
        idle.is_some(),
        "the session never became idle after the worker was cancelled; worker statuses: {:?}, root statuses: {:?}",
        statuses_of(&seen, worker),
        statuses_of(&seen, root)
    );
}

// ---------------------------------------------------------------------------------------
// 2b. The user cancels the only worker a resting supervisor waits on: the supervisor stays
//     `waiting` for ever (nothing left to deliver, but nobody sets it back to inactive).
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn a_supervisor_whose_worker_is_cancelled_by_the_user_stops_waiting() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_worker(body) {
            return MockResponse::text("slow").with_delay(Duration::from_secs(30));
        }
        match tool_count(body) {
            0 => spawn("agentic_coder", "slow work"),
            _ => MockResponse::text("spawned it"),
        }
    });
    let mut handle = start_engine(&mock, &sb, ApprovalPolicy::Auto).await;
    let root = handle.info.root_agent;
    say(&handle, "start a worker");
    let mut seen = Vec::new();
    // The supervisor's turn is over and it waits on its worker.
    wait_event(&mut handle, &mut seen, Duration::from_secs(20), |e| {
        e.agent_id == root && matches!(e.kind, EventKind::TurnFinished { .. })
    })
    .await
    .expect("the supervisor's turn ends");
    let worker = seen
        .iter()
        .find_map(|e| match e.kind {
            EventKind::AgentSpawned {
                parent_id: Some(_), ..
            } => Some(e.agent_id),
            _ => None,
        })
        .unwrap();
    handle.ops.send(Op::Despawn { agent_id: worker }).unwrap();
    let idle = wait_event(&mut handle, &mut seen, Duration::from_secs(10), |e| {
        matches!(e.kind, EventKind::Idle)
    })
    .await;
    assert!(
        idle.is_some(),
        "no idle after the user cancelled the worker; root statuses: {:?}, worker statuses: {:?}",
        statuses_of(&seen, root),
        statuses_of(&seen, worker)
    );
    assert_eq!(
        statuses_of(&seen, root).last(),
        Some(&AgentStatus::Inactive)
    );
}

// ---------------------------------------------------------------------------------------
// 3. A worker that calls return_results while its own workers still run is woken later
//    with their results; that extra turn ends without return_results, so the worker ends
//    `inactive` and the parent is given its last message instead of the result it returned.
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn a_result_returned_while_sub_workers_run_reaches_the_supervisor() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_role(body, "test_writer") {
            return MockResponse::tool_call(
                "r2",
                "return_results",
                &good_result("sub done").to_string(),
            )
            .with_delay(Duration::from_millis(800));
        }
        if is_role(body, "agentic_coder") {
            return match tool_count(body) {
                0 => spawn("test_writer", "write tests"),
                1 => MockResponse::tool_call(
                    "r",
                    "return_results",
                    &good_result("WORKER-SUMMARY: feature implemented").to_string(),
                ),
                _ => MockResponse::text("noted the test writer's result"),
            };
        }
        match tool_count(body) {
            0 => spawn("agentic_coder", "implement"),
            1 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            _ => MockResponse::text("done"),
        }
    });
    let run = exec_within(&sb, &mock, &["--json", "build the feature"], 30).await;
    run.assert_ok();
    let sup_last = mock
        .requests()
        .into_iter()
        .rfind(|r| !is_worker(&r.body))
        .unwrap();
    let report = &tool_messages(&sup_last.body)[1].1;
    assert!(
        report.contains("WORKER-SUMMARY"),
        "the supervisor never saw the result its worker returned:\n{report}"
    );
}

// ---------------------------------------------------------------------------------------
// 4. Despawning a worker while it waits for the user's approval: `Shared::approve` sets it
//    back to `running` after cancel_agent marked it `cancelled`; the tree never rests.
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn despawning_a_worker_that_waits_for_approval_lets_the_session_rest() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_worker(body) {
            return match tool_count(body) {
                0 => MockResponse::tool_call(
                    "wf",
                    "write_file",
                    &json!({"path": "w.txt", "content": "x\n"}).to_string(),
                ),
                _ => MockResponse::text("wrote it"),
            };
        }
        match tool_count(body) {
            0 => spawn("agentic_coder", "write w.txt"),
            _ => MockResponse::text("spawned it"),
        }
    });
    let mut handle = start_engine(&mock, &sb, ApprovalPolicy::Ask).await;
    let root = handle.info.root_agent;
    say(&handle, "delegate a write");
    let mut seen = Vec::new();
    // The spawn itself is asked first (ask policy): approve it.
    let asked = wait_event(&mut handle, &mut seen, Duration::from_secs(20), |e| {
        matches!(e.kind, EventKind::ApprovalRequested { .. })
    })
    .await
    .expect("spawn approval asked");
    let EventKind::ApprovalRequested { request_id, .. } = asked.kind else {
        unreachable!()
    };
    assert_eq!(asked.agent_id, root);
    handle
        .ops
        .send(Op::Approval {
            request_id,
            decision: ApprovalDecision::Approve,
        })
        .unwrap();
    // Then the worker asks to write; instead of answering, the user cancels the worker.
    let asked = wait_event(&mut handle, &mut seen, Duration::from_secs(20), |e| {
        e.agent_id != root && matches!(e.kind, EventKind::ApprovalRequested { .. })
    })
    .await
    .expect("the worker asks to write");
    let worker = asked.agent_id;
    handle.ops.send(Op::Despawn { agent_id: worker }).unwrap();
    let idle = wait_event(&mut handle, &mut seen, Duration::from_secs(10), |e| {
        matches!(e.kind, EventKind::Idle)
    })
    .await;
    assert!(
        idle.is_some(),
        "no idle after the waiting worker was cancelled; worker statuses: {:?}",
        statuses_of(&seen, worker)
    );
    assert_eq!(
        statuses_of(&seen, worker).last(),
        Some(&AgentStatus::Cancelled)
    );
    assert!(!sb.ws().join("w.txt").exists());
}

// ---------------------------------------------------------------------------------------
// 5. "Approve for session" of `cargo test` also approves `cargo test && <anything>`: the
//    cache key is the first two whitespace-separated words.
// ---------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------
// 6. Resume after a crash: a worker that had finished (its result in the log) while the
//    supervisor was still in its turn is restored as `delivered`, so its result never
//    reaches the supervisor — not as a notice, not from wait_for_agents.
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn a_result_not_yet_delivered_before_a_crash_is_delivered_after_resume() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_worker(body) {
            return MockResponse::tool_call(
                "r",
                "return_results",
                &good_result("WORKER-RESULT-42").to_string(),
            );
        }
        let resumed = transcript(body)
            .iter()
            .any(|(_, c)| c.contains("what did the worker find"));
        if resumed {
            return match tool_count(body) {
                1 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
                _ => MockResponse::text("here is what I know"),
            };
        }
        match tool_count(body) {
            0 => spawn("agentic_coder", "find it"),
            // The supervisor is still thinking when the worker finishes, and squad dies.
            _ => MockResponse::text("still thinking").with_delay(Duration::from_secs(30)),
        }
    });
    let mut cmd = sb.command(Some(&mock));
    cmd.args(["exec", "--approval", "auto", "delegate the search"]);
    let mut child = cmd.spawn().unwrap();
    let sessions = sb.data_dir().join("sessions");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let done = std::fs::read_dir(&sessions)
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| e.ok())
            .and_then(|e| std::fs::read_to_string(e.path()).ok())
            .is_some_and(|log| {
                log.contains("\"result_returned\"") && log.contains("\"status\":\"completed\"")
            });
        if done {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the worker never finished"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    child.start_kill().unwrap();
    child.wait().await.unwrap();

    exec_within(
        &sb,
        &mock,
        &["--resume", "last", "what did the worker find?"],
        30,
    )
    .await
    .assert_ok();
    let seen_by_supervisor: String = mock
        .requests()
        .iter()
        .filter(|r| !is_worker(&r.body))
        .filter(|r| {
            transcript(&r.body)
                .iter()
                .any(|(_, c)| c.contains("what did the worker find"))
        })
        .map(|r| r.body.to_string())
        .collect();
    let last = mock.requests().last().unwrap().body.clone();
    assert!(
        seen_by_supervisor.contains("WORKER-RESULT-42"),
        "after resume the supervisor never got its worker's result; wait_for_agents said: {:?}",
        tool_messages(&last).last()
    );
}

// ---------------------------------------------------------------------------------------
// 7. "Approve for session" of a change to a file at the workspace root (cache key "")
//    approves every later change to any file anywhere in the workspace.
// ---------------------------------------------------------------------------------------
