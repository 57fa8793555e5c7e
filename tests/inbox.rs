//! The priority inbox: what a supervisor is told comes in one batch, most urgent first; a
//! worker's `message_supervisor` reaches its supervisor without ending the worker's turn,
//! and a question wakes a supervisor that waits. Real `squad exec` binary, mock server
//! over HTTP.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::*;
use common::*;
use serde_json::{Value, json};
use std::time::Duration;

/// Whether the request's conversation mentions `needle` anywhere.
fn mentions(body: &Value, needle: &str) -> bool {
    transcript(body).iter().any(|(_, c)| c.contains(needle))
}

/// The supervisor's requests, in order.
fn supervisor_requests(mock: &MockServer) -> Vec<Value> {
    mock.requests()
        .into_iter()
        .filter(|r| !is_worker(&r.body))
        .map(|r| r.body)
        .collect()
}

/// The text of the request's last `[squad]` notice holding `needle`.
fn notice_with(body: &Value, needle: &str) -> Option<String> {
    transcript(body)
        .into_iter()
        .rev()
        .map(|(_, c)| c)
        .find(|c| c.starts_with("[squad]") && c.contains(needle))
}

fn message(id: &str, kind: &str, text: &str) -> MockResponse {
    MockResponse::tool_call(
        id,
        "message_supervisor",
        &json!({"kind": kind, "text": text}).to_string(),
    )
}

fn two_workers() -> MockResponse {
    MockResponse::tool_calls(vec![
        call(
            "s1",
            "spawn_agent",
            json!({"role_name": "agentic_coder", "task_prompt": "quick task"}),
        ),
        call(
            "s2",
            "spawn_agent",
            json!({"role_name": "agentic_coder", "task_prompt": "doomed task"}),
        ),
    ])
}

/// One worker returns at once; the other fails a little later (its model calls fail).
fn quick_and_doomed(body: &Value) -> MockResponse {
    if mentions(body, "doomed task") {
        return MockResponse::error(500, "worker backend on fire")
            .with_delay(Duration::from_millis(300));
    }
    MockResponse::tool_call(
        "r",
        "return_results",
        &good_result("QUICK-RESULT").to_string(),
    )
}

/// The failure and the result from a batch, checking the failure is told first.
fn failure_before_result(batch: &str) {
    let failure = batch
        .find("worker backend on fire")
        .unwrap_or_else(|| panic!("no failure in {batch}"));
    let result = batch
        .find("QUICK-RESULT")
        .unwrap_or_else(|| panic!("no result in {batch}"));
    assert!(failure < result, "the failure must come first:\n{batch}");
    assert!(
        batch.starts_with("[squad] CRITICAL — workers failed") || batch.starts_with("CRITICAL"),
        "{batch}"
    );
}

/// The result arrived before the failure (so priority, not arrival, ordered the batch).
fn result_came_first(events: &[Value]) {
    let at = |pred: &dyn Fn(&Value) -> bool| events.iter().position(pred).unwrap();
    let returned = at(&|e| e["type"] == "result_returned");
    let failed = at(&|e| e["type"] == "agent_status" && e["status"] == "failed");
    assert!(returned < failed, "the result should have come first");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failure_is_told_before_results_that_arrived_earlier() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config("[provider]\nmax_retries = 1\nretry_base_ms = 10\n");
    mock.set_responder(|body| {
        if is_worker(body) {
            return quick_and_doomed(body);
        }
        if mentions(body, "workers failed") {
            return MockResponse::text("one failed, one done");
        }
        match tool_count(body) {
            0 => two_workers(),
            // The turn ends; the supervisor waits for both and is woken with one batch.
            _ => MockResponse::text("waiting for them"),
        }
    });
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "go"])
        .await;
    run.assert_ok();
    result_came_first(&run.events());
    let reqs = supervisor_requests(&mock);
    let last = reqs.last().unwrap();
    let batch = notice_with(last, "QUICK-RESULT").expect("the batch with both outcomes");
    failure_before_result(&batch);
    // One batch: no earlier request told the supervisor of the result alone.
    assert!(
        reqs[..reqs.len() - 1]
            .iter()
            .all(|r| !mentions(r, "QUICK-RESULT")),
        "the result came in a batch of its own"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn wait_for_agents_also_tells_the_failure_first() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config("[provider]\nmax_retries = 1\nretry_base_ms = 10\n");
    mock.set_responder(|body| {
        if is_worker(body) {
            return quick_and_doomed(body);
        }
        match tool_count(body) {
            0 => two_workers(),
            2 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            _ => MockResponse::text("done"),
        }
    });
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "go"])
        .await;
    run.assert_ok();
    result_came_first(&run.events());
    let last = supervisor_requests(&mock).pop().unwrap();
    let waited = &tool_messages(&last)[2].1;
    failure_before_result(waited);
}

