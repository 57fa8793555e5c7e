//! The team's hooks (issue 54 part 5), under Claude Code's names and with its decisions,
//! through the real `squad exec` binary against the mock server: a blocking
//! `TaskCompleted` keeps a board task open and its reason reaches the worker, whose second
//! result then finishes it; a `TaskCreated` hook's `decision: "block"` refuses a plan;
//! a `TeammateIdle` hook's exit 2 keeps a kept worker working once.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::*;
use common::*;
use serde_json::{Value, json};
use std::path::PathBuf;

/// The user's own config with `hooks`; the folder the hooks write into is writable.
fn user_config(sb: &Sandbox, toml: &str) {
    std::fs::create_dir_all(sb.config_dir()).unwrap();
    let toml = format!(
        "{toml}\n[sandbox]\nwritable = [\"{}\"]\n",
        out(sb, "").display()
    );
    std::fs::write(sb.config_dir().join("config.toml"), toml).unwrap();
}

fn out(sb: &Sandbox, name: &str) -> PathBuf {
    let dir = sb.home.path().join("out");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// A hook script that logs its input to `log` and, the first time only, says `first`
/// (a shell snippet: `echo why >&2; exit 2`, or a JSON decision on stdout).
fn hook_once(sb: &Sandbox, name: &str, first: &str) -> (String, PathBuf) {
    let (script, log, mark) = (
        out(sb, &format!("{name}.sh")),
        out(sb, &format!("{name}.jsonl")),
        out(sb, &format!("{name}.mark")),
    );
    std::fs::write(
        &script,
        format!(
            "cat >> '{log}'\necho >> '{log}'\nif [ ! -e '{mark}' ]; then touch '{mark}'; {first}; fi\nexit 0\n",
            log = log.display(),
            mark = mark.display()
        ),
    )
    .unwrap();
    (format!("sh '{}'", script.display()), log)
}

fn lines(log: &PathBuf) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn tool(id: &str, name: &str, args: Value) -> MockResponse {
    MockResponse::tool_call(id, name, &args.to_string())
}

fn mentions(body: &Value, needle: &str) -> bool {
    transcript(body).iter().any(|(_, c)| c.contains(needle))
}

fn statuses(events: &[Value], id: &str) -> Vec<String> {
    (events.iter())
        .filter(|e| e["type"] == "task_updated" && e["task"]["id"] == id)
        .map(|e| e["task"]["status"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_blocking_task_completed_hook_keeps_the_task_open_with_its_reason() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    let (command, log) = hook_once(&sb, "completed", "echo 'add a changelog entry' >&2; exit 2");
    user_config(
        &sb,
        &format!("[[hooks]]\nevent = \"TaskCompleted\"\ncommand = {command:?}\n"),
    );
    mock.set_responder(|body| {
        if is_worker(body) {
            if !mentions(body, "A task_completed hook keeps task t1 open") {
                return tool("r1", "return_results", good_result("t1 done"));
            }
            return match tool_count(body) {
                1 => tool("w", "write_file", json!({"path": "CHANGELOG", "content": "t1\n"})),
                _ => tool(
                    "r2",
                    "return_results",
                    json!({"result": {"status": "success", "summary": "t1 done, logged",
                        "artifacts": [{"file_path": "CHANGELOG", "description": "entry",
                                       "change_type": "created"}], "known_issues": []}}),
                ),
            };
        }
        match tool_count(body) {
            0 => tool(
                "p",
                "plan_tasks",
                json!({"tasks": [{"id": "t1", "title": "the first task", "description": "ship it"}]}),
            ),
            1 => tool(
                "s",
                "spawn_agent",
                json!({"role_name": "agentic_coder", "task_prompt": "do t1", "task_id": "t1",
                       "name": "shipper"}),
            ),
            2 => tool("w", "wait_for_agents", json!({})),
            _ => MockResponse::text("done"),
        }
    });
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "go"])
        .await;
    run.assert_ok();
    let events = run.events();
    // Open (running) after the first result; done only after the second.
    assert_eq!(statuses(&events, "t1"), ["ready", "running", "done"]);
    let done = (events.iter())
        .rfind(|e| e["type"] == "task_updated" && e["task"]["status"] == "done")
        .unwrap();
    assert_eq!(done["task"]["result"], "t1 done, logged");
    // The worker read the hook's reason, as the result of its first return_results.
    let reqs: Vec<Value> = mock.requests().into_iter().map(|r| r.body).collect();
    let kept = (reqs.iter())
        .find(|b| is_worker(b) && mentions(b, "A task_completed hook keeps task t1 open"))
        .expect("the reason reached the worker");
    assert!(mentions(kept, "add a changelog entry"));
    assert!(mentions(kept, "result not accepted yet"));
    // The hook heard it twice, with Claude Code's fields.
    let heard = lines(&log);
    assert_eq!(heard.len(), 2, "{heard:?}");
    for h in &heard {
        assert_eq!(h["hook_event_name"], "TaskCompleted");
        assert_eq!(h["task_id"], "t1");
        assert_eq!(h["task_subject"], "the first task");
        assert_eq!(h["task_description"], "ship it");
        assert_eq!(h["teammate_name"], "shipper");
        assert!(h["team_name"].as_str().is_some_and(|s| !s.is_empty()));
        assert_eq!(h["task"]["status"], "done");
    }
    let ran = of_type(&events, "hook_ran");
    assert!(
        ran.iter().any(|e| e["event"] == "task_completed"
            && e["outcome"]
                .as_str()
                .is_some_and(|o| o.contains("kept the task open: add a changelog entry"))),
        "{ran:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_created_hook_refuses_a_plan_with_a_json_decision() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    let (command, log) = hook_once(
        &sb,
        "created",
        r#"echo '{"decision": "block", "reason": "every task needs a description"}'"#,
    );
    user_config(
        &sb,
        &format!("[[hooks]]\nevent = \"TaskCreated\"\ncommand = {command:?}\n"),
    );
    mock.set_responder(|body| match tool_count(body) {
        0 => tool(
            "p1",
            "plan_tasks",
            json!({"tasks": [{"id": "t1", "title": "vague"}]}),
        ),
        1 => tool(
            "p2",
            "plan_tasks",
            json!({"tasks": [{"id": "t2", "title": "clear", "description": "tests pass"}]}),
        ),
        _ => MockResponse::text("planned"),
    });
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "plan"])
        .await;
    run.assert_ok();
    let events = run.events();
    assert!(
        statuses(&events, "t1").is_empty(),
        "t1 never reached the board"
    );
    assert_eq!(statuses(&events, "t2"), ["ready"]);
    let reqs: Vec<Value> = mock.requests().into_iter().map(|r| r.body).collect();
    let refused = &tool_messages(reqs.last().unwrap())[0].1;
    assert!(
        refused.contains(
            "nothing was added: a task_created hook refused task t1: every task needs a description"
        ),
        "{refused}"
    );
    let heard = lines(&log);
    assert_eq!(heard.len(), 2);
    assert_eq!(heard[0]["hook_event_name"], "TaskCreated");
    assert_eq!(heard[0]["task_id"], "t1");
    assert_eq!(heard[1]["task_subject"], "clear");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_teammate_idle_hook_keeps_a_kept_worker_working_once() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    let (command, log) = hook_once(&sb, "idle", "echo 'check the docs too' >&2; exit 2");
    user_config(
        &sb,
        &format!("[[hooks]]\nevent = \"TeammateIdle\"\ncommand = {command:?}\n"),
    );
    mock.set_responder(|body| {
        if is_worker(body) {
            let again = mentions(body, "A teammate_idle hook keeps you working");
            return tool(
                "r",
                "return_results",
                good_result(if again {
                    "docs checked"
                } else {
                    "code checked"
                }),
            );
        }
        match tool_count(body) {
            0 => tool(
                "s",
                "spawn_agent",
                json!({"role_name": "agentic_coder", "task_prompt": "check the code",
                       "keep": true, "name": "checker"}),
            ),
            1 => tool("w", "wait_for_agents", json!({})),
            _ => MockResponse::text("checked"),
        }
    });
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "check"])
        .await;
    run.assert_ok();
    let events = run.events();
    let summaries: Vec<&str> = of_type(&events, "result_returned")
        .iter()
        .filter_map(|e| e["result"]["summary"].as_str())
        .collect();
    assert_eq!(summaries, ["code checked", "docs checked"]);
    let reqs: Vec<Value> = mock.requests().into_iter().map(|r| r.body).collect();
    assert!(reqs.iter().any(|b| is_worker(b)
        && mentions(
            b,
            "A teammate_idle hook keeps you working: check the docs too"
        )));
    let heard = lines(&log);
    assert_eq!(heard.len(), 2, "it rested after the second task: {heard:?}");
    assert_eq!(heard[0]["hook_event_name"], "TeammateIdle");
    assert_eq!(heard[0]["teammate_name"], "checker");
}
