//! Verified results: a worker's `return_results` is checked against the real workspace (a
//! temp git repository) before its supervisor sees it, and a failed check goes back to the
//! worker as a correction. Real `squad exec` binary, mock server over HTTP.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::*;
use common::*;
use serde_json::{Value, json};
use std::time::Duration;

fn sandbox() -> Sandbox {
    let sb = Sandbox::new();
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(sb.ws())
        .status()
        .expect("git runs");
    assert!(git.success());
    sb.write("README.md", "# project\n");
    sb
}

/// `return_results` claiming `artifacts` as `(path, change_type)`.
fn claim(id: &str, status: &str, artifacts: &[(&str, &str)]) -> MockResponse {
    let artifacts: Vec<Value> = artifacts
        .iter()
        .map(|(p, c)| json!({"file_path": p, "description": "the change", "change_type": c}))
        .collect();
    MockResponse::tool_call(
        id,
        "return_results",
        &json!({"result": {"status": status, "summary": "done", "artifacts": artifacts, "known_issues": []}})
            .to_string(),
    )
}

fn write(id: &str, path: &str, content: &str) -> MockResponse {
    MockResponse::tool_call(
        id,
        "write_file",
        &json!({"path": path, "content": content}).to_string(),
    )
}

/// The supervisor's script: spawn one worker, wait, answer.
fn supervisor(body: &Value) -> MockResponse {
    match tool_count(body) {
        0 => spawn("agentic_coder", "write the notes"),
        1 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
        _ => MockResponse::text("done"),
    }
}

/// A rule config.env breaks until it holds VERSION=2, saying so in a line.
const VERSION_RULE: &str = "[[verify.rules]]\nid = \"version\"\ncommand = \"grep -qx VERSION=2 config.env || { echo 'config.env must contain the line VERSION=2'; exit 1; }\"\n";

/// The supervisor's script for the config.env worker: spawn it, wait, answer.
fn config_supervisor(body: &Value) -> MockResponse {
    match tool_count(body) {
        0 => spawn(
            "implementer",
            "create the file config.env containing the line VERSION=1",
        ),
        1 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
        _ => MockResponse::text("done"),
    }
}

/// Whether each verification of the run passed, in order.
fn passed(run: &Run) -> Vec<bool> {
    of_type(&run.events(), "verification")
        .into_iter()
        .map(|v| v["passed"].as_bool().unwrap())
        .collect()
}

/// The `[squad]` notices (corrections) in a request, in order.
fn notices(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| content_text(&m["content"]))
        .filter(|t| t.contains("[squad] Your result was checked"))
        .collect()
}

/// A worker that claims notes.md before writing it, writes it when corrected, and claims
/// it again.
fn claims_then_writes_notes(body: &Value) -> MockResponse {
    if !is_worker(body) {
        return supervisor(body);
    }
    match tool_count(body) {
        0 => claim("r1", "success", &[("notes.md", "created")]),
        1 => write("w1", "notes.md", "the notes\n"),
        _ => claim("r2", "success", &[("notes.md", "created")]),
    }
}

fn last_worker_request(mock: &MockServer) -> Value {
    mock.requests()
        .into_iter()
        .filter(|r| is_worker(&r.body))
        .max_by_key(|r| tool_count(&r.body))
        .unwrap()
        .body
}

fn supervisor_report(mock: &MockServer) -> String {
    let last = mock
        .requests()
        .into_iter()
        .rfind(|r| !is_worker(&r.body))
        .unwrap();
    tool_messages(&last.body)
        .last()
        .map(|m| m.1.clone())
        .unwrap_or_default()
}

async fn exec(sb: &Sandbox, mock: &MockServer) -> Run {
    let run = sb
        .exec(mock, &["--json", "--approval", "auto", "write the notes"])
        .await;
    run.assert_ok();
    run
}

