//! A session as a team: supervisors, workers, results, limits and handoffs, through the
//! real `squad exec` binary against the mock server. Each test asserts on what the server
//! received (which history each agent sent) and on the events.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::*;
use common::*;
use serde_json::{Value, json};
use std::time::Duration;

fn root_id(events: &[Value]) -> String {
    events[0]["agent_id"].as_str().unwrap().to_string()
}

/// The fan-out on a server that does not say how many it serves (vLLM, Ollama, LM Studio,
/// a LiteLLM proxy: no llama.cpp `/props`): three workers whose replies take 0.5 s start
/// together, not one after the other.
#[tokio::test(flavor = "multi_thread")]
async fn three_workers_start_together_on_a_server_that_does_not_say_its_slots() {
    let mock = MockServer::start().await;
    mock.set_slots(None);
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_worker(body) {
            return MockResponse::tool_call("r", "return_results", &good_result("done").to_string())
                .with_delay(Duration::from_millis(500));
        }
        match tool_count(body) {
            0 => MockResponse::tool_calls(
                (1..=3)
                    .map(|i| call(&format!("s{i}"), "spawn_agent", json!({"role_name": "agentic_coder", "task_prompt": format!("task {i}")})))
                    .collect(),
            ),
            3 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            _ => MockResponse::text("all done"),
        }
    });
    sb.exec(
        &mock,
        &["--json", "--approval", "auto", "split the work in three"],
    )
    .await
    .assert_ok();
    let reqs = mock.requests();
    let starts: Vec<_> = reqs
        .iter()
        .filter(|r| is_worker(&r.body))
        .map(|r| r.received_at)
        .collect();
    assert_eq!(starts.len(), 3);
    let spread = starts
        .iter()
        .max()
        .unwrap()
        .duration_since(*starts.iter().min().unwrap());
    assert!(
        spread < Duration::from_millis(200),
        "the three workers' requests arrived {spread:?} apart"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn three_workers_run_in_parallel_with_isolated_histories() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_worker(body) {
            let task = transcript(body)[1].1.clone();
            return MockResponse::tool_call("r", "return_results", &good_result(&format!("did: {task}")).to_string())
                .with_delay(Duration::from_millis(400));
        }
        match tool_count(body) {
            0 => MockResponse::tool_calls(vec![
                call("s1", "spawn_agent", json!({"role_name": "agentic_coder", "task_prompt": "task one", "context": "ctx-1"})),
                call("s2", "spawn_agent", json!({"role_name": "test_writer", "task_prompt": "task two", "context": "ctx-2"})),
                call("s3", "spawn_agent", json!({"role_name": "code_reviewer", "task_prompt": "task three"})),
            ]),
            3 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            _ => MockResponse::text("all done"),
        }
    });
    let run = sb
        .exec(
            &mock,
            &["--json", "SUPERVISOR-SECRET plan: split the work in three"],
        )
        .await;
    run.assert_ok();
    let events = run.events();
    let root = root_id(&events);

    let reqs = mock.requests();
    let workers: Vec<_> = reqs.iter().filter(|r| is_worker(&r.body)).collect();
    assert_eq!(workers.len(), 3);
    // Overlap, from the server's own clock: every worker request arrived before any finished.
    let first_done = workers
        .iter()
        .map(|r| r.finished_at.unwrap())
        .min()
        .unwrap();
    assert!(
        workers.iter().all(|r| r.received_at < first_done),
        "workers did not run in parallel"
    );
    for w in &workers {
        let text = w.body.to_string();
        assert!(
            !text.contains("SUPERVISOR-SECRET"),
            "a worker saw the supervisor's transcript"
        );
        let t = transcript(&w.body);
        assert_eq!(
            t.len(),
            2,
            "worker history is its system prompt and its task only: {t:?}"
        );
    }
    let with_ctx = workers
        .iter()
        .find(|w| transcript(&w.body)[1].1.starts_with("task one"))
        .unwrap();
    assert!(transcript(&with_ctx.body)[1].1.contains("ctx-1"));

    // The supervisor got every result.
    let last = &reqs.last().unwrap().body;
    let results = &tool_messages(last)[3].1;
    for t in ["did: task one", "did: task two", "did: task three"] {
        assert!(results.contains(t), "{t} missing from {results}");
    }
    // The tree can be drawn from events alone.
    let spawned = of_type(&events, "agent_spawned");
    assert_eq!(spawned.len(), 4);
    assert!(spawned[1..].iter().all(|e| e["parent_id"] == root.as_str()));
    assert_eq!(of_type(&events, "result_returned").len(), 3);
    for w in &spawned[1..] {
        let statuses: Vec<&str> = of_type(&events, "agent_status")
            .iter()
            .filter(|e| e["agent_id"] == w["agent_id"])
            .map(|e| e["status"].as_str().unwrap())
            .collect();
        assert_eq!(
            statuses,
            ["running", "completed"],
            "a front end sees each worker run"
        );
    }
    let summary = of_type(&events, "summary");
    assert_eq!(summary[0]["agents"].as_array().unwrap().len(), 4);
    assert_eq!(summary[0]["totals"]["agents"], 4);
    assert_eq!(run.stdout.lines().count(), events.len());
}

