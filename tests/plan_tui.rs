//! Plan first and coordinate only on the screen (issue 54 part 4), the real binary in a
//! pseudo-terminal against the mock model server: a `plan_first` worker's plan is a
//! dialog the user approves with `1` (the worker's writing tools come back and it writes)
//! or rejects with a typed reason (the worker reads it), and `Esc` leaves to the
//! supervisor; `/lead` and Ctrl+L take the persona's writing tools away and back, `LEAD`
//! in the status bar, and a persona whose role says `coordinate_only` starts that way.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::*;
use common::pty::Tui;
use common::*;
use serde_json::{Value, json};
use std::time::Duration;

fn roles(sb: &Sandbox) {
    sb.write(
        ".squad/roles/planner.toml",
        "name = \"planner\"\ndescription = \"writes once its plan is approved\"\n\
         system_prompt = \"Plan, then do it.\"\nplan_first = true\n",
    );
    sb.write(
        ".squad/roles/lead.toml",
        "name = \"lead\"\nsystem_prompt = \"Lead the team.\"\nenabled_agents = [\"planner\"]\n",
    );
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|ts| {
            ts.iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn offers(body: &Value, tool: &str) -> bool {
    tool_names(body).iter().any(|t| t == tool)
}

fn last_result(body: &Value) -> String {
    tool_messages(body)
        .last()
        .map(|(_, c)| c.clone())
        .unwrap_or_default()
}

fn last_said(body: &Value) -> String {
    transcript(body)
        .last()
        .map(|(_, c)| c.clone())
        .unwrap_or_default()
}

fn submit(plan: &str) -> MockResponse {
    MockResponse::tool_call("p", "submit_plan", &json!({"plan": plan}).to_string())
}

/// The worker: PLAN-A, PLAN-B once told why PLAN-A was rejected, then the write it
/// planned and its result.
fn worker(body: &Value) -> MockResponse {
    let last = last_result(body);
    if tool_count(body) == 0 {
        return submit("PLAN-A: rewrite everything");
    }
    if last.contains("Plan rejected") {
        return submit("PLAN-B: write out.txt only");
    }
    if last.contains("Plan approved") {
        return MockResponse::tool_call(
            "w",
            "write_file",
            &json!({"path": "out.txt", "content": "planned\n"}).to_string(),
        );
    }
    MockResponse::tool_call(
        "r",
        "return_results",
        &json!({"result": {
            "status": "success",
            "summary": "PLANNED-AND-DONE",
            "artifacts": [{"file_path": "out.txt", "description": "planned", "change_type": "created"}],
            "known_issues": []
        }})
        .to_string(),
    )
}

fn workers(mock: &MockServer) -> Vec<Value> {
    mock.requests()
        .into_iter()
        .map(|r| r.body)
        .filter(is_worker)
        .collect()
}

/// Past the dialog's guard against typed-ahead keys.
async fn past_guard() {
    tokio::time::sleep(::squad::tui::APPROVAL_GUARD + Duration::from_millis(150)).await;
}

async fn start_team(tui: &Tui) {
    tui.wait_text("lead").await;
    tui.type_text("make out.txt").await;
    tui.enter().await;
}

/// (a) The plan is a dialog on the real screen; `1` approves it; the worker's next request
/// offers its writing tools and it writes its file.
#[tokio::test(flavor = "multi_thread")]
async fn a_plan_approved_with_1_on_screen_gives_the_worker_its_writing_tools() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    roles(&sb);
    mock.set_responder(|body| {
        if is_worker(body) {
            return worker(body);
        }
        if tool_count(body) == 0 {
            return spawn("planner", "PLAN TASK: make out.txt");
        }
        if last_said(body).contains("PLANNED-AND-DONE") {
            return MockResponse::text("ALL-DONE: out.txt made");
        }
        // The supervisor leaves the plan to the user.
        MockResponse::text("waiting for the plan")
    });
    let tui = Tui::spawn(
        &sb,
        &mock.base_url(),
        &["--role", "lead", "--approval", "auto"],
        30,
        110,
    );
    start_team(&tui).await;
    let screen = tui
        .wait_for("the plan dialog", |s| {
            s.contains("plan · planner") && s.contains("PLAN-A: rewrite everything")
        })
        .await;
    assert!(!sb.ws().join("out.txt").exists(), "{screen}");
    let before = workers(&mock);
    assert!(!before.is_empty() && before.iter().all(|b| !offers(b, "write_file")));
    assert!(offers(&before[0], "submit_plan"));
    past_guard().await;
    tui.send(b"1");
    tui.wait_text("ALL-DONE: out.txt made").await;
    assert_eq!(sb.read("out.txt"), "planned\n");
    let after = workers(&mock);
    let approved = after
        .iter()
        .find(|b| last_result(b).contains("Plan approved"))
        .expect("a request after the approval");
    assert!(
        offers(approved, "write_file") && !offers(approved, "submit_plan"),
        "{:?}",
        tool_names(approved)
    );
    let screen = tui.screen();
    assert!(!screen.contains("plan · planner"), "dialog gone: {screen}");
}

/// (b) A typed reason and Enter reject the plan: the reason is in the worker's next
/// request. Its second plan's dialog is put aside with `Esc`: the supervisor decides it.
#[tokio::test(flavor = "multi_thread")]
async fn a_typed_reason_rejects_the_plan_and_esc_leaves_the_next_to_the_supervisor() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    roles(&sb);
    mock.set_responder(|body| {
        if is_worker(body) {
            return worker(body);
        }
        if tool_count(body) == 0 {
            return spawn("planner", "PLAN TASK: make out.txt");
        }
        let last = last_said(body);
        if last.contains("Plan from your worker") && last.contains("PLAN-B") {
            // Decides after the user had time to put the dialog aside.
            let id = spawned_ids(body).first().cloned().unwrap_or_default();
            return MockResponse::tool_call(
                "v",
                "review_plan",
                &json!({"agent_id": id, "approve": true, "reason": ""}).to_string(),
            )
            .with_delay(Duration::from_secs(4));
        }
        if last.contains("PLANNED-AND-DONE") {
            return MockResponse::text("ALL-DONE: out.txt made");
        }
        MockResponse::text("waiting for the plan")
    });
    let tui = Tui::spawn(
        &sb,
        &mock.base_url(),
        &["--role", "lead", "--approval", "auto"],
        30,
        110,
    );
    start_team(&tui).await;
    tui.wait_for("the first plan's dialog", |s| {
        s.contains("plan · planner") && s.contains("PLAN-A")
    })
    .await;
    past_guard().await;
    tui.type_text("REASON-TYPED only out.txt").await;
    tui.enter().await;
    // The worker reads the reason and plans again.
    tui.wait_for("the second plan's dialog", |s| {
        s.contains("plan · planner") && s.contains("PLAN-B")
    })
    .await;
    let told = workers(&mock)
        .into_iter()
        .find(|b| last_result(b).contains("Plan rejected"))
        .expect("a request after the rejection");
    assert!(
        last_result(&told).contains("REASON-TYPED only out.txt"),
        "{}",
        last_result(&told)
    );
    assert!(!offers(&told, "write_file"));
    past_guard().await;
    tui.send(b"\x1b");
    let screen = tui.wait_text("plan put aside").await;
    assert!(!screen.contains("plan · planner"), "dialog gone: {screen}");
    assert!(!sb.ws().join("out.txt").exists(), "not decided yet");
    // The supervisor approves it; the worker writes.
    tui.wait_text("ALL-DONE: out.txt made").await;
    assert_eq!(sb.read("out.txt"), "planned\n");
}