#[tokio::test(flavor = "multi_thread")]
async fn a_claimed_file_that_was_never_written_is_corrected_then_verified() {
    let mock = MockServer::start().await;
    let sb = sandbox();
    mock.set_responder(claims_then_writes_notes);
    let run = exec(&sb, &mock).await;

    let body = last_worker_request(&mock);
    let corrections = notices(&body);
    assert_eq!(corrections.len(), 1, "{corrections:?}");
    assert!(
        corrections[0].contains("notes.md") && corrections[0].contains("does not exist"),
        "{}",
        corrections[0]
    );
    assert!(corrections[0].contains("write the notes"), "names the task");
    let first_answer = &tool_messages(&body)[0].1;
    assert!(first_answer.contains("not accepted yet"), "{first_answer}");

    let events = run.events();
    let verdicts = of_type(&events, "verification");
    assert_eq!(verdicts.len(), 2);
    assert_eq!(
        (&verdicts[0]["attempt"], &verdicts[0]["passed"]),
        (&json!(1), &json!(false))
    );
    assert_eq!(verdicts[0]["failures"][0]["rule"], "artifact_created");
    assert_eq!(
        (
            &verdicts[1]["attempt"],
            &verdicts[1]["passed"],
            &verdicts[1]["score"]
        ),
        (&json!(2), &json!(true), &json!(100))
    );
    let returned = of_type(&events, "result_returned");
    assert_eq!(returned.len(), 1);
    // The verdict is told once, in its own event just before the result.
    assert!(returned[0]["result"].get("verification").is_none());
    let before = events
        .iter()
        .take_while(|e| e["type"] != "result_returned")
        .filter(|e| e["type"] == "verification")
        .last()
        .unwrap();
    assert_eq!(before["passed"], true);
    let report = supervisor_report(&mock);
    assert!(report.contains("\"verification\""), "{report}");
    assert!(report.contains("\"score\": 100"), "{report}");
    assert_eq!(sb.read("notes.md"), "the notes\n");

    // The summary counts the task: completed after one correction, caught by the checks.
    let summary = of_type(&events, "summary");
    let totals = &summary[0]["totals"]["tasks"];
    assert_eq!(
        (
            &totals["started"],
            &totals["completed"],
            &totals["failed"],
            &totals["corrections"],
            &totals["first_pass"],
            &totals["verified"],
            &totals["caught"],
        ),
        (
            &json!(1),
            &json!(1),
            &json!(0),
            &json!(1),
            &json!(0),
            &json!(1),
            &json!(1)
        ),
        "{totals}"
    );
    let worker_row = summary[0]["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["parent_id"].is_string())
        .unwrap();
    assert_eq!(worker_row["tasks"]["corrections"], 1);
    assert_eq!(worker_row["tasks"]["timed"], 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_test_command_is_sent_back_with_its_output_until_fixed() {
    let mock = MockServer::start().await;
    let sb = sandbox();
    sb.write("status.txt", "broken\n");
    sb.workspace_config("[tools]\ntest_command = \"cat status.txt && grep -q fixed status.txt\"\n");
    mock.set_responder(|body| {
        if !is_worker(body) {
            return supervisor(body);
        }
        match tool_count(body) {
            0 => write("w1", "status.txt", "still broken\n"),
            1 => claim("r1", "success", &[("status.txt", "modified")]),
            2 => write("w2", "status.txt", "fixed\n"),
            _ => claim("r2", "success", &[("status.txt", "modified")]),
        }
    });
    let run = exec(&sb, &mock).await;
    let corrections = notices(&last_worker_request(&mock));
    assert_eq!(corrections.len(), 1);
    assert!(
        corrections[0].contains("[tests]")
            && corrections[0].contains("exited 1")
            && corrections[0].contains("still broken"),
        "{}",
        corrections[0]
    );
    assert_eq!(passed(&run), vec![false, true]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_that_never_fixes_gets_max_corrections_then_goes_up_failed() {
    let mock = MockServer::start().await;
    let sb = sandbox();
    sb.workspace_config("[verify]\nmax_corrections = 2\n");
    mock.set_responder(|body| {
        if !is_worker(body) {
            return supervisor(body);
        }
        claim("r", "success", &[("notes.md", "created")])
    });
    let run = exec(&sb, &mock).await;
    let body = last_worker_request(&mock);
    assert_eq!(notices(&body).len(), 2);
    assert!(notices(&body)[1].contains("correction 2 of 2"));
    let events = run.events();
    assert_eq!(of_type(&events, "verification").len(), 3);
    let returned = of_type(&events, "result_returned");
    assert_eq!(returned.len(), 1);
    assert!(returned[0]["result"].get("verification").is_none());
    let last_verdict = of_type(&events, "verification")[2];
    assert_eq!(last_verdict["passed"], false);
    assert_eq!(last_verdict["attempt"], 3);
    let report = supervisor_report(&mock);
    assert!(report.contains("\"passed\": false"), "{report}");
    let tasks = &of_type(&events, "summary")[0]["totals"]["tasks"];
    assert_eq!(
        (&tasks["completed"], &tasks["failed"], &tasks["corrections"]),
        (&json!(0), &json!(1), &json!(2)),
        "{tasks}"
    );
    // Three worker requests: no fourth round.
    let worker_requests = mock
        .requests()
        .iter()
        .filter(|r| is_worker(&r.body))
        .count();
    assert_eq!(worker_requests, 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_honest_failure_goes_up_at_once_and_verify_off_skips_checks() {
    for (config, status) in [("", "failure"), ("[verify]\nenabled = false\n", "success")] {
        let mock = MockServer::start().await;
        let sb = sandbox();
        sb.workspace_config(config);
        mock.set_responder(move |body| {
            if !is_worker(body) {
                return supervisor(body);
            }
            claim("r", status, &[("never-written.md", "created")])
        });
        let run = exec(&sb, &mock).await;
        let events = run.events();
        assert!(of_type(&events, "verification").is_empty(), "{config}");
        assert_eq!(notices(&last_worker_request(&mock)).len(), 0);
        let returned = of_type(&events, "result_returned");
        assert_eq!(returned[0]["result"]["status"], status);
        assert!(returned[0]["result"].get("verification").is_none());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn two_workers_are_each_judged_on_their_own_changes_and_rules_follow_when_changed() {
    let mock = MockServer::start().await;
    let sb = sandbox();
    sb.workspace_config(
        "[verify]\nmax_corrections = 1\n\n[[verify.rules]]\nid = \"md_lint\"\ncommand = \"echo markdown is not allowed here; exit 3\"\nwhen_changed = [\"*.md\"]\n",
    );
    mock.set_responder(|body| {
        if !is_worker(body) {
            return match tool_count(body) {
                0 => MockResponse::tool_calls(vec![
                    call(
                        "s1",
                        "spawn_agent",
                        json!({"role_name": "agentic_coder", "task_prompt": "task rs"}),
                    ),
                    call(
                        "s2",
                        "spawn_agent",
                        json!({"role_name": "agentic_coder", "task_prompt": "task md"}),
                    ),
                ]),
                2 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
                _ => MockResponse::text("done"),
            };
        }
        let file = if content_text(&body["messages"][1]["content"]).contains("task rs") {
            "src/code.rs"
        } else {
            "docs/notes.md"
        };
        match tool_count(body) {
            // Both write first; the returns come after both writes are on disk.
            0 => write("w", file, "content\n"),
            _ => claim("r", "success", &[(file, "created")]).with_delay(Duration::from_millis(600)),
        }
    });
    let run = exec(&sb, &mock).await;
    let events = run.events();
    let spawned: Vec<&Value> = of_type(&events, "agent_spawned")
        .into_iter()
        .filter(|e| !e["parent_id"].is_null())
        .collect();
    assert_eq!(spawned.len(), 2);
    let verdicts_of = |task: &str| -> Vec<Value> {
        let id = &spawned
            .iter()
            .find(|e| e["task"].as_str().unwrap().contains(task))
            .unwrap()["agent_id"];
        of_type(&events, "verification")
            .into_iter()
            .filter(|v| &v["agent_id"] == id)
            .cloned()
            .collect()
    };
    let rs = verdicts_of("task rs");
    assert_eq!(rs.len(), 1);
    assert_eq!(rs[0]["passed"], true);
    assert_eq!(
        rs[0]["score"], 100,
        "not blamed for the other's file: {}",
        rs[0]
    );
    let md = verdicts_of("task md");
    assert_eq!(md.len(), 2, "one correction, then delivered: {md:?}");
    assert!(md.iter().all(|v| v["passed"] == false));
    assert_eq!(md[0]["failures"][0]["rule"], "md_lint");
    assert!(
        md[0]["failures"][0]["message"]
            .as_str()
            .unwrap()
            .contains("markdown is not allowed"),
        "{}",
        md[0]
    );
    assert!(
        md[0]["warnings"].as_array().unwrap().is_empty(),
        "{}",
        md[0]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_shows_each_verdict_and_its_findings() {
    let mock = MockServer::start().await;
    let sb = sandbox();
    mock.set_responder(claims_then_writes_notes);
    let run = sb
        .exec(&mock, &["--approval", "auto", "write the notes"])
        .await;
    run.assert_ok();
    assert!(
        run.stderr
            .contains("verification 80/100, correction 1 of 3")
            && run
                .stderr
                .contains("error   artifact notes.md (created): the file does not exist")
            && run.stderr.contains("verified 100/100 after 1 correction"),
        "{}",
        run.stderr
    );
    // The table's task columns and the session's task line.
    assert!(run.stderr.contains("ok/failed") && run.stderr.contains("first-pass"));
    assert!(
        run.stderr.contains(
            "tasks: 1 started, 1 completed, 0 failed · success rate 100% · first-pass 0%"
        ) && run.stderr.contains(
            "checks: 2 results checked, 1 sent back to be fixed (50%) · 1 of 1 checked tasks \
             needed a fix (100%) · 1.0 fixes per task · avg score 90/100"
        ),
        "{}",
        run.stderr
    );
}

/// The last user message of a request (for a reviewer: its review task).
fn last_user_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|m| m["role"] == "user")
        .map(|m| content_text(&m["content"]))
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reviewer_reads_the_diff_and_its_findings_join_the_verdict() {
    let mock = MockServer::start().await;
    let sb = sandbox();
    sb.workspace_config("[verify]\nreviewer = \"code_reviewer\"\n");
    mock.set_responder(|body| {
        if is_role(body, "code_reviewer") {
            let task = last_user_text(body);
            let result = if task.contains("TODO") {
                json!({"result": {"status": "failure", "summary": "placeholder only",
                    "artifacts": [], "known_issues": ["notes.md holds only TODO; write the real notes"]}})
            } else {
                json!({"result": {"status": "success", "summary": "fine",
                    "artifacts": [], "known_issues": ["could mention the date"]}})
            };
            return MockResponse::tool_call("rv", "return_results", &result.to_string());
        }
        if !is_worker(body) {
            return supervisor(body);
        }
        match tool_count(body) {
            0 => write("w1", "notes.md", "TODO\n"),
            1 => claim("r1", "success", &[("notes.md", "created")]),
            2 => write("w2", "notes.md", "the notes\n"),
            _ => claim("r2", "success", &[("notes.md", "created")]),
        }
    });
    let run = exec(&sb, &mock).await;

    // The reviewer got the task, the result and the diff, and could not write.
    let reviews: Vec<Value> = mock
        .requests()
        .into_iter()
        .filter(|r| is_role(&r.body, "code_reviewer"))
        .map(|r| r.body)
        .collect();
    assert_eq!(reviews.len(), 2, "one review per checked result");
    let first = last_user_text(&reviews[0]);
    assert!(
        first.contains("write the notes")
            && first.contains("TODO")
            && first.contains("\"created\""),
        "{first}"
    );
    let offered: Vec<&str> = reviews[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(
        offered.contains(&"read_file") && !offered.contains(&"write_file"),
        "{offered:?}"
    );

    // Its failure was the worker's correction; its remark on the fix is a warning.
    let corrections = notices(&last_worker_request(&mock));
    assert_eq!(corrections.len(), 1);
    assert!(
        corrections[0].contains("[reviewer] notes.md holds only TODO"),
        "{}",
        corrections[0]
    );
    let events = run.events();
    let verdicts = of_type(&events, "verification");
    assert_eq!(verdicts.len(), 2);
    assert_eq!(verdicts[0]["failures"][0]["rule"], "reviewer");
    assert_eq!(verdicts[1]["passed"], true);
    assert_eq!(
        verdicts[1]["warnings"][0]["message"],
        "could mention the date"
    );
    assert_eq!(verdicts[1]["score"], 95);

    // Reviewers sit under the worker in the tree and are not checked themselves.
    let spawned = of_type(&events, "agent_spawned");
    let worker = spawned
        .iter()
        .find(|e| e["role"] == "agentic_coder")
        .unwrap();
    let reviewers: Vec<&Value> = spawned
        .iter()
        .copied()
        .filter(|e| e["role"] == "code_reviewer")
        .collect();
    assert_eq!(reviewers.len(), 2);
    assert!(
        reviewers
            .iter()
            .all(|r| r["parent_id"] == worker["agent_id"])
    );
    assert_eq!(sb.read("notes.md"), "the notes\n");
    let statuses: Vec<&Value> = of_type(&events, "agent_status")
        .into_iter()
        .filter(|e| e["agent_id"] == reviewers[0]["agent_id"])
        .map(|e| &e["status"])
        .collect();
    assert_eq!(
        statuses.last().copied(),
        Some(&json!("completed")),
        "{statuses:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_reviewer_role_is_a_clear_error_before_any_request() {
    let mock = MockServer::start().await;
    let sb = sandbox();
    sb.workspace_config("[verify]\nreviewer = \"qc_bot\"\n");
    let run = sb.exec(&mock, &["--approval", "auto", "hi"]).await;
    assert_ne!(run.code, 0);
    assert!(
        run.stderr
            .contains("[verify] reviewer: unknown role 'qc_bot'")
            && run.stderr.contains("code_reviewer"),
        "{}",
        run.stderr
    );
    assert!(mock.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_resumed_session_counts_the_tasks_of_its_log() {
    let mock = MockServer::start().await;
    let sb = sandbox();
    mock.set_responder(claims_then_writes_notes);
    exec(&sb, &mock).await;
    let run = sb
        .exec(
            &mock,
            &["--json", "--approval", "auto", "--resume", "last", "thanks"],
        )
        .await;
    run.assert_ok();
    let events = run.events();
    let tasks = &of_type(&events, "summary")[0]["totals"]["tasks"];
    // The task, its correction and its catch come from the log, timed by its events' `ts`.
    assert_eq!(
        (
            &tasks["started"],
            &tasks["completed"],
            &tasks["corrections"],
            &tasks["caught"],
            &tasks["timed"]
        ),
        (&json!(1), &json!(1), &json!(1), &json!(1), &json!(1)),
        "{tasks}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn get_agents_shows_each_workers_verdict() {
    let mock = MockServer::start().await;
    let sb = sandbox();
    mock.set_responder(|body| {
        if is_worker(body) {
            return claims_then_writes_notes(body);
        }
        match tool_count(body) {
            0 => spawn("agentic_coder", "write the notes"),
            1 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            2 => MockResponse::tool_call("g", "get_agents", "{}"),
            _ => MockResponse::text("done"),
        }
    });
    exec(&sb, &mock).await;
    let listing: Value = serde_json::from_str(&supervisor_report(&mock)).unwrap();
    let v = &listing["agents"][0]["verification"];
    assert_eq!(
        (&v["passed"], &v["score"], &v["attempt"], &v["errors"]),
        (&json!(true), &json!(100), &json!(2), &json!(0)),
        "{listing}"
    );
}

/// What Qwen2.5-Coder-1.5B did in the real-model suite's correction round: told to write
/// VERSION=1 while the project's check wants VERSION=2, it read the command-first
/// correction ("`grep -qx VERSION=2 config.env || …` exited 1") as "fix the error in the
/// grep command" and never wrote the line. A check that says what it wants in a line now
/// leads with that sentence, says the checks win over the task, and puts the task last.
#[tokio::test(flavor = "multi_thread")]
async fn a_checks_own_message_leads_its_correction_and_the_task_comes_last() {
    let mock = MockServer::start().await;
    let sb = sandbox();
    sb.workspace_config(VERSION_RULE);
    mock.set_responder(|body| {
        if !is_worker(body) {
            return config_supervisor(body);
        }
        match tool_count(body) {
            0 => write("w1", "config.env", "VERSION=1\n"),
            1 => claim("r1", "success", &[("config.env", "created")]),
            2 => write("w2", "config.env", "VERSION=2\n"),
            _ => claim("r2", "success", &[("config.env", "created")]),
        }
    });
    let run = exec(&sb, &mock).await;
    let corrections = notices(&last_worker_request(&mock));
    assert_eq!(corrections.len(), 1);
    let text = &corrections[0];
    let first = text
        .lines()
        .find(|l| l.starts_with("1. "))
        .expect("a numbered failure");
    assert!(
        first.starts_with(
            "1. [version] config.env must contain the line VERSION=2 (the check `grep"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "Fix: change the files so that this holds: config.env must contain the line VERSION=2"
        ),
        "{text}"
    );
    assert!(text.contains("the checks win"), "{text}");
    let task_at = text.find("your task was:").expect("the task");
    assert!(task_at > text.find("1. [version]").unwrap(), "{text}");
    assert_eq!(sb.read("config.env"), "VERSION=2\n");
    assert_eq!(passed(&run), vec![false, true]);
}

/// The real 1.5B worker's ways (issue 38's stock-template runs): it wrote config.env, then
/// said so in words, or wrote its result as a fenced JSON object with no tool name, so no
/// check ran and the broken rule went unseen. A turn that ends in words with no result is
/// asked once for it; a reply that is a result object alone is the `return_results` call
/// it means; the result is checked like any other, and the correction loop runs.
#[tokio::test(flavor = "multi_thread")]
async fn a_worker_that_answers_in_words_is_asked_for_its_result_and_the_result_is_checked() {
    let mock = MockServer::start().await;
    let sb = sandbox();
    sb.workspace_config(VERSION_RULE);
    mock.set_responder(|body| {
        if !is_worker(body) {
            return config_supervisor(body);
        }
        let asked = last_user_text(body).contains("ended without return_results");
        match tool_count(body) {
            0 => write("w1", "config.env", "VERSION=1\n"),
            1 if !asked => MockResponse::text("I created config.env with the line VERSION=1."),
            1 => MockResponse::text(
                "```json\n{\"result\": {\"status\": \"success\", \"summary\": \"created config.env\", \"artifacts\": [{\"file_path\": \"config.env\", \"description\": \"the file\", \"change_type\": \"created\"}], \"known_issues\": []}}\n```",
            ),
            2 => write("w2", "config.env", "VERSION=2\n"),
            _ => claim("r2", "success", &[("config.env", "created")]),
        }
    });
    let run = exec(&sb, &mock).await;
    let last = last_worker_request(&mock);
    let asked = transcript(&last)
        .iter()
        .filter(|(role, text)| role == "user" && text.contains("ended without return_results"))
        .count();
    assert_eq!(asked, 1, "{:?}", transcript(&last));
    assert_eq!(notices(&last).len(), 1, "one correction");
    assert_eq!(sb.read("config.env"), "VERSION=2\n");
    assert_eq!(passed(&run), vec![false, true]);
    assert!(
        supervisor_report(&mock).contains("created"),
        "{}",
        supervisor_report(&mock)
    );
}
