//! A worker's view is one snapshot (issue 34): the workspace as it was when the worker was
//! spawned. The real binary (`squad exec`) against the mock server on real git repositories:
//! a worker that read a file before a sibling's merge and writes it back whole keeps the
//! sibling's change, also when its added line is right after the sibling's changed one;
//! two workers changing one line end with the first merged and the
//! second named as a conflict, both edits having succeeded in their own copies; and a
//! property test of random rounds (`round.rs`) in which no change is ever lost silently.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "base/round.rs"]
mod round;

use common::agents::*;
use common::*;
use serde_json::{Value, json};
use std::time::Duration;

/// The worker's task, which names it.
fn task_of(body: &Value) -> String {
    transcript(body)
        .into_iter()
        .find(|(role, _)| role == "user")
        .map(|(_, text)| text)
        .unwrap_or_default()
}

/// The result of the call `id` in this request, if it came back.
fn result_of(body: &Value, id: &str) -> Option<String> {
    tool_messages(body)
        .into_iter()
        .find(|(call, _)| call == id)
        .map(|(_, out)| out)
}

fn repo(hello: &str) -> Sandbox {
    let sb = Sandbox::new();
    sb.workspace_config("[verify]\nenabled = false\n\n[guards]\nread_repeat_stop_after = 0\n");
    git(sb.ws(), &["init", "-q"]);
    sb.write("hello.txt", hello);
    sb.write("other.txt", "other\n");
    git(sb.ws(), &["add", "-A"]);
    git(sb.ws(), &["commit", "-qm", "start"]);
    sb
}

/// The persona spawns A and B at once, waits for both, and answers.
fn persona(body: &Value) -> MockResponse {
    match tool_count(body) {
        0 => MockResponse::tool_calls(vec![
            call(
                "sa",
                "spawn_agent",
                json!({"role_name": "implementer", "task_prompt": "A: say hello A"}),
            ),
            call(
                "sb",
                "spawn_agent",
                json!({"role_name": "implementer", "task_prompt": "B: add your line"}),
            ),
        ]),
        2 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
        _ => MockResponse::text("done"),
    }
}

/// Worker A: changes "hello world" to "hello A" and returns at once.
fn worker_a(body: &Value) -> MockResponse {
    match tool_count(body) {
        0 => MockResponse::tool_call(
            "ea",
            "edit_file",
            &json!({"path": "hello.txt", "old_text": "hello world", "new_text": "hello A"})
                .to_string(),
        ),
        _ => MockResponse::tool_call("ra", "return_results", &good_result("A").to_string()),
    }
}