/// A worker that sends an update, then a question, then takes its time to finish.
fn chatty_worker(body: &Value) -> MockResponse {
    match tool_count(body) {
        0 => message("m1", "update", "HALFWAY-THERE").with_delay(Duration::from_millis(300)),
        1 => message("m2", "question", "WHICH-PORT?").with_delay(Duration::from_millis(300)),
        _ => MockResponse::tool_call("r", "return_results", &good_result("FINISHED").to_string())
            .with_delay(Duration::from_millis(1500)),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_question_wakes_the_waiting_supervisor_and_an_update_rides_along() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_worker(body) {
            return chatty_worker(body);
        }
        if mentions(body, "FINISHED") {
            return MockResponse::text("all done");
        }
        match tool_count(body) {
            0 => spawn("agentic_coder", "serve it"),
            _ => MockResponse::text("noted"),
        }
    });
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "go"])
        .await;
    run.assert_ok();
    let reqs = supervisor_requests(&mock);
    // The update alone did not wake the supervisor; the question did, while the worker
    // still ran, and the update came in the same batch after it.
    assert!(
        reqs.iter()
            .all(|r| !mentions(r, "HALFWAY-THERE") || mentions(r, "WHICH-PORT?")),
        "an update woke the supervisor on its own"
    );
    let woken = reqs
        .iter()
        .find(|r| mentions(r, "WHICH-PORT?"))
        .expect("the question reached the supervisor");
    assert!(
        !mentions(woken, "FINISHED"),
        "woken only when the worker finished"
    );
    let batch = notice_with(woken, "WHICH-PORT?").unwrap();
    let question = batch.find("Question from your worker").unwrap();
    let update = batch.find("Update from your worker").unwrap();
    assert!(question < update, "{batch}");
    assert!(batch.contains("others are still running"), "{batch}");
    // The worker heard it was sent, and went on.
    let worker_last = mock
        .requests()
        .into_iter()
        .rfind(|r| is_worker(&r.body))
        .unwrap();
    assert!(
        tool_messages(&worker_last.body)[1]
            .1
            .contains("sent to your supervisor")
    );
    // Front ends see each message, from the worker, naming the supervisor.
    let events = run.events();
    let root = of_type(&events, "agent_spawned")[0]["agent_id"].clone();
    let sent = of_type(&events, "supervisor_message");
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[1]["kind"], "question");
    assert_eq!(sent[1]["text"], "WHICH-PORT?");
    assert_eq!(sent[1]["supervisor_id"], root);
    assert_ne!(sent[1]["agent_id"], root);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_question_wakes_a_supervisor_blocked_in_wait_for_agents() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_worker(body) {
            return match tool_count(body) {
                // Asked once the supervisor is surely in its wait.
                0 => message("m", "question", "WHICH-PORT?").with_delay(Duration::from_millis(500)),
                _ => MockResponse::tool_call(
                    "r",
                    "return_results",
                    &good_result("FINISHED").to_string(),
                )
                .with_delay(Duration::from_millis(1500)),
            };
        }
        match tool_count(body) {
            0 => spawn("agentic_coder", "serve it"),
            1 | 2 => {
                MockResponse::tool_call(&format!("w{}", tool_count(body)), "wait_for_agents", "{}")
            }
            _ => MockResponse::text("done"),
        }
    });
    let run = sb.exec(&mock, &["--approval", "auto", "go"]).await;
    run.assert_ok();
    // Progress on stderr names the message.
    assert!(
        run.stderr.contains("question to copilot: WHICH-PORT?"),
        "{}",
        run.stderr
    );
    let last = supervisor_requests(&mock).pop().unwrap();
    let results = tool_messages(&last);
    // The first wait ended on the question, the worker still at work.
    assert!(
        results[1].1.starts_with("Question from your worker"),
        "{}",
        results[1].1
    );
    assert!(results[1].1.contains("WHICH-PORT?"));
    assert!(
        results[1].1.contains("others are still running"),
        "{}",
        results[1].1
    );
    assert!(!results[1].1.contains("FINISHED"));
    // The second wait got the result.
    assert!(results[2].1.contains("FINISHED"), "{}", results[2].1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_question_reaches_a_running_supervisor_at_its_next_model_call() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_worker(body) {
            return match tool_count(body) {
                0 => message("m", "question", "WHICH-PORT?").with_delay(Duration::from_millis(300)),
                _ => MockResponse::tool_call(
                    "r",
                    "return_results",
                    &good_result("FINISHED").to_string(),
                ),
            };
        }
        if mentions(body, "FINISHED") {
            return MockResponse::text("all done");
        }
        match tool_count(body) {
            0 => spawn("agentic_coder", "serve it"),
            // Still busy in its own turn when the question comes.
            1 => MockResponse::tool_call("g", "get_agents", "{}")
                .with_delay(Duration::from_millis(1200)),
            _ => MockResponse::text("noted"),
        }
    });
    sb.exec(&mock, &["--approval", "auto", "go"])
        .await
        .assert_ok();
    let reqs = supervisor_requests(&mock);
    let next = reqs
        .iter()
        .find(|r| tool_count(r) == 2)
        .expect("the call after get_agents");
    // Right after get_agents' result, before the next model call: the question.
    let convo = transcript(next);
    let (role, last) = convo.last().unwrap();
    assert_eq!(role, "user");
    assert!(
        last.starts_with("[squad] Question from your worker") && last.contains("WHICH-PORT?"),
        "{last}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_message_not_yet_delivered_survives_resume() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_worker(body) {
            return match tool_count(body) {
                0 => message("m", "question", "WHICH-PORT?"),
                _ => MockResponse::tool_call(
                    "r",
                    "return_results",
                    &good_result("FINISHED").to_string(),
                ),
            };
        }
        if mentions(body, "what now") {
            return MockResponse::text("port 8080, and the worker finished");
        }
        match tool_count(body) {
            0 => spawn("agentic_coder", "serve it"),
            // Thinking when the question and the result come, and squad dies.
            _ => MockResponse::text("thinking").with_delay(Duration::from_secs(30)),
        }
    });
    let mut cmd = sb.command(Some(&mock));
    cmd.args(["exec", "--approval", "auto", "delegate"]);
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
                log.contains("\"supervisor_message\"") && log.contains("\"status\":\"completed\"")
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

    sb.exec(&mock, &["--resume", "last", "what now?"])
        .await
        .assert_ok();
    let resumed = supervisor_requests(&mock)
        .into_iter()
        .find(|r| mentions(r, "what now"))
        .unwrap();
    let convo = transcript(&resumed);
    // The owed batch (question first, then the result) just before the new message.
    let (_, batch) = &convo[convo.len() - 1];
    let question = batch
        .find("WHICH-PORT?")
        .unwrap_or_else(|| panic!("{batch}"));
    let result = batch.find("FINISHED").unwrap_or_else(|| panic!("{batch}"));
    assert!(question < result, "{batch}");
    assert!(batch.ends_with("what now?"), "{batch}");
    // Told once: the log now says it was delivered, and a second resume does not repeat it.
    sb.exec(&mock, &["--resume", "last", "and then?"])
        .await
        .assert_ok();
    let again = supervisor_requests(&mock).pop().unwrap();
    let told = transcript(&again)
        .iter()
        .filter(|(_, c)| c.contains("WHICH-PORT?"))
        .count();
    assert_eq!(told, 1, "the question was told twice");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_persona_the_user_interrupted_gets_the_question_with_the_users_next_message() {
    use ::squad::protocol::{AgentStatus, ApprovalPolicy, EventKind, MessageKind, Op};
    use common::engine::*;

    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_worker(body) {
            return match tool_count(body) {
                // Asked once the user has stopped the persona's wait.
                0 => message("m", "question", "WHICH-PORT?").with_delay(Duration::from_millis(800)),
                _ => MockResponse::tool_call(
                    "r",
                    "return_results",
                    &good_result("FINISHED").to_string(),
                ),
            };
        }
        match tool_count(body) {
            0 => spawn("agentic_coder", "serve it"),
            _ => MockResponse::text("ok"),
        }
    });
    let mut handle = start_engine(&mock, &sb, ApprovalPolicy::Auto).await;
    let root = handle.info.root_agent;
    say(&handle, "go");
    let mut seen = Vec::new();
    let status_is = |status: AgentStatus| {
        move |e: &::squad::protocol::Event| {
            e.agent_id == root
                && matches!(e.kind, EventKind::AgentStatus { status: s, .. } if s == status)
        }
    };
    next_event(&mut handle, &mut seen, status_is(AgentStatus::Waiting)).await;
    handle.ops.send(Op::Interrupt { agent_id: root }).unwrap();
    next_event(&mut handle, &mut seen, status_is(AgentStatus::Inactive)).await;
    // The front end hears the question while the persona rests; nothing wakes it.
    let asked = next_event(&mut handle, &mut seen, |e| {
        matches!(e.kind, EventKind::SupervisorMessage { .. })
    })
    .await;
    let EventKind::SupervisorMessage {
        supervisor_id,
        kind,
        text,
    } = asked.kind
    else {
        unreachable!()
    };
    assert_eq!(
        (supervisor_id, kind, text.as_str()),
        (root, MessageKind::Question, "WHICH-PORT?")
    );
    next_event(&mut handle, &mut seen, |e| {
        matches!(e.kind, EventKind::Idle)
    })
    .await;
    assert_eq!(supervisor_requests(&mock).len(), 2);
    let worker_last = mock
        .requests()
        .into_iter()
        .rfind(|r| is_worker(&r.body))
        .unwrap();
    let sent = &tool_messages(&worker_last.body)[0].1;
    assert!(sent.contains("paused"), "{sent}");

    say(&handle, "answer it");
    next_event(&mut handle, &mut seen, |e| {
        matches!(e.kind, EventKind::Idle)
    })
    .await;
    let last = supervisor_requests(&mock).pop().unwrap();
    let told = transcript(&last).last().unwrap().1.clone();
    let question = told.find("WHICH-PORT?").unwrap_or_else(|| panic!("{told}"));
    let result = told.find("FINISHED").unwrap_or_else(|| panic!("{told}"));
    assert!(question < result && told.ends_with("answer it"), "{told}");
}
