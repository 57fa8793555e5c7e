//! The task board: a supervisor plans tasks with dependencies, assigns ready ones with
//! `spawn_agent task_id`, and hears when tasks become ready or the plan deadlocks. Real
//! `squad exec` binary, mock server over HTTP.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::*;
use common::*;
use serde_json::{Value, json};

fn plan(id: &str, tasks: Value) -> MockResponse {
    MockResponse::tool_call(id, "plan_tasks", &json!({ "tasks": tasks }).to_string())
}

fn spawn_for(id: &str, task: &str) -> MockResponse {
    MockResponse::tool_call(
        id,
        "spawn_agent",
        &json!({"role_name": "agentic_coder", "task_prompt": format!("do {task}"), "task_id": task})
            .to_string(),
    )
}

/// The supervisor's script: a cyclic plan, a valid one, T2 too early, T1, then wait.
fn supervisor(body: &Value) -> MockResponse {
    match tool_count(body) {
        0 => plan(
            "p1",
            json!([
                {"id": "T1", "title": "one"},
                {"id": "T2", "title": "two", "depends_on": ["T4"]},
                {"id": "T4", "title": "four", "depends_on": ["T2"]}
            ]),
        ),
        1 => plan(
            "p2",
            json!([
                {"id": "T1", "title": "write the parser"},
                {"id": "T2", "title": "test the parser", "depends_on": ["T1"]}
            ]),
        ),
        2 => spawn_for("s2", "T2"),
        3 => spawn_for("s1", "T1"),
        4 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
        _ => MockResponse::text("done"),
    }
}

async fn run(worker_status: &'static str) -> (Vec<(String, String)>, Vec<Value>) {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(move |body| {
        if !is_worker(body) {
            return supervisor(body);
        }
        let mut result = good_result("parsed");
        result["result"]["status"] = json!(worker_status);
        MockResponse::tool_call("r", "return_results", &result.to_string())
    });
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "plan and run"])
        .await;
    run.assert_ok();
    let last = mock
        .requests()
        .into_iter()
        .rfind(|r| !is_worker(&r.body))
        .unwrap();
    (tool_messages(&last.body), run.events())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plan_with_dependencies_runs_in_order_and_says_what_became_ready() {
    let (results, events) = run("success").await;
    let out = |i: usize| results[i].1.as_str();
    // The cyclic plan is refused whole, naming the cycle.
    assert!(
        out(0).contains("T2 → T4 → T2") && out(0).contains("nothing was added"),
        "{}",
        out(0)
    );
    // The valid plan: T1 ready, T2 pending.
    let board: Value = serde_json::from_str(out(1)).unwrap();
    assert_eq!(board["ready"], json!(["T1"]));
    assert_eq!(board["tasks"][1]["status"], "pending");
    // T2 before T1 is refused; T1 is taken.
    assert!(
        out(2).contains("task T2 is pending: it waits for T1 (ready)"),
        "{}",
        out(2)
    );
    assert!(out(3).contains("agent_id"), "{}", out(3));
    // T1's success makes T2 ready, and the wait's report says so first.
    assert!(
        out(4).contains("Task board: now ready: T2 (test the parser)"),
        "{}",
        out(4)
    );
    let updates = of_type(&events, "task_updated");
    let t1_last = updates
        .iter()
        .rev()
        .find(|e| e["task"]["id"] == "T1")
        .unwrap();
    assert_eq!(t1_last["task"]["status"], "done");
    assert_eq!(t1_last["task"]["result"], "parsed");
    assert!(t1_last["task"]["assignee"].is_string());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_dependency_blocks_and_the_deadlock_is_reported_first() {
    let (results, events) = run("failure").await;
    let report = &results[4].1;
    assert!(
        report.starts_with("CRITICAL — task board deadlock")
            && report.contains("T2 (blocked waits for T1 (failed))"),
        "{report}"
    );
    let t2_last = of_type(&events, "task_updated")
        .into_iter()
        .rev()
        .find(|e| e["task"]["id"] == "T2")
        .unwrap();
    assert_eq!(t2_last["task"]["status"], "blocked");
    let deadlocks = of_type(&events, "deadlock_detected");
    assert_eq!(deadlocks.len(), 1, "one event per deadlock");
    assert_eq!(deadlocks[0]["tasks"][0]["id"], "T2");
    assert!(
        deadlocks[0]["tasks"][0]["why"]
            .as_str()
            .unwrap()
            .contains("T1 (failed)")
    );
}

/// A worker given a board task reads the task itself in its first message: the title,
/// what done means, and the results of the tasks it builds on, not only the prompt its
/// supervisor wrote.
#[tokio::test(flavor = "multi_thread")]
async fn a_tasks_worker_reads_its_title_done_criteria_and_its_dependencies_results() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_worker(body) {
            let summary = if first_user(body).contains("do T1") {
                "the parser is in src/parse.rs"
            } else {
                "tested"
            };
            return MockResponse::tool_call(
                "r",
                "return_results",
                &good_result(summary).to_string(),
            );
        }
        match tool_count(body) {
            0 => plan(
                "p",
                json!([
                    {"id": "T1", "title": "write the parser"},
                    {"id": "T2", "title": "test the parser", "depends_on": ["T1"],
                     "description": "every parser test passes"}
                ]),
            ),
            1 => spawn_for("s1", "T1"),
            2 => MockResponse::tool_call("w1", "wait_for_agents", "{}"),
            3 => spawn_for("s2", "T2"),
            4 => MockResponse::tool_call("w2", "wait_for_agents", "{}"),
            _ => MockResponse::text("done"),
        }
    });
    sb.exec(&mock, &["--json", "--approval", "auto", "plan and run"])
        .await
        .assert_ok();
    let t2 = mock
        .requests()
        .into_iter()
        .find(|r| is_worker(&r.body) && first_user(&r.body).contains("do T2"))
        .unwrap();
    let first = first_user(&t2.body);
    assert!(
        first.contains("Your task on the board: T2 — test the parser"),
        "{first}"
    );
    assert!(
        first.contains("Done when: every parser test passes"),
        "{first}"
    );
    assert!(
        first.contains("- T1 (write the parser): the parser is in src/parse.rs"),
        "{first}"
    );
}

fn first_user(body: &Value) -> String {
    transcript(body)
        .into_iter()
        .find(|(role, _)| role == "user")
        .map(|(_, text)| text)
        .unwrap_or_default()
}