/// The status bar's last row, where `LEAD` shows.
fn status_row(screen: &str) -> String {
    screen
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default()
        .to_string()
}

async fn ask(tui: &Tui, mock: &MockServer, text: &str, answer: &str) -> Value {
    let asked = mock.requests().len();
    tui.type_text(text).await;
    tui.enter().await;
    tui.wait_text(answer).await;
    mock.requests()[asked].body.clone()
}

/// (c) `/lead` and Ctrl+L on the real screen: `LEAD` in the status bar and the persona's
/// next request without its writing tools; toggled back, they return.
#[tokio::test(flavor = "multi_thread")]
async fn lead_and_ctrl_l_take_the_personas_writing_tools_away_and_back() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.push_all([
        MockResponse::text("ANSWER-ONE"),
        MockResponse::text("ANSWER-TWO"),
        MockResponse::text("ANSWER-THREE"),
    ]);
    let tui = Tui::spawn(&sb, &mock.base_url(), &[], 30, 110);
    tui.wait_text("copilot").await;
    assert!(!status_row(&tui.screen()).contains("LEAD"));
    tui.type_text("/lead").await;
    tui.enter().await;
    tui.wait_for("LEAD in the status bar", |s| status_row(s).contains("LEAD"))
        .await;
    let body = ask(&tui, &mock, "first", "ANSWER-ONE").await;
    assert!(offers(&body, "read_file") && offers(&body, "spawn_agent"));
    for writes in ["write_file", "edit_file", "run_command"] {
        assert!(!offers(&body, writes), "{:?}", tool_names(&body));
    }
    // Ctrl+L: writes again.
    tui.send(b"\x0c");
    tui.wait_for("LEAD gone", |s| !status_row(s).contains("LEAD"))
        .await;
    let body = ask(&tui, &mock, "second", "ANSWER-TWO").await;
    assert!(offers(&body, "write_file"), "{:?}", tool_names(&body));
    // Ctrl+L again: coordinates only again.
    tui.send(b"\x0c");
    tui.wait_for("LEAD again", |s| status_row(s).contains("LEAD"))
        .await;
    let body = ask(&tui, &mock, "third", "ANSWER-THREE").await;
    assert!(!offers(&body, "write_file"), "{:?}", tool_names(&body));
}

