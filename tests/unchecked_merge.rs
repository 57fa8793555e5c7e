//! Nothing merges unchecked (issue 48, part 2): a worker in its own worktree whose result
//! did not pass its checks, and that ends any other way than with a result that passed,
//! keeps its change out of the workspace, committed on its branch `squad/<id>`; its
//! supervisor is told it failed its checks, why, and where the change is; the user merges
//! it on purpose with `squad merge`. Real `squad` binary, mock server over HTTP, real git
//! repositories.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::*;
use common::*;
use serde_json::{Value, json};

/// A repository with `status.txt` committed as `fixed`, and a test command that passes
/// only while it says so: the workers below break it.
fn repo(config: &str) -> Sandbox {
    let sb = Sandbox::new();
    git(sb.ws(), &["init", "-q"]);
    sb.write("README.md", "# project\n");
    sb.write("status.txt", "fixed\n");
    git(sb.ws(), &["add", "-A"]);
    git(sb.ws(), &["commit", "-qm", "start"]);
    sb.workspace_config(&format!(
        "[tools]\ntest_command = \"cat status.txt && grep -q fixed status.txt\"\n{config}"
    ));
    sb
}

fn write(id: &str, content: &str) -> MockResponse {
    MockResponse::tool_call(
        id,
        "write_file",
        &json!({"path": "status.txt", "content": content}).to_string(),
    )
}

fn claim(id: &str) -> MockResponse {
    MockResponse::tool_call(
        id,
        "return_results",
        &json!({"result": {"status": "success", "summary": "updated status.txt",
            "artifacts": [{"file_path": "status.txt", "description": "the fix", "change_type": "modified"}],
            "known_issues": []}})
        .to_string(),
    )
}

/// The supervisor: spawn one implementer, wait, answer.
fn supervisor(body: &Value) -> MockResponse {
    match tool_count(body) {
        0 => spawn("implementer", "update status.txt"),
        1 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
        _ => MockResponse::text("done"),
    }
}

