//! The test command judged against each worker's start: in a git repository with two bugs,
//! each covered by a test, two workers fixing one bug each in its own worktree are not
//! blamed for the other's (its test failed where they started), and a worker that breaks a
//! passing test is still caught, by the test's name. Real `squad exec` binary, real git,
//! python3's own unittest, mock model server over HTTP.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::*;
use common::*;
use serde_json::{Value, json};
use std::time::Duration;

/// A git repository with three small modules, two of them buggy, a unittest test of
/// each, and a test command that also notes where it ran in `runs` (outside the repo).
fn project(runs: &std::path::Path) -> Sandbox {
    let sb = Sandbox::new();
    sb.write("double.py", "def double(x):\n    return x + 2\n");
    sb.write("negate.py", "def negate(x):\n    return x\n");
    sb.write("add.py", "def add(a, b):\n    return a + b\n");
    sb.write(
        "test_app.py",
        "import unittest\nfrom add import add\nfrom double import double\nfrom negate import negate\n\n\
         class T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n\
         \x20   def test_double(self):\n        self.assertEqual(double(3), 6)\n\n\
         \x20   def test_negate(self):\n        self.assertEqual(negate(3), -3)\n",
    );
    sb.write(".gitignore", "__pycache__/\n");
    sb.workspace_config(&format!(
        "[tools]\ntest_command = \"echo \\\"$PWD\\\" >> {}; python3 -m unittest\"\n\n\
         [sandbox]\nmode = \"off\"\n",
        runs.display()
    ));
    git(sb.ws(), &["init", "-q"]);
    git(sb.ws(), &["add", "-A"]);
    git(sb.ws(), &["commit", "-q", "-m", "two bugs"]);
    sb
}

fn write(id: &str, path: &str, content: &str) -> MockResponse {
    MockResponse::tool_call(
        id,
        "write_file",
        &json!({"path": path, "content": content}).to_string(),
    )
}

fn modified(id: &str, paths: &[&str]) -> MockResponse {
    let artifacts: Vec<Value> = paths
        .iter()
        .map(|p| json!({"file_path": p, "description": "fixed", "change_type": "modified"}))
        .collect();
    MockResponse::tool_call(
        id,
        "return_results",
        &json!({"result": {"status": "success", "summary": "done", "artifacts": artifacts, "known_issues": []}})
            .to_string(),
    )
}

/// The `[squad]` corrections a request carries.
fn corrections(body: &Value) -> usize {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .filter(|m| content_text(&m["content"]).contains("[squad] Your result was checked"))
        .count()
}

/// The verdicts of the worker whose task mentions `task`.
fn verdicts_of(events: &[Value], task: &str) -> Vec<Value> {
    let id = of_type(events, "agent_spawned")
        .into_iter()
        .find(|e| e["task"].as_str().is_some_and(|t| t.contains(task)))
        .unwrap_or_else(|| panic!("no worker for {task}"))["agent_id"]
        .clone();
    of_type(events, "verification")
        .into_iter()
        .filter(|v| v["agent_id"] == id)
        .cloned()
        .collect()
}

