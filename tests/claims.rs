//! A worker's claims are checked against its own change (issue 48, parts 1 and 4), on the
//! real `squad exec` binary with the mock model server: in a git workspace, where the
//! worker's start is the workspace and its change is in a worktree made at its first
//! write; under `--approval ask`, where every write is refused; and a result with nothing
//! to check, which is `unchecked`, never a ✓100.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::*;
use common::*;
use serde_json::{Value, json};

/// A git workspace with `hello.txt` and `other.txt` committed.
fn repo() -> Sandbox {
    let sb = Sandbox::new();
    git(sb.ws(), &["init", "-q"]);
    sb.write("hello.txt", "hello\n");
    sb.write("other.txt", "other\n");
    git(sb.ws(), &["add", "."]);
    git(sb.ws(), &["commit", "-qm", "start"]);
    sb
}

/// `return_results` with `status` and `artifacts` as `(path, change_type)`.
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

fn edit_hello(id: &str) -> MockResponse {
    MockResponse::tool_call(
        id,
        "write_file",
        &json!({"path": "hello.txt", "content": "hello, world\n"}).to_string(),
    )
}

/// The supervisor: spawn one worker, wait, answer.
fn supervisor(body: &Value) -> MockResponse {
    match tool_count(body) {
        0 => spawn("agentic_coder", "edit hello.txt"),
        1 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
        _ => MockResponse::text("done"),
    }
}

fn verdicts(run: &Run) -> Vec<Value> {
    of_type(&run.events(), "verification")
        .into_iter()
        .cloned()
        .collect()
}

fn messages(v: &Value) -> String {
    v["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["message"].as_str().unwrap_or_default().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Issue 48's first case: in a git workspace a worker edits `hello.txt` and claims it and
/// `other.txt` modified. Its start was the workspace, its change is in its worktree, so on
/// the disk every file "differs"; against its own diff `other.txt` is no change of its.
#[tokio::test(flavor = "multi_thread")]
async fn a_claim_of_an_untouched_file_fails_in_a_git_workspace_naming_it() {
    let mock = MockServer::start().await;
    let sb = repo();
    mock.set_responder(|body: &Value| {
        if !is_worker(body) {
            return supervisor(body);
        }
        match tool_count(body) {
            0 => edit_hello("e1"),
            1 => claim(
                "r1",
                "success",
                &[("hello.txt", "modified"), ("other.txt", "modified")],
            ),
            _ => claim("r2", "success", &[("hello.txt", "modified")]),
        }
    });
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "edit hello.txt"])
        .await;
    run.assert_ok();
    let v = verdicts(&run);
    assert!(
        !of_type(&run.events(), "worktree_created").is_empty(),
        "the worker wrote in a worktree"
    );
    assert_eq!(v.len(), 2, "{v:?}");
    assert_eq!(v[0]["passed"], false, "{}", v[0]);
    let failed = messages(&v[0]);
    assert!(
        failed.contains("other.txt") && failed.contains("unchanged since you started"),
        "{failed}"
    );
    assert!(
        !failed.contains("hello.txt"),
        "its true claim stands: {failed}"
    );
    // Corrected, it claims only what it changed, and that passes; the change reaches the
    // workspace.
    assert_eq!(
        (&v[1]["passed"], &v[1]["score"]),
        (&json!(true), &json!(100))
    );
    assert_eq!(sb.read("hello.txt"), "hello, world\n");
    assert_eq!(sb.read("other.txt"), "other\n");
}

/// Issue 48's second case: under `--approval ask` in exec nobody can answer, so the
/// worker's write is refused; its claim of `modified hello.txt` is of no change at all.
#[tokio::test(flavor = "multi_thread")]
async fn a_refused_write_is_no_change_and_its_claim_fails() {
    let mock = MockServer::start().await;
    let sb = repo();
    mock.set_responder(|body: &Value| {
        if !is_worker(body) {
            return supervisor(body);
        }
        match tool_count(body) {
            0 => edit_hello("e1"),
            1 => claim("r1", "success", &[("hello.txt", "modified")]),
            // Corrected, it owns up.
            _ => claim("r2", "failure", &[]),
        }
    });
    let run = sb
        .exec(&mock, &["--json", "--approval", "ask", "edit hello.txt"])
        .await;
    let v = verdicts(&run);
    assert!(!v.is_empty(), "{}\n{}", run.stdout, run.stderr);
    assert_eq!(v[0]["passed"], false, "{}", v[0]);
    let failed = messages(&v[0]);
    assert!(
        failed.contains("hello.txt") && failed.contains("unchanged since you started"),
        "{failed}"
    );
    assert!(
        v.iter().all(|v| v["passed"] == false),
        "no verdict passes: {v:?}"
    );
    assert_eq!(sb.read("hello.txt"), "hello\n", "nothing changed on disk");
}

/// Issue 48's fifth case: a result with no change, no claim of one and no test command has
/// nothing to check: its verdict is `unchecked` (no score), exec says so, the summary
/// counts it apart, and nothing shows a ✓100.
#[tokio::test(flavor = "multi_thread")]
async fn a_result_with_nothing_to_check_is_unchecked_not_a_100() {
    let mock = MockServer::start().await;
    let sb = repo();
    mock.set_responder(|body: &Value| {
        if !is_worker(body) {
            return supervisor(body);
        }
        claim("r1", "success", &[("hello.txt", "referenced")])
    });
    let run = sb
        .exec(
            &mock,
            &["--json", "--approval", "auto", "look at hello.txt"],
        )
        .await;
    run.assert_ok();
    let v = verdicts(&run);
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0]["unchecked"], true, "{}", v[0]);
    assert!(v[0].get("score").is_none(), "no score: {}", v[0]);
    let events = run.events();
    let summary = of_type(&events, "summary");
    let totals = &summary[0]["totals"]["tasks"];
    assert_eq!(
        (&totals["unchecked"], &totals["scored"], &totals["verified"]),
        (&json!(1), &json!(0), &json!(0)),
        "{totals}"
    );
    // The human form: the verdict line and the checks line say it, no ✓ verified.
    let run = sb
        .exec(&mock, &["--approval", "auto", "look at hello.txt"])
        .await;
    run.assert_ok();
    assert!(
        run.stderr.contains("unchecked: nothing to check") && !run.stderr.contains("verified"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("1 unchecked"), "{}", run.stderr);
}
