//! Messages between workers (issue 54 part 1): `message_agent` by name reaches a sibling
//! mid-task, at its next model call, marked with its sender; the sender's call returns
//! once it is delivered; refusals (unknown, too long) say why before anything is queued;
//! a message to a worker that ended says so. Real `squad exec` binary, mock server over
//! HTTP.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::*;
use common::*;
use serde_json::{Value, json};

fn mentions(body: &Value, needle: &str) -> bool {
    transcript(body).iter().any(|(_, c)| c.contains(needle))
}

fn last_result(body: &Value) -> String {
    tool_messages(body)
        .last()
        .map(|(_, c)| c.clone())
        .unwrap_or_default()
}

fn spawn_named(id: &str, name: &str, task: &str) -> MockToolCall {
    call(
        id,
        "spawn_agent",
        json!({"role_name": "agentic_coder", "name": name, "task_prompt": task}),
    )
}

fn message(to: &str, text: &str) -> MockResponse {
    MockResponse::tool_call(
        "m",
        "message_agent",
        &json!({"to": to, "text": text}).to_string(),
    )
}

/// Alpha: an unknown name, a message too long, then the message to beta, then its result.
fn alpha(body: &Value) -> MockResponse {
    match tool_count(body) {
        0 => message("gamma", "hello"),
        1 => message("beta", &"x".repeat(5000)),
        2 => message("beta", "PING-FROM-ALPHA"),
        _ => MockResponse::tool_call(
            "r",
            "return_results",
            &good_result(&format!("alpha: {}", last_result(body))).to_string(),
        ),
    }
}

/// Beta: a command long enough for alpha's message to come mid-task, then its result,
/// saying whether the message reached it.
fn beta(body: &Value) -> MockResponse {
    match tool_count(body) {
        0 => MockResponse::tool_call(
            "c",
            "run_command",
            &json!({"command": "sleep 2"}).to_string(),
        ),
        _ => {
            let got = mentions(body, "PING-FROM-ALPHA");
            MockResponse::tool_call(
                "r",
                "return_results",
                &good_result(if got { "beta GOT-PING" } else { "beta NO-PING" }).to_string(),
            )
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_messages_a_sibling_by_name_and_it_arrives_at_its_next_request() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_worker(body) {
            if mentions(body, "ALPHA TASK") {
                return alpha(body);
            }
            return beta(body);
        }
        match tool_count(body) {
            0 => MockResponse::tool_calls(vec![
                spawn_named("s1", "beta", "BETA TASK"),
                spawn_named("s2", "alpha", "ALPHA TASK"),
            ]),
            _ => MockResponse::text("both done"),
        }
    });
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "go"])
        .await;
    run.assert_ok();

    let reqs: Vec<Value> = mock.requests().into_iter().map(|r| r.body).collect();
    let alpha_reqs: Vec<&Value> = reqs
        .iter()
        .filter(|b| is_worker(b) && mentions(b, "ALPHA TASK"))
        .collect();
    let beta_reqs: Vec<&Value> = reqs
        .iter()
        .filter(|b| is_worker(b) && mentions(b, "BETA TASK"))
        .collect();
    // Refused up front, saying why.
    let unknown = last_result(alpha_reqs[1]);
    assert!(
        unknown.contains("no teammate `gamma`") && unknown.contains("\"beta\""),
        "{unknown}"
    );
    let long = last_result(alpha_reqs[2]);
    assert!(long.contains("at most 4000 bytes"), "{long}");
    // Delivered, and the call said so once it was.
    let sent = last_result(alpha_reqs[3]);
    assert!(
        sent.contains("\"delivered\":[") && sent.contains("beta"),
        "{sent}"
    );
    // Beta read it mid-task: at the request after its command, marked with its sender.
    assert_eq!(
        beta_reqs.len(),
        2,
        "beta asked twice: before and after its command"
    );
    assert!(!mentions(beta_reqs[0], "PING-FROM-ALPHA"));
    let letter = transcript(beta_reqs[1])
        .into_iter()
        .find(|(_, c)| c.contains("PING-FROM-ALPHA"))
        .expect("the message in beta's second request");
    assert_eq!(letter.0, "user");
    assert!(
        letter.1.contains("[message from worker")
            && letter.1.contains("\"alpha\" (agentic_coder)")
            && letter.1.contains("not the user"),
        "{}",
        letter.1
    );

    // Events: who sent it to whom, and one delivery to the recipient.
    let events = run.events();
    let sent: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "agent_message")
        .collect();
    assert_eq!(sent.len(), 1, "only the accepted message is queued");
    let delivered: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "agent_messages_delivered")
        .collect();
    assert_eq!(delivered.len(), 1);
    assert_eq!(delivered[0]["agent_id"], sent[0]["to"]);
    assert_eq!(delivered[0]["message_ids"], json!([sent[0]["message_id"]]));
    assert_ne!(sent[0]["agent_id"], sent[0]["to"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_message_to_a_worker_that_ended_says_so() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config("[provider]\nmax_retries = 1\nretry_base_ms = 10\n");
    mock.set_responder(|body| {
        if is_worker(body) {
            if mentions(body, "QUICK TASK") {
                return MockResponse::error(500, "quick's backend on fire");
            }
            return match tool_count(body) {
                // Waits for quick to have failed.
                0 => MockResponse::tool_call(
                    "c",
                    "run_command",
                    &json!({"command": "sleep 2"}).to_string(),
                ),
                1 => message("quick", "are you there?"),
                _ => MockResponse::tool_call(
                    "r",
                    "return_results",
                    &good_result(&format!("late: {}", last_result(body))).to_string(),
                ),
            };
        }
        match tool_count(body) {
            0 => MockResponse::tool_calls(vec![
                spawn_named("s1", "quick", "QUICK TASK"),
                spawn_named("s2", "late", "LATE TASK"),
            ]),
            _ => MockResponse::text("done"),
        }
    });
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "go"])
        .await;
    run.assert_ok();
    let late = mock
        .requests()
        .into_iter()
        .map(|r| r.body)
        .rfind(|b| is_worker(b) && mentions(b, "LATE TASK") && tool_count(b) == 2)
        .expect("late's request after its message");
    let out = last_result(&late);
    assert!(out.contains("has ended (failed)"), "{out}");
    assert!(!run.events().iter().any(|e| e["type"] == "agent_message"));
}
