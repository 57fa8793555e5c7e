//! Plan first, then write (issue 54 part 4): a `plan_first` worker's first request offers
//! only its reading tools and `submit_plan`; its supervisor rejects a plan with a reason
//! the worker reads, approves the next, and the worker's writing tools are offered from
//! then on; a plan awaiting approval when squad is killed still awaits after
//! `--continue`. Real `squad exec` binary, mock server over HTTP.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::*;
use common::*;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
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

/// The worker: a first plan, a second once told why the first was rejected, then the
/// write it planned (once it is offered `write_file`: a resumed worker may find its plan
/// approved while it was away) and its result.
fn worker(body: &Value) -> MockResponse {
    let last = last_result(body);
    let wrote = tool_messages(body)
        .iter()
        .any(|(_, c)| c.contains("created 'out.txt'"));
    if offers(body, "write_file") && !wrote {
        return MockResponse::tool_call(
            "w",
            "write_file",
            &json!({"path": "out.txt", "content": "planned\n"}).to_string(),
        );
    }
    if !wrote && last.contains("Plan rejected") {
        return submit("PLAN-B: write out.txt only");
    }
    if !wrote {
        return submit("PLAN-A: rewrite everything");
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

fn review(worker: &str, approve: bool, reason: &str) -> MockResponse {
    MockResponse::tool_call(
        "v",
        "review_plan",
        &json!({"agent_id": worker, "approve": approve, "reason": reason}).to_string(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rejected_plan_comes_back_with_its_reason_and_an_approved_one_brings_the_writing_tools() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    roles(&sb);
    mock.set_responder(|body| {
        if is_worker(body) {
            return worker(body);
        }
        let last = last_said(body);
        let id = spawned_ids(body).first().cloned().unwrap_or_default();
        if tool_count(body) == 0 {
            return spawn("planner", "PLAN TASK: make out.txt");
        }
        if last.contains("Plan from your worker") && last.contains("PLAN-A") {
            return review(&id, false, "REASON-X: too broad, only out.txt");
        }
        if last.contains("Plan from your worker") && last.contains("PLAN-B") {
            return review(&id, true, "");
        }
        if last.contains("PLANNED-AND-DONE") {
            return MockResponse::text("all done");
        }
        MockResponse::text("waiting for the plan")
    });
    let run = sb
        .exec(
            &mock,
            &["--json", "--approval", "auto", "--role", "lead", "go"],
        )
        .await;
    run.assert_ok();

    let reqs: Vec<Value> = mock.requests().into_iter().map(|r| r.body).collect();
    let workers: Vec<&Value> = reqs.iter().filter(|b| is_worker(b)).collect();
    // First request: reading tools and submit_plan, nothing that writes.
    let first = workers[0];
    assert!(offers(first, "submit_plan") && offers(first, "read_file"));
    for writes in ["write_file", "edit_file", "run_command", "spawn_agent"] {
        assert!(!offers(first, writes), "{writes}: {:?}", tool_names(first));
    }
    // The rejection's reason reached the worker, still without its writing tools.
    let told = workers
        .iter()
        .find(|b| last_result(b).contains("Plan rejected"))
        .expect("a request after the rejection");
    assert!(
        last_result(told).contains("REASON-X: too broad"),
        "{}",
        last_result(told)
    );
    assert!(!offers(told, "write_file"));
    // Approved: its writing tools are offered from the next request on.
    let approved = workers
        .iter()
        .find(|b| last_result(b).contains("Plan approved"))
        .expect("a request after the approval");
    assert!(offers(approved, "write_file") && !offers(approved, "submit_plan"));
    assert_eq!(sb.read("out.txt"), "planned\n");
    // The supervisor, which may spawn a plan_first role, had review_plan.
    let lead = reqs.iter().find(|b| !is_worker(b)).unwrap();
    assert!(offers(lead, "review_plan") && !offers(lead, "submit_plan"));

    // Each submission and decision is an event of the worker's, with who decided.
    let events = run.events();
    let submitted = of_type(&events, "plan_submitted");
    let decided = of_type(&events, "plan_decided");
    assert_eq!((submitted.len(), decided.len()), (2, 2));
    let worker_id = &submitted[0]["agent_id"];
    assert!(decided.iter().all(|d| &d["agent_id"] == worker_id));
    assert_eq!(decided[0]["approved"], false);
    assert_eq!(decided[0]["reason"], "REASON-X: too broad, only out.txt");
    assert_eq!(decided[1]["approved"], true);
    assert_eq!(decided[1]["plan_id"], submitted[1]["plan_id"]);
    let root = &of_type(&events, "session_started")[0]["agent_id"];
    assert_eq!(&decided[1]["by"], root);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plan_awaiting_approval_when_squad_is_killed_still_awaits_after_continue() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    roles(&sb);
    let second_run = Arc::new(AtomicBool::new(false));
    let resumed = second_run.clone();
    // The worker's requests since the resume: the supervisor decides only after the
    // worker asked once, so its first request shows the plan still awaiting.
    let asked_again = Arc::new(AtomicUsize::new(0));
    mock.set_responder(move |body| {
        if is_worker(body) {
            if resumed.load(Ordering::SeqCst) {
                asked_again.fetch_add(1, Ordering::SeqCst);
            }
            return worker(body);
        }
        let last = last_said(body);
        if tool_count(body) == 0 {
            return spawn("planner", "PLAN TASK: make out.txt");
        }
        let reviewed = tool_messages(body)
            .iter()
            .any(|(_, c)| c.contains("approved:"));
        if last.contains("Plan from your worker") && !reviewed {
            if !resumed.load(Ordering::SeqCst) {
                // Thinking it over when squad dies.
                return MockResponse::text("hmm").with_delay(Duration::from_secs(30));
            }
            if asked_again.load(Ordering::SeqCst) == 0 {
                // Its resubmission tells this supervisor again.
                return MockResponse::text("waiting");
            }
            let id = spawned_ids(body).first().cloned().unwrap_or_default();
            return review(&id, true, "");
        }
        if last.contains("PLANNED-AND-DONE") {
            return MockResponse::text("all done");
        }
        MockResponse::text("waiting")
    });
    let mut cmd = sb.command(Some(&mock));
    cmd.args(["exec", "--approval", "auto", "--role", "lead", "go"]);
    let mut child = cmd.spawn().unwrap();
    let sessions = sb.data_dir().join("sessions");
    let log = || {
        std::fs::read_dir(&sessions)
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| e.ok())
            .and_then(|e| std::fs::read_to_string(e.path()).ok())
            .unwrap_or_default()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !log().contains("\"plan_submitted\"") {
        assert!(std::time::Instant::now() < deadline, "no plan submitted");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Let the supervisor's request with the plan go out, then kill.
    tokio::time::sleep(Duration::from_millis(500)).await;
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    let before: Vec<Value> = log()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let submitted = of_type(&before, "plan_submitted");
    assert_eq!(submitted.len(), 1);
    assert!(of_type(&before, "plan_decided").is_empty());
    let plan_id = submitted[0]["plan_id"].clone();
    let asked_before = mock.requests().len();

    second_run.store(true, Ordering::SeqCst);
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "--continue"])
        .await;
    run.assert_ok();
    let after: Vec<Value> = mock.requests()[asked_before..]
        .iter()
        .map(|r| r.body.clone())
        .filter(is_worker)
        .collect();
    // Still awaiting after the restart: the worker's first request has no writing tool.
    assert!(!after.is_empty(), "the worker was continued");
    assert!(!offers(&after[0], "write_file") && offers(&after[0], "submit_plan"));
    // The plan decided is the one submitted before the kill, and then the worker writes.
    let decided = of_type(&run.events(), "plan_decided")
        .into_iter()
        .cloned()
        .collect::<Vec<_>>();
    assert_eq!(decided.len(), 1, "{decided:?}");
    assert_eq!(decided[0]["plan_id"], plan_id);
    assert!(after.iter().any(|b| offers(b, "write_file")));
    assert_eq!(sb.read("out.txt"), "planned\n");
}

/// Issue 54 part 4, the persona option: a persona whose role says `coordinate_only = true`
/// starts without its writing tools (its workers keep theirs), a handoff to a persona
/// with the option applies it and one to a persona without gives the writing tools back;
/// each change is a `coordinate_only` event of the persona.
#[tokio::test(flavor = "multi_thread")]
async fn a_coordinate_only_persona_starts_without_writing_tools_and_a_handoff_brings_its_own() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write(
        ".squad/roles/lead.toml",
        "name = \"lead\"\nsystem_prompt = \"LEAD-PROMPT: coordinate.\"\n\
         enabled_agents = [\"implementer\"]\nhandoffs = [\"front\"]\ncoordinate_only = true\n",
    );
    sb.write(
        ".squad/roles/front.toml",
        "name = \"front\"\nsystem_prompt = \"FRONT-PROMPT: talk to the user.\"\n\
         handoffs = [\"lead\"]\n",
    );
    let handoff = |to: &str| {
        MockResponse::tool_call(
            "h",
            "handoff_to",
            &json!({"target_agent": to, "reason": "its turn"}).to_string(),
        )
    };
    mock.push_all([
        handoff("front"),
        handoff("lead"),
        MockResponse::text("LEAD-AGAIN: done"),
    ]);
    let run = sb
        .exec(
            &mock,
            &["--json", "--approval", "auto", "--role", "lead", "go"],
        )
        .await;
    run.assert_ok();
    let reqs: Vec<Value> = mock.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(reqs.len(), 3);
    // The lead starts coordinating only: reading and team tools, spawning included.
    assert!(system(&reqs[0]).contains("LEAD-PROMPT"));
    assert!(offers(&reqs[0], "read_file") && offers(&reqs[0], "spawn_agent"));
    for writes in ["write_file", "edit_file", "run_command"] {
        assert!(!offers(&reqs[0], writes), "{:?}", tool_names(&reqs[0]));
    }
    // Handed to a persona without the option: its writing tools.
    assert!(system(&reqs[1]).contains("FRONT-PROMPT"));
    assert!(offers(&reqs[1], "write_file"), "{:?}", tool_names(&reqs[1]));
    // Back to the lead: coordinating only again.
    assert!(system(&reqs[2]).contains("LEAD-PROMPT"));
    assert!(!offers(&reqs[2], "write_file"));
    let events = run.events();
    let modes: Vec<&Value> = of_type(&events, "coordinate_only")
        .into_iter()
        .map(|e| &e["on"])
        .collect();
    assert_eq!(modes, [&json!(true), &json!(false), &json!(true)]);
}
