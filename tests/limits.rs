//! The limits of `[limits]` that only config tests used to read: `max_iterations` ends a
//! turn after that many model calls, and `max_concurrent_requests` bounds the model calls
//! in flight across the whole team. Through the real `squad exec` against the mock.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::*;
use common::*;
use serde_json::json;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread")]
async fn max_iterations_ends_the_turn_after_that_many_model_calls_and_says_so() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    for i in 0..10 {
        sb.write(&format!("f{i}.txt"), "x\n");
    }
    sb.workspace_config("[limits]\nmax_iterations = 3\n");
    // Always one more read, of another file: no loop, just a turn that never ends.
    mock.set_responder(|body| {
        let n = tool_count(body);
        MockResponse::tool_call(
            &format!("r{n}"),
            "read_file",
            &json!({ "path": format!("f{n}.txt") }).to_string(),
        )
    });
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "read everything"])
        .await;
    assert_eq!(mock.requests().len(), 3, "three model calls, no fourth");
    let events = run.events();
    let errors = of_type(&events, "error")
        .iter()
        .map(|e| e["message"].as_str().unwrap().to_string())
        .collect::<Vec<_>>();
    assert!(
        errors
            .iter()
            .any(|m| m.contains("stopped after 3 model calls in one turn (max_iterations)")),
        "{errors:?}"
    );
    let finished = of_type(&events, "turn_finished");
    assert_eq!(finished.last().unwrap()["end"], "max_iterations");
}