/// Worker B: reads hello.txt first, waits (reading another file) until A's change is in
/// the workspace, then makes `change` from what it read, and returns.
fn worker_b(
    body: &Value,
    ws: &std::path::Path,
    change: impl Fn(&str) -> MockResponse,
) -> MockResponse {
    if tool_count(body) == 0 {
        return MockResponse::tool_call("r0", "read_file", r#"{"path": "hello.txt"}"#);
    }
    if result_of(body, "wb").is_some() {
        return MockResponse::tool_call("rb", "return_results", &good_result("B").to_string());
    }
    let merged = std::fs::read_to_string(ws.join("hello.txt"))
        .unwrap_or_default()
        .contains("hello A");
    if !merged {
        assert!(
            tool_count(body) < 400,
            "A's change never reached the workspace"
        );
        let poll = format!("p{}", tool_count(body));
        return MockResponse::tool_call(&poll, "read_file", r#"{"path": "other.txt"}"#)
            .with_delay(Duration::from_millis(30));
    }
    change(&result_of(body, "r0").expect("B read hello.txt"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_whole_file_write_from_an_old_read_keeps_a_siblings_merged_change() {
    let mock = MockServer::start().await;
    let sb = repo("marker-4242: hello world\nkeep 1\nkeep 2\n");
    let ws = sb.ws().to_path_buf();
    mock.set_responder(move |body| {
        if !is_worker(body) {
            return persona(body);
        }
        if task_of(body).starts_with("A:") {
            return worker_a(body);
        }
        worker_b(body, &ws, |seen| {
            let whole = format!("{seen}B-LINE-9\n");
            MockResponse::tool_call(
                "wb",
                "write_file",
                &json!({"path": "hello.txt", "content": whole}).to_string(),
            )
        })
    });
    sb.exec(&mock, &["--approval", "auto", "two workers"])
        .await
        .assert_ok();
    let hello = sb.read("hello.txt");
    assert_eq!(hello, "marker-4242: hello A\nkeep 1\nkeep 2\nB-LINE-9\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn on_a_one_line_file_a_change_and_a_line_added_right_after_it_both_land() {
    // The issue's own scenario: B's line goes right after the line A changed. git's merge
    // calls changes that touch a conflict; squad's finer line merge lands both.
    let mock = MockServer::start().await;
    let sb = repo("marker-4242: hello world\n");
    let ws = sb.ws().to_path_buf();
    mock.set_responder(move |body| {
        if !is_worker(body) {
            return persona(body);
        }
        if task_of(body).starts_with("A:") {
            return worker_a(body);
        }
        worker_b(body, &ws, |seen| {
            MockResponse::tool_call(
                "wb",
                "write_file",
                &json!({"path": "hello.txt", "content": format!("{seen}B-LINE-9\n")}).to_string(),
            )
        })
    });
    sb.exec(&mock, &["--approval", "auto", "two workers"])
        .await
        .assert_ok();
    assert_eq!(sb.read("hello.txt"), "marker-4242: hello A\nB-LINE-9\n");
    let waited = last_wait(&mock);
    assert!(!waited.contains(r#""state": "conflict""#), "{waited}");
}

#[tokio::test(flavor = "multi_thread")]
async fn two_workers_on_one_line_both_edit_their_copy_the_second_is_named_a_conflict() {
    let mock = MockServer::start().await;
    let sb = repo("marker-4242: hello world\nkeep 1\nkeep 2\n");
    let ws = sb.ws().to_path_buf();
    mock.set_responder(move |body| {
        if !is_worker(body) {
            return persona(body);
        }
        if task_of(body).starts_with("A:") {
            return worker_a(body);
        }
        worker_b(body, &ws, |_| {
            MockResponse::tool_call(
                "wb",
                "edit_file",
                &json!({"path": "hello.txt", "old_text": "hello world", "new_text": "hello B"})
                    .to_string(),
            )
        })
    });
    sb.exec(&mock, &["--approval", "auto", "two workers"])
        .await
        .assert_ok();
    assert_eq!(
        sb.read("hello.txt"),
        "marker-4242: hello A\nkeep 1\nkeep 2\n"
    );
    let edited = mock
        .requests()
        .iter()
        .find_map(|r| result_of(&r.body, "wb"))
        .expect("B's edit came back");
    assert!(edited.starts_with("edited"), "B's edit failed: {edited}");
    let waited = last_wait(&mock);
    assert!(waited.contains(r#""state": "merged""#), "{waited}");
    assert!(waited.contains(r#""state": "conflict""#), "{waited}");
    assert!(waited.contains("hello.txt (contents)"), "{waited}");
}

/// What the persona's `wait_for_agents` returned.
fn last_wait(mock: &MockServer) -> String {
    mock.requests()
        .iter()
        .rev()
        .filter(|r| !is_worker(&r.body))
        .find_map(|r| result_of(&r.body, "w"))
        .expect("the persona waited")
}

/// Random rounds: several workers spawned at random moments, random reads and whole-file
/// or line edits of overlapping files, released in random order, the persona and the user
/// editing the workspace in between. After each, every change is in the workspace, named
/// as a conflict to the supervisor, refused with a reason, or knowingly replaced by a
/// later one. `SQUAD_BASE_ROUNDS=N` runs N rounds (200 by default), `SQUAD_BASE_SEED=S`
/// replays round S alone.
#[tokio::test(flavor = "multi_thread")]
async fn no_change_is_ever_lost_silently() {
    let seeds: Vec<u64> = match std::env::var("SQUAD_BASE_SEED") {
        Ok(s) => vec![s.trim().parse().expect("SQUAD_BASE_SEED is a number")],
        Err(_) => {
            let rounds: u64 = std::env::var("SQUAD_BASE_ROUNDS")
                .ok()
                .and_then(|n| n.trim().parse().ok())
                .unwrap_or(200);
            let first = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_secs() * 1000);
            (0..rounds).map(|n| first + n).collect()
        }
    };
    round::run_all(&seeds).await;
}