/// Everything the supervisor was sent, in one string.
fn supervisor_heard(mock: &MockServer) -> String {
    (mock.requests().into_iter())
        .filter(|r| !is_worker(&r.body))
        .map(|r| r.body.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The one worker's id, from the run's events.
fn worker_of(run: &Run) -> String {
    let events = run.events();
    let spawned = of_type(&events, "agent_spawned");
    let worker = spawned
        .iter()
        .find(|e| !e["parent_id"].is_null())
        .expect("a worker was spawned");
    worker["agent_id"].as_str().unwrap().to_string()
}

/// What branch `squad/<short>` holds in `status.txt`; `None` without the branch.
fn on_branch(sb: &Sandbox, short: &str) -> Option<String> {
    let out = git_output(sb.ws(), &["show", &format!("squad/{short}:status.txt")]);
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The change kept unmerged: the workspace as it was, the branch holding the worker's
/// files, a `failed_checks` merge report, the supervisor told why and where, and the task
/// counted as failed.
fn assert_kept(sb: &Sandbox, mock: &MockServer, run: &Run, short: &str, kept: &str) {
    assert_eq!(sb.read("status.txt"), "fixed\n", "nothing merged unchecked");
    assert_eq!(
        on_branch(sb, short).as_deref(),
        Some(kept),
        "the branch holds it"
    );
    let events = run.events();
    let reports = of_type(&events, "merge_report");
    assert!(
        reports.iter().any(|r| r["state"] == "failed_checks"),
        "{reports:?}"
    );
    assert!(of_type(&events, "merged").is_empty(), "no merge");
    let heard = supervisor_heard(mock);
    let branch = format!("squad/{short}");
    assert!(
        heard.contains("failed its checks") && heard.contains(&branch) && heard.contains("[tests]"),
        "the supervisor is told it failed, why and where: {heard}"
    );
    let tasks = &of_type(&events, "summary")[0]["totals"]["tasks"];
    assert_eq!(
        (&tasks["completed"], &tasks["failed"]),
        (&json!(0), &json!(1)),
        "{tasks}"
    );
}

/// `squad merge WORKER` merges the kept change on purpose: into the workspace, the branch
/// gone.
async fn merge_on_purpose(sb: &Sandbox, mock: &MockServer, name: &str, short: &str, kept: &str) {
    let requests = mock.requests().len();
    let merged = sb.run(Some(mock), &["merge", name]).await;
    merged.assert_ok();
    assert!(
        merged.stdout.contains("merged the change of worker")
            && merged.stdout.contains("status.txt"),
        "{}",
        merged.stdout
    );
    assert_eq!(sb.read("status.txt"), kept);
    assert_eq!(on_branch(sb, short), None, "merged: its branch is gone");
    assert_eq!(mock.requests().len(), requests, "no model was asked");
    // Once merged there is nothing left to merge: a clear error, exit 1.
    let again = sb.run(Some(mock), &["merge", name]).await;
    assert_eq!(again.code, 1, "{}", again.stderr);
    assert!(again.stderr.contains("merge:"), "{}", again.stderr);
}

/// The case: the result fails the test command, the worker gets its correction,
/// answers in words (also when asked once more for its result) and goes inactive.
#[tokio::test(flavor = "multi_thread")]
async fn a_correction_answered_in_words_keeps_the_change_on_its_branch_until_merged_on_purpose() {
    let mock = MockServer::start().await;
    let sb = repo("");
    mock.set_responder(|body| {
        if !is_worker(body) {
            return supervisor(body);
        }
        match tool_count(body) {
            0 => write("w1", "still broken\n"),
            1 => claim("r1"),
            _ => MockResponse::text("I am confident status.txt is right as it is."),
        }
    });
    let run = sb
        .exec(
            &mock,
            &["--json", "--approval", "auto", "update status.txt"],
        )
        .await;
    run.assert_ok();
    let events = run.events();
    let verdicts = of_type(&events, "verification");
    assert_eq!(verdicts.len(), 1, "one check, failed: {verdicts:?}");
    assert_eq!(verdicts[0]["passed"], false);
    let short = worker_of(&run)[..8].to_string();
    assert_kept(&sb, &mock, &run, &short, "still broken\n");
    merge_on_purpose(&sb, &mock, &short, &short, "still broken\n").await;
}

/// Out of corrections, the failed verdict goes up with the result: the change does not
/// merge, it stays on the branch.
#[tokio::test(flavor = "multi_thread")]
async fn a_result_out_of_corrections_goes_up_failed_and_its_change_stays_on_its_branch() {
    let mock = MockServer::start().await;
    let sb = repo("[verify]\nmax_corrections = 1\n");
    mock.set_responder(|body| {
        if !is_worker(body) {
            return supervisor(body);
        }
        match tool_count(body) {
            0 => write("w1", "still broken\n"),
            1 => claim("r1"),
            2 => write("w2", "broken, differently\n"),
            _ => claim("r2"),
        }
    });
    let run = sb
        .exec(
            &mock,
            &["--json", "--approval", "auto", "update status.txt"],
        )
        .await;
    run.assert_ok();
    let events = run.events();
    let passed: Vec<&Value> = (of_type(&events, "verification").iter())
        .map(|v| &v["passed"])
        .collect();
    assert_eq!(passed, [&json!(false), &json!(false)]);
    assert_eq!(of_type(&events, "result_returned").len(), 1);
    let short = worker_of(&run)[..8].to_string();
    assert_kept(&sb, &mock, &run, &short, "broken, differently\n");
    // A worker that names nothing, or nobody, is told so and what is unmerged.
    let nobody = sb.run(Some(&mock), &["merge", "nobody"]).await;
    assert_eq!(nobody.code, 1, "{}", nobody.stderr);
    assert!(
        nobody.stderr.contains("no worker `nobody`") && nobody.stderr.contains(&short),
        "{}",
        nobody.stderr
    );
    assert_eq!(sb.read("status.txt"), "fixed\n");
    // By its role, the one implementer.
    merge_on_purpose(&sb, &mock, "implementer", &short, "broken, differently\n").await;
}