#[tokio::test(flavor = "multi_thread")]
async fn supervisor_is_woken_with_results_and_inactive_workers_report_their_last_message() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_worker(body) {
            return MockResponse::text("worker says hi").with_delay(Duration::from_millis(300));
        }
        let t = transcript(body);
        if t.iter().any(|(_, c)| c.contains("Results of your workers")) {
            return MockResponse::text("final: got it");
        }
        match tool_count(body) {
            0 => spawn("agentic_coder", "say hi"),
            _ => MockResponse::text("started a worker; I will report when it is done"),
        }
    });
    let run = sb.exec(&mock, &["delegate"]).await;
    run.assert_ok();
    assert_eq!(run.stdout.trim(), "final: got it");
    let last = mock.requests().last().unwrap().body.clone();
    let notice = transcript(&last).last().unwrap().1.clone();
    assert!(
        notice.contains("inactive") && notice.contains("worker says hi"),
        "{notice}"
    );
    assert!(
        run.stderr.contains("agentic_coder"),
        "summary table: {}",
        run.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn limits_and_permissions_are_errors_the_model_sees() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config("[limits]\nmax_depth = 1\nmax_live_agents = 2\n");
    mock.set_responder(|body| {
        if is_worker(body) {
            return match tool_count(body) {
                0 => spawn("test_writer", "go deeper"),
                _ => MockResponse::tool_call(
                    "r",
                    "return_results",
                    &good_result("shallow").to_string(),
                ),
            };
        }
        match tool_count(body) {
            0 => MockResponse::tool_calls(vec![
                call(
                    "s1",
                    "spawn_agent",
                    json!({"role_name": "copilot", "task_prompt": "clone me"}),
                ),
                call(
                    "s2",
                    "spawn_agent",
                    json!({"role_name": "agentic_coder", "task_prompt": "work"}),
                ),
                call(
                    "s3",
                    "spawn_agent",
                    json!({"role_name": "code_reviewer", "task_prompt": "review"}),
                ),
            ]),
            3 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            _ => MockResponse::text("done"),
        }
    });
    sb.exec(&mock, &["try the limits"]).await.assert_ok();
    let reqs = mock.requests();
    let sup = reqs
        .iter()
        .find(|r| !is_worker(&r.body) && tool_count(&r.body) == 3)
        .unwrap();
    let results = tool_messages(&sup.body);
    assert!(
        results[0].1.contains("may not spawn `copilot`"),
        "{}",
        results[0].1
    );
    assert!(results[1].1.contains("agent_id"), "{}", results[1].1);
    assert!(
        results[2].1.contains("live agent limit"),
        "{}",
        results[2].1
    );
    let worker_second = reqs
        .iter()
        .find(|r| is_worker(&r.body) && tool_count(&r.body) == 1)
        .unwrap();
    let depth = &tool_messages(&worker_second.body)[0].1;
    assert!(depth.contains("depth limit"), "{depth}");
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_results_name_the_field_and_a_corrected_call_succeeds() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_worker(body) {
            return match tool_count(body) {
                0 => MockResponse::tool_call(
                    "bad",
                    "return_results",
                    &json!({"result": {"status": "done", "summary": "x", "artifacts": [], "known_issues": []}}).to_string(),
                ),
                1 => MockResponse::tool_call(
                    "bad2",
                    "return_results",
                    &json!({"result": {"status": "success", "summary": "x", "known_issues": [],
                        "artifacts": [{"file_path": "a", "description": "b", "change_type": "changed"}]}})
                    .to_string(),
                ),
                _ => MockResponse::tool_call(
                    "ok",
                    "return_results",
                    &json!({"result": {"status": "success", "summary": "fixed it", "known_issues": [],
                        "artifacts": [{"file_path": "src/lib.rs", "description": "touched", "change_type": "modified"}]}})
                    .to_string(),
                ),
            };
        }
        match tool_count(body) {
            0 => spawn("agentic_coder", "do it"),
            1 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            _ => MockResponse::text("done"),
        }
    });
    // This test is about the result's shape; the claim about src/lib.rs is not checked.
    sb.workspace_config("[verify]\nenabled = false\n");
    let run = sb.exec(&mock, &["--json", "go"]).await;
    run.assert_ok();
    let reqs = mock.requests();
    let worker_last = reqs
        .iter()
        .filter(|r| is_worker(&r.body))
        .max_by_key(|r| tool_count(&r.body))
        .unwrap();
    let errs = tool_messages(&worker_last.body);
    assert!(errs[0].1.contains("result.status"), "{}", errs[0].1);
    assert!(
        errs[1].1.contains("result.artifacts[0].change_type"),
        "{}",
        errs[1].1
    );
    let events = run.events();
    let returned = of_type(&events, "result_returned");
    assert_eq!(returned.len(), 1);
    assert_eq!(returned[0]["result"]["summary"], "fixed it");
    assert_eq!(
        returned[0]["result"]["artifacts"][0]["change_type"],
        "modified"
    );
    let statuses: Vec<&str> = of_type(&events, "agent_status")
        .iter()
        .filter(|e| e["agent_id"] == returned[0]["agent_id"])
        .map(|e| e["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses.last(), Some(&"completed"));
}

#[tokio::test(flavor = "multi_thread")]
async fn speak_to_agent_follows_up_with_a_completed_worker() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_worker(body) {
            let last_user = transcript(body)
                .into_iter()
                .rev()
                .find(|(r, _)| r == "user")
                .unwrap()
                .1;
            return if last_user.contains("also add docs") {
                MockResponse::text("docs added too")
            } else {
                MockResponse::tool_call(
                    "r",
                    "return_results",
                    &good_result("code done").to_string(),
                )
            };
        }
        match tool_count(body) {
            0 => spawn("agentic_coder", "write code"),
            1 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            2 => {
                let id = spawned_ids(body)[0].clone();
                MockResponse::tool_call(
                    "f",
                    "speak_to_agent",
                    &json!({"agent_id": id, "message": "also add docs"}).to_string(),
                )
            }
            _ => MockResponse::text("all good"),
        }
    });
    sb.exec(&mock, &["build it"]).await.assert_ok();
    let reqs = mock.requests();
    let sup_last = &reqs.last().unwrap().body;
    let reply = &tool_messages(sup_last)[2].1;
    assert!(reply.contains("docs added too"), "{reply}");
    // The worker's follow-up carried on its own history.
    let follow_up = reqs
        .iter()
        .find(|r| {
            is_worker(&r.body)
                && transcript(&r.body)
                    .iter()
                    .any(|(_, c)| c.contains("also add docs"))
        })
        .unwrap();
    let t = transcript(&follow_up.body);
    assert!(t[1].1.starts_with("write code"));
    // Read as a follow-up to a result it returned.
    let last = &t.last().unwrap().1;
    assert!(
        last.contains("also add docs") && last.contains("after you returned your result"),
        "{last}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn despawn_cancels_a_worker_whose_model_call_is_in_flight() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_worker(body) {
            return MockResponse::text("too late").with_delay(Duration::from_secs(30));
        }
        match tool_count(body) {
            0 => spawn("agentic_coder", "slow work"),
            1 => {
                let id = spawned_ids(body)[0].clone();
                MockResponse::tool_call("d", "despawn_agent", &json!({"agent_id": id}).to_string())
                    .with_delay(Duration::from_millis(300))
            }
            _ => MockResponse::text("stopped it"),
        }
    });
    let started = std::time::Instant::now();
    let run = sb.exec(&mock, &["--json", "start and stop"]).await;
    run.assert_ok();
    assert!(started.elapsed() < Duration::from_secs(20));
    let events = run.events();
    let worker_id = of_type(&events, "agent_spawned")[1]["agent_id"].clone();
    assert!(
        of_type(&events, "despawned")
            .iter()
            .any(|e| e["agent_id"] == worker_id)
    );
    assert!(
        of_type(&events, "agent_status")
            .iter()
            .any(|e| e["agent_id"] == worker_id && e["status"] == "cancelled")
    );
    let worker_req = mock
        .requests()
        .into_iter()
        .find(|r| is_worker(&r.body))
        .unwrap();
    let finished = worker_req.finished_at.expect("the client hung up");
    assert!(finished.duration_since(worker_req.received_at) < Duration::from_secs(20));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_worker_is_marked_failed_and_its_parent_told_why() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config("[provider]\nmax_retries = 1\nretry_base_ms = 10\n");
    mock.set_responder(|body| {
        if is_worker(body) {
            return MockResponse::error(500, "worker backend on fire");
        }
        match tool_count(body) {
            0 => spawn("agentic_coder", "doomed"),
            1 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            _ => MockResponse::text("the worker failed; I will do it myself"),
        }
    });
    let run = sb.exec(&mock, &["--json", "try"]).await;
    run.assert_ok();
    let report = &tool_messages(&mock.requests().last().unwrap().body)[1].1;
    assert!(
        report.contains("\"failed\"") && report.contains("worker backend on fire"),
        "{report}"
    );
    let events = run.events();
    assert!(
        of_type(&events, "agent_status")
            .iter()
            .any(|e| e["status"] == "failed"
                && e["reason"].as_str().unwrap_or("").contains("on fire"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_feature_chain_hands_off_through_four_personas_and_survives_resume() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config("[tools]\ntest_command = \"sh tests/login_test.sh\"\n");
    let handoff = |id: &str, to: &str, why: &str| {
        MockResponse::tool_call(
            id,
            "handoff_to",
            &json!({"target_agent": to, "reason": why, "context": format!("ctx for {to}")})
                .to_string(),
        )
    };
    mock.push_all([
        handoff("h1", "architect", "design the login API"),
        MockResponse::tool_call(
            "a1",
            "write_file",
            &json!({"path": "docs/LOGIN_DESIGN.md", "content": "# Login\nPOST /login\n"}).to_string(),
        ),
        handoff("h2", "implementer", "implement docs/LOGIN_DESIGN.md"),
        MockResponse::tool_call(
            "i1",
            "write_file",
            &json!({"path": "src/login.sh", "content": "echo logged-in\n"}).to_string(),
        ),
        handoff("h3", "tester", "verify the login"),
        MockResponse::tool_call(
            "t1",
            "write_file",
            &json!({"path": "tests/login_test.sh", "content": "[ \"$(sh src/login.sh)\" = logged-in ]\n"}).to_string(),
        ),
        MockResponse::tool_call("t2", "run_tests", "{}"),
        handoff("h4", "copilot", "task complete, tests passed"),
        MockResponse::text("The login API is designed, implemented and tested."),
    ]);
    let run = sb
        .exec(
            &mock,
            &[
                "--approval",
                "auto",
                "--json",
                "Create a new User Login API",
            ],
        )
        .await;
    run.assert_ok();
    let events = run.events();
    let hops: Vec<(String, String)> = items_of_kind(&events, "handoff")
        .iter()
        .map(|e| {
            (
                e["from"].as_str().unwrap().into(),
                e["to"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        hops,
        [
            ("copilot", "architect"),
            ("architect", "implementer"),
            ("implementer", "tester"),
            ("tester", "copilot")
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    assert!(sb.ws().join("docs/LOGIN_DESIGN.md").exists());
    assert_eq!(sb.read("src/login.sh"), "echo logged-in\n");

    let reqs = mock.requests();
    let prompts: Vec<String> = reqs.iter().map(|r| system(&r.body)).collect();
    let who = |p: &str| {
        [
            "You are copilot",
            "You are the architect",
            "You are the implementer",
            "You are the tester",
        ]
        .iter()
        .position(|m| p.contains(m))
        .unwrap_or(99)
    };
    let order: Vec<usize> = prompts.iter().map(|p| who(p)).collect();
    assert_eq!(order, [0, 1, 1, 2, 2, 3, 3, 3, 0]);
    // The architect gets the architect's tools: no commands.
    let tools: Vec<&str> = reqs[1].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"write_file") && !tools.contains(&"run_command"),
        "{tools:?}"
    );
    // The transcript goes on across personas, with the handoff recorded in it.
    let t = transcript(&reqs[1].body);
    assert_eq!(t[1].1, "Create a new User Login API");
    assert!(
        t.iter()
            .any(|(_, c)| c.contains("Handoff: copilot → architect")
                && c.contains("You are now the architect; the copilot's part is done")),
        "{t:?}"
    );
    let tests = tool_messages(&reqs[7].body);
    assert!(
        tests.last().unwrap().1.contains("tests passed"),
        "{:?}",
        tests.last()
    );

    // A session left with the architect resumes with the architect.
    let sb2 = Sandbox::new();
    mock.push_all([
        handoff("h5", "architect", "needs a design"),
        MockResponse::text("Here is the design."),
    ]);
    sb2.exec(&mock, &["design something"]).await.assert_ok();
    mock.push(MockResponse::text("Refined."));
    let run = sb2
        .exec(&mock, &["--json", "--resume", "last", "refine it"])
        .await;
    run.assert_ok();
    let started = &run.events()[0];
    assert_eq!(started["role"], "architect");
    assert_eq!(started["resumed"], true);
    let last = mock.requests().last().unwrap().body.clone();
    assert!(system(&last).contains("You are the architect"));
    let t = transcript(&last);
    assert_eq!(t.last().unwrap().1, "refine it");
    assert!(t.iter().any(|(_, c)| c == "Here is the design."));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_never_gets_more_than_its_parent() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write(
        ".squad/roles/lead.toml",
        "name = \"lead\"\nsystem_prompt = \"You lead, reading only.\"\ntools = [\"read_file\", \"list_files\"]\nenabled_agents = [\"agentic_coder\"]\n",
    );
    mock.set_responder(|body| {
        if is_worker(body) {
            return match tool_count(body) {
                0 => MockResponse::tool_call(
                    "w",
                    "write_file",
                    &json!({"path": "x.txt", "content": "x"}).to_string(),
                ),
                _ => MockResponse::tool_call(
                    "r",
                    "return_results",
                    &good_result("tried").to_string(),
                ),
            };
        }
        match tool_count(body) {
            0 => spawn("agentic_coder", "write x.txt"),
            1 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            _ => MockResponse::text("done"),
        }
    });
    sb.exec(&mock, &["--role", "lead", "--approval", "auto", "go"])
        .await
        .assert_ok();
    let reqs = mock.requests();
    let worker = reqs
        .iter()
        .find(|r| is_worker(&r.body) && tool_count(&r.body) == 1)
        .unwrap();
    let tools: Vec<&str> = worker.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"read_file") && tools.contains(&"return_results"),
        "{tools:?}"
    );
    for wider in ["write_file", "edit_file", "run_command", "run_tests"] {
        assert!(!tools.contains(&wider), "worker got {wider}: {tools:?}");
    }
    let refused = &tool_messages(&worker.body)[0].1;
    assert!(refused.contains("not available"), "{refused}");
    assert!(!sb.ws().join("x.txt").exists());

    // The policy is inherited: under read-only the worker's writes are denied.
    let sb = Sandbox::new();
    sb.exec(&mock, &["--approval", "read-only", "go"])
        .await
        .assert_ok();
    let reqs = mock.requests();
    let worker = reqs
        .iter()
        .rev()
        .find(|r| is_worker(&r.body) && tool_count(&r.body) == 1)
        .unwrap();
    let denied = &tool_messages(&worker.body)[0].1;
    assert!(denied.contains("read-only"), "{denied}");
    assert!(!sb.ws().join("x.txt").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn wait_for_agents_times_out_with_who_is_still_running() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_worker(body) {
            return MockResponse::tool_call(
                "r",
                "return_results",
                &good_result("slow but done").to_string(),
            )
            .with_delay(Duration::from_millis(1500));
        }
        match tool_count(body) {
            0 => spawn("agentic_coder", "take your time"),
            1 => MockResponse::tool_call("w1", "wait_for_agents", r#"{"timeout_s": 0.2}"#),
            2 => {
                let id = spawned_ids(body)[0].clone();
                MockResponse::tool_call(
                    "w2",
                    "wait_for_agents",
                    &json!({"agent_ids": [id]}).to_string(),
                )
            }
            _ => MockResponse::text("done"),
        }
    });
    sb.exec(&mock, &["go"]).await.assert_ok();
    let last = mock.requests().last().unwrap().body.clone();
    let results = tool_messages(&last);
    let first: Value = serde_json::from_str(results[1].1.split_once('\n').unwrap().1).unwrap();
    assert_eq!(first["results"].as_array().unwrap().len(), 0, "{first}");
    assert_eq!(first["still_running"][0]["role"], "agentic_coder");
    let second: Value = serde_json::from_str(results[2].1.split_once('\n').unwrap().1).unwrap();
    assert_eq!(second["results"][0]["result"]["summary"], "slow but done");
    assert_eq!(second["still_running"].as_array().unwrap().len(), 0);
    // Once nothing runs, the header says so, as a fact: what to do next is the model's
    // (a capable supervisor checks the work first).
    let header = |i: usize| results[i].1.lines().next().unwrap().to_string();
    assert!(
        header(1).contains("others are still running"),
        "{}",
        header(1)
    );
    assert!(header(2).contains("none is running now"), "{}", header(2));
    assert!(!header(2).contains("final answer"), "{}", header(2));
}

/// The agent tools answer in seed 000's field names: `role_name` and `created_at` from
/// spawn, `completed_at` on a result, and get_agents' listing with `include_completed`.
#[tokio::test(flavor = "multi_thread")]
async fn get_agents_lists_workers_with_counts_in_the_seeds_fields() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_worker(body) {
            return MockResponse::tool_call("r", "return_results", &good_result("ok").to_string());
        }
        match tool_count(body) {
            0 => MockResponse::tool_calls(vec![
                call(
                    "s1",
                    "spawn_agent",
                    json!({"role_name": "agentic_coder", "task_prompt": "one"}),
                ),
                call(
                    "s2",
                    "spawn_agent",
                    json!({"role_name": "code_reviewer", "task_prompt": "two"}),
                ),
            ]),
            2 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            3 => MockResponse::tool_call("g", "get_agents", "{}"),
            4 => MockResponse::tool_call("g2", "get_agents", r#"{"include_completed": false}"#),
            _ => MockResponse::text("done"),
        }
    });
    sb.exec(&mock, &["go"]).await.assert_ok();
    let last = mock.requests().last().unwrap().body.clone();
    let outputs = tool_messages(&last);
    let parse = |i: usize| -> Value {
        serde_json::from_str(&outputs[i].1).unwrap_or_else(|e| panic!("{e}: {}", outputs[i].1))
    };
    let spawned = parse(0);
    assert_eq!(spawned["role_name"], "agentic_coder");
    let created = spawned["created_at"].as_str().expect("created_at");
    chrono::DateTime::parse_from_rfc3339(created).expect("an RFC 3339 time");

    let wait_text = &outputs[2].1;
    let waited: Value = serde_json::from_str(&wait_text[wait_text.find('{').unwrap()..]).unwrap();
    let result = &waited["results"][0]["result"];
    let completed = result["completed_at"].as_str().expect("completed_at");
    assert!(
        chrono::DateTime::parse_from_rfc3339(completed).unwrap()
            >= chrono::DateTime::parse_from_rfc3339(created).unwrap(),
        "{waited}"
    );

    let listing = parse(3);
    assert_eq!(listing["total_count"], 2);
    assert_eq!(listing["completed_count"], 2);
    assert_eq!(listing["include_completed"], true);
    let agents = listing["agents"].as_array().unwrap();
    let roles: Vec<&str> = agents
        .iter()
        .map(|a| a["role_name"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["agentic_coder", "code_reviewer"]);
    assert_eq!(agents[0]["task_prompt"], "one");
    assert_eq!(agents[0]["status"], "completed");
    assert_eq!(agents[0]["created_at"], created);
    assert!(
        agents[0]["parent_id"]
            .as_str()
            .is_some_and(|p| !p.is_empty())
    );
    assert!(agents.iter().all(|a| a["has_result"] == true));

    let only_live = parse(4);
    assert_eq!(only_live["total_count"], 0, "{only_live}");
    assert_eq!(only_live["include_completed"], false);
}

#[tokio::test(flavor = "multi_thread")]
async fn results_that_arrive_during_the_supervisors_turn_are_delivered_after_it() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_worker(body) {
            return MockResponse::tool_call(
                "r",
                "return_results",
                &good_result("quick work").to_string(),
            );
        }
        if transcript(body)
            .iter()
            .any(|(_, c)| c.contains("Results of your workers"))
        {
            return MockResponse::text("final: the worker reported quick work");
        }
        match tool_count(body) {
            0 => spawn("agentic_coder", "be quick"),
            // The worker finishes while this (slow) answer is being produced.
            _ => MockResponse::text("I'll wait for it").with_delay(Duration::from_millis(500)),
        }
    });
    let run = sb.exec(&mock, &["delegate"]).await;
    run.assert_ok();
    assert_eq!(run.stdout.trim(), "final: the worker reported quick work");
}

#[tokio::test(flavor = "multi_thread")]
async fn two_handoffs_in_one_response_hand_the_session_to_the_first() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.push_all([
        MockResponse::tool_calls(vec![
            call(
                "h1",
                "handoff_to",
                json!({"target_agent": "architect", "reason": "design", "context": "c"}),
            ),
            call(
                "h2",
                "handoff_to",
                json!({"target_agent": "tester", "reason": "test", "context": "c"}),
            ),
        ]),
        MockResponse::text("Architect speaking."),
    ]);
    let run = sb.exec(&mock, &["--json", "go"]).await;
    run.assert_ok();
    let events = run.events();
    let hops = items_of_kind(&events, "handoff");
    assert_eq!(hops.len(), 1);
    assert_eq!(hops[0]["to"], "architect");
    let reqs = mock.requests();
    let results = tool_messages(&reqs[1].body);
    assert!(results[0].1.contains("architect"), "{}", results[0].1);
    assert!(
        results[1].1.contains("only one handoff"),
        "{}",
        results[1].1
    );
    assert!(system(&reqs[1].body).contains("You are the architect"));
}