fn text_of(findings: &Value) -> String {
    findings
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["message"].as_str().unwrap().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread")]
async fn two_workers_fixing_two_bugs_are_not_blamed_for_each_others() {
    let mock = MockServer::start().await;
    let runs_dir = tempfile::tempdir().unwrap();
    let runs = runs_dir.path().join("runs");
    let sb = project(&runs);
    mock.set_responder(|body| {
        if !is_worker(body) {
            return match tool_count(body) {
                0 => MockResponse::tool_calls(vec![
                    call(
                        "s1",
                        "spawn_agent",
                        json!({"role_name": "agentic_coder", "task_prompt": "fix double"}),
                    ),
                    call(
                        "s2",
                        "spawn_agent",
                        json!({"role_name": "agentic_coder", "task_prompt": "fix negate"}),
                    ),
                ]),
                2 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
                _ => MockResponse::text("done"),
            };
        }
        let (file, fixed) = if content_text(&body["messages"][1]["content"]).contains("fix double")
        {
            ("double.py", "def double(x):\n    return x * 2\n")
        } else {
            ("negate.py", "def negate(x):\n    return -x\n")
        };
        match tool_count(body) {
            0 => write("w", file, fixed),
            _ => modified("r", &[file]).with_delay(Duration::from_millis(300)),
        }
    });
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "fix both bugs"])
        .await;
    run.assert_ok();
    let events = run.events();
    let worker_corrections: usize = mock
        .requests()
        .iter()
        .filter(|r| is_worker(&r.body))
        .map(|r| corrections(&r.body))
        .sum();
    assert_eq!(
        worker_corrections, 0,
        "nobody is blamed for the other's bug"
    );
    for (task, mine, other) in [
        ("fix double", "test_double", "test_negate"),
        ("fix negate", "test_negate", "test_double"),
    ] {
        let verdicts = verdicts_of(&events, task);
        assert_eq!(verdicts.len(), 1, "{verdicts:?}");
        let v = &verdicts[0];
        assert_eq!(v["passed"], true, "{v}");
        let warnings = text_of(&v["warnings"]);
        assert!(
            warnings.contains(&format!("You fixed: test_app.T.{mine}.")),
            "{task}: {warnings}"
        );
        assert!(
            warnings.contains(&format!(
                "Already failing before you started (not yours): test_app.T.{other}."
            )),
            "{task}: {warnings}"
        );
    }
    // Both fixes reached the workspace, and the suite passes there.
    assert!(sb.read("double.py").contains("x * 2"));
    assert!(sb.read("negate.py").contains("-x"));
    // One run in each worker's view, one at their shared base (a clean checkout).
    let runs = std::fs::read_to_string(&runs).unwrap();
    let at_base = runs.lines().filter(|l| l.contains("/base-")).count();
    assert_eq!((runs.lines().count(), at_base), (3, 1), "{runs}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_that_breaks_a_passing_test_is_caught_by_its_name() {
    let mock = MockServer::start().await;
    let runs_dir = tempfile::tempdir().unwrap();
    let sb = project(&runs_dir.path().join("runs"));
    mock.set_responder(|body| {
        if !is_worker(body) {
            return match tool_count(body) {
                0 => spawn("agentic_coder", "fix negate"),
                1 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
                _ => MockResponse::text("done"),
            };
        }
        match tool_count(body) {
            0 => write("w1", "negate.py", "def negate(x):\n    return -x\n"),
            1 => write("w2", "add.py", "def add(a, b):\n    return a - b\n"),
            2 => modified("r1", &["negate.py", "add.py"]),
            // Not the broken file's size: Python's bytecode cache keys on size and the
            // second of the change, and both writes fall in one second.
            3 => write(
                "w3",
                "add.py",
                "def add(a, b):\n    return a + b  # put back\n",
            ),
            _ => modified("r2", &["negate.py"]),
        }
    });
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "fix negate"])
        .await;
    run.assert_ok();
    let verdicts = verdicts_of(&run.events(), "fix negate");
    assert_eq!(verdicts.len(), 2, "{verdicts:?}");
    assert_eq!(verdicts[0]["passed"], false);
    let failures = text_of(&verdicts[0]["failures"]);
    assert!(
        failures.contains(
            "you broke 1 test that did not fail before you started: test_app.T.test_add."
        ),
        "{failures}"
    );
    assert!(
        failures.contains("You fixed: test_app.T.test_negate."),
        "{failures}"
    );
    assert!(
        failures
            .contains("Already failing before you started (not yours): test_app.T.test_double."),
        "{failures}"
    );
    // Put back, the suite still fails on test_double, which is not the worker's.
    assert_eq!(verdicts[1]["passed"], true, "{}", verdicts[1]);
}