/// (c) A persona whose role file says `coordinate_only = true` starts in `LEAD`, its first
/// request without writing tools; Ctrl+L gives them back, and that choice (not the role's)
/// is what resuming (`--resume last`) finds.
#[tokio::test(flavor = "multi_thread")]
async fn a_coordinate_only_persona_starts_in_lead_and_the_toggle_survives_resume() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write(
        ".squad/roles/lead.toml",
        "name = \"lead\"\nsystem_prompt = \"Lead the team.\"\n\
         enabled_agents = [\"implementer\"]\ncoordinate_only = true\n",
    );
    mock.push_all([
        MockResponse::text("ANSWER-ONE"),
        MockResponse::text("ANSWER-TWO"),
        MockResponse::text("ANSWER-THREE"),
    ]);
    let mut tui = Tui::spawn(&sb, &mock.base_url(), &["--role", "lead"], 30, 110);
    tui.wait_for("LEAD from the start", |s| status_row(s).contains("LEAD"))
        .await;
    let body = ask(&tui, &mock, "first", "ANSWER-ONE").await;
    assert!(offers(&body, "spawn_agent"));
    assert!(!offers(&body, "write_file"), "{:?}", tool_names(&body));
    tui.send(b"\x0c");
    tui.wait_for("LEAD gone", |s| !status_row(s).contains("LEAD"))
        .await;
    let body = ask(&tui, &mock, "second", "ANSWER-TWO").await;
    assert!(offers(&body, "write_file"), "{:?}", tool_names(&body));
    tui.send(b"\x03");
    tokio::time::sleep(Duration::from_millis(100)).await;
    tui.send(b"\x03");
    tui.wait_exit(Duration::from_secs(10))
        .await
        .expect("squad exits");

    // Resumed: the log's last word (writes), not the role's option.
    let tui = Tui::spawn(&sb, &mock.base_url(), &["--resume", "last"], 30, 110);
    tui.wait_text("ANSWER-TWO").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !status_row(&tui.screen()).contains("LEAD"),
        "{}",
        tui.screen()
    );
    let body = ask(&tui, &mock, "third", "ANSWER-THREE").await;
    assert!(offers(&body, "write_file"), "{:?}", tool_names(&body));
}