/// The most model requests in flight at once while the persona fans out to six workers,
/// each answering after 300 ms, with this `[limits]` config and `/props` slots.
async fn most_in_flight(config: &str, slots: Option<u32>) -> usize {
    let mock = MockServer::start().await;
    mock.set_slots(slots);
    let sb = Sandbox::new();
    sb.workspace_config(&format!("[limits]\nmax_live_agents = 10\n{config}"));
    let workers = 6;
    mock.set_responder(move |body| {
        if is_worker(body) {
            return MockResponse::tool_call(
                "r",
                "return_results",
                &json!({"result": {"status": "success", "summary": "ok",
                    "artifacts": [], "known_issues": []}})
                .to_string(),
            )
            .with_delay(Duration::from_millis(300));
        }
        match tool_count(body) {
            0 => MockResponse::tool_calls(
                (0..workers)
                    .map(|i| {
                        call(
                            &format!("s{i}"),
                            "spawn_agent",
                            json!({"role_name": "agentic_coder", "task_prompt": format!("task {i}")}),
                        )
                    })
                    .collect(),
            ),
            n if n == workers => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            _ => MockResponse::text("all done"),
        }
    });
    sb.exec(&mock, &["--json", "--approval", "auto", "fan out"])
        .await
        .assert_ok();
    let reqs = mock.requests();
    let worker_reqs: Vec<_> = reqs.iter().filter(|r| is_worker(&r.body)).collect();
    assert_eq!(worker_reqs.len(), workers);
    // At each arrival, those that had not finished.
    reqs.iter()
        .map(|r| {
            reqs.iter()
                .filter(|o| {
                    o.received_at <= r.received_at
                        && o.finished_at.is_none_or(|f| f > r.received_at)
                })
                .count()
        })
        .max()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn max_concurrent_requests_bounds_the_model_calls_in_flight_across_the_team() {
    // Configured, it wins over what the server says.
    assert_eq!(
        most_in_flight("max_concurrent_requests = 2\n", Some(4)).await,
        2,
        "never more than max_concurrent_requests, and it is used"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_local_servers_slots_bound_the_requests_in_flight() {
    assert_eq!(
        most_in_flight("", Some(3)).await,
        3,
        "llama.cpp's total_slots"
    );
}

/// A team of `workers` on a local server that does not say its slots and serves `serves`
/// requests at once, queueing the rest: each worker reads a file twice, then returns;
/// every worker reply takes 0.4 s of the server's time. A request that waits more than
/// 2 s for its answer times out, and is not tried again.
async fn team_on_a_server_serving(serves: usize, workers: usize) -> (MockServer, Run, String) {
    let mock = MockServer::start().await;
    mock.set_slots(None);
    mock.serve_at_once(serves);
    let sb = Sandbox::new();
    sb.write("a.txt", "a\n");
    sb.workspace_config(
        "[provider]\nrequest_timeout_s = 2\nmax_retries = 0\n[limits]\nmax_live_agents = 12\n",
    );
    mock.set_responder(move |body| {
        if is_worker(body) {
            let reply = match tool_count(body) {
                n @ 0..2 => MockResponse::tool_call(&format!("r{n}"), "read_file", r#"{"path":"a.txt"}"#),
                _ => MockResponse::tool_call("w", "return_results", &good_result("ok").to_string()),
            };
            return reply.with_delay(Duration::from_millis(400));
        }
        match tool_count(body) {
            0 => MockResponse::tool_calls(
                (0..workers)
                    .map(|i| {
                        call(
                            &format!("s{i}"),
                            "spawn_agent",
                            json!({"role_name": "agentic_coder", "task_prompt": format!("task {i}")}),
                        )
                    })
                    .collect(),
            ),
            n if n == workers => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            _ => MockResponse::text("all done"),
        }
    });
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "fan out"])
        .await;
    (mock, run, limit_log(&sb))
}

/// What squad's log says of the limit, for a failure's message.
fn limit_log(sb: &Sandbox) -> String {
    let logs = std::fs::read_dir(sb.data_dir().join("logs"))
        .into_iter()
        .flatten();
    logs.filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
        .flat_map(|t| {
            t.lines()
                .filter(|l| l.contains("model requests in flight"))
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every worker returned, and no request failed or was tried again (a timeout would be).
fn no_request_timed_out(mock: &MockServer, run: &Run, workers: usize) {
    run.assert_ok();
    let events = run.events();
    assert_eq!(
        of_type(&events, "retrying").len(),
        0,
        "{:?}",
        of_type(&events, "retrying")
    );
    assert_eq!(
        of_type(&events, "result_returned").len(),
        workers,
        "{}",
        run.stdout
    );
    let worker_calls = mock
        .requests()
        .iter()
        .filter(|r| is_worker(&r.body))
        .count();
    assert_eq!(worker_calls, workers * 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_serves_two_at_once_gets_two_and_no_request_times_out() {
    let (mock, run, log) = team_on_a_server_serving(2, 6).await;
    no_request_timed_out(&mock, &run, 6);
    let (served, _) = mock.most_at_once();
    assert_eq!(served, 2, "the server's two places were both used\n{log}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_serves_eight_at_once_gets_eight() {
    // More workers than it serves, so there is always more to send.
    let (mock, run, log) = team_on_a_server_serving(8, 10).await;
    no_request_timed_out(&mock, &run, 10);
    let (served, _) = mock.most_at_once();
    assert_eq!(served, 8, "squad grew to what the server serves\n{log}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_serves_one_at_a_time_has_few_waiting_once_squad_has_seen_its_queue() {
    let (mock, run, log) = team_on_a_server_serving(1, 4).await;
    no_request_timed_out(&mock, &run, 4);
    let reqs = mock.requests();
    let waited = |r: &RecordedRequest| r.served_at.duration_since(r.received_at);
    // squad starts with several at once, so the first fan-out waits in the server's
    // queue; once the first reply that waited there has come back, squad soon sends no
    // request that waits for more than one other to be served (0.4 s). With the 4 it
    // starts with kept, each would wait for three.
    let seen = reqs
        .iter()
        .find(|r| waited(r) > Duration::from_millis(100))
        .expect("the first fan-out waits in the server's queue")
        .finished_at
        .unwrap();
    let late_waits = reqs
        .iter()
        .filter(|r| r.received_at > seen && waited(r) > Duration::from_millis(600))
        .count();
    assert!(
        late_waits <= 2,
        "{late_waits} requests kept waiting in the server's queue: {:?}\n{log}",
        reqs.iter().map(waited).collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_persona_turn_whose_calls_bring_nothing_new_ends_after_max_turn_calls_and_exec_says_why()
{
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    for i in 0..10 {
        sb.write(&format!("f{i}.txt"), "x\n");
    }
    sb.workspace_config("[limits]\nmax_turn_calls = 4\n");
    // A model that goes round the same four files without changing anything.
    mock.set_responder(|body| {
        let n = tool_count(body);
        MockResponse::tool_call(
            &format!("r{n}"),
            "read_file",
            &json!({ "path": format!("f{}.txt", n % 4) }).to_string(),
        )
    });
    let run = sb
        .command(Some(&mock))
        .args(["exec", "--approval", "auto", "look around"])
        .output()
        .await
        .map(Run::from)
        .unwrap();
    // Four new reads, then four that brought nothing new; no ninth call.
    assert_eq!(mock.requests().len(), 8, "stderr: {}", run.stderr);
    assert_eq!(run.code, 1, "stderr: {}", run.stderr);
    assert!(
        run.stderr.contains("no progress: the last 4 model calls")
            && run.stderr.contains("limits.max_turn_calls"),
        "{}",
        run.stderr
    );
}

/// Reading one new file after another is progress, however long it goes on: only
/// `max_iterations`, the hard cap, ends it.
#[tokio::test(flavor = "multi_thread")]
async fn new_reads_are_progress_and_only_the_hard_cap_ends_them() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    for i in 0..30 {
        sb.write(&format!("f{i}.txt"), &format!("{i}\n"));
    }
    sb.workspace_config("[limits]\nmax_turn_calls = 4\nmax_iterations = 20\n");
    mock.set_responder(|body| {
        let n = tool_count(body);
        MockResponse::tool_call(
            &format!("r{n}"),
            "read_file",
            &json!({ "path": format!("f{n}.txt") }).to_string(),
        )
    });
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "read everything"])
        .await;
    assert_eq!(mock.requests().len(), 20, "stopped by max_iterations only");
    let events = run.events();
    let finished = of_type(&events, "turn_finished");
    assert_eq!(finished.last().unwrap()["end"], "max_iterations");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_change_to_a_file_is_progress_and_resets_the_count() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config("[limits]\nmax_turn_calls = 3\nmax_iterations = 8\n");
    // Every other call writes something new.
    mock.set_responder(|body| {
        let n = tool_count(body);
        if n.is_multiple_of(2) {
            MockResponse::tool_call(
                &format!("w{n}"),
                "write_file",
                &json!({ "path": "log.txt", "content": format!("step {n}\n") }).to_string(),
            )
        } else {
            MockResponse::tool_call("l", "list_files", &json!({ "path": "." }).to_string())
        }
    });
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "keep a log"])
        .await;
    assert_eq!(mock.requests().len(), 8, "stopped by max_iterations only");
    let events = run.events();
    let finished = of_type(&events, "turn_finished");
    assert_eq!(finished.last().unwrap()["end"], "max_iterations");
}
