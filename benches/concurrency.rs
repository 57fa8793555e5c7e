//! `cargo bench --bench concurrency`: a team's throughput on servers that serve N requests
//! at once and queue the rest, with squad's adaptive limit against every fixed one.
//!
//! The server is the mock in this process with no `/props` (as vLLM, Ollama, LM Studio or a
//! LiteLLM proxy): squad cannot read its slots and adapts from what it sees. It serves N
//! requests at once (N = 1, 2, 8) and queues the rest first come, first served; each
//! request takes [`SERVICE`] of the server's time once served. The team: one supervisor
//! spawns [`WORKERS`] workers, each reads a file twice and returns, then the supervisor
//! waits and answers. The real release binary runs it (`squad exec --json --approval auto`).
//!
//! Each configuration runs [`RUNS`] times: squad's own limit (nothing configured) and
//! `limits.max_concurrent_requests` fixed at 1, 2, 4, 8 and 16. A request that waits longer
//! than the configured timeout (`request_timeout_s`, [`TIMEOUT_S`]) fails and is not tried
//! again, so a limit that queues too much shows as failed runs, not only as slower ones.
//!
//! Target (issue 49): for each N, squad's own limit within 20 % of the best fixed limit's
//! median wall time, and no run of it with a request that timed out.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/common/mock_server.rs"]
mod mock_server;

use mock_server::{MockResponse, MockServer, MockToolCall};
use serde_json::{Value, json};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The server's time per request once it serves it.
const SERVICE: Duration = Duration::from_millis(300);
const WORKERS: usize = 12;
const RUNS: usize = 3;
const TIMEOUT_S: u64 = 4;
const WORKER_MARK: &str = "You are a worker (role";
const FINAL_TEXT: &str = "All workers reported.";

/// `None`: squad's own (adaptive) limit.
const LIMITS: [Option<usize>; 6] = [None, Some(1), Some(2), Some(4), Some(8), Some(16)];

struct Outcome {
    wall: Duration,
    ok: bool,
    /// Requests that ended in an error event (a timeout is one) or were tried again.
    failed_requests: usize,
    most_served: usize,
    most_queued: usize,
}

fn main() {
    let squad = std::env::var("SQUAD_BENCH_BIN")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_squad").to_string());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    println!("squad binary: {squad}");
    println!(
        "team: 1 supervisor + {WORKERS} workers, 3 requests each; server time {} ms per request; \
         request timeout {TIMEOUT_S} s, no retries; {RUNS} runs per configuration (median wall)",
        SERVICE.as_millis()
    );
    let mut all_met = true;
    for serves in [1usize, 2, 8] {
        // The floor: every request served back to back in the server's N places.
        let requests = WORKERS * 3 + 3;
        println!("\n== a server serving {serves} at once (no /props); {requests} requests",);
        println!(
            "| squad's limit | median wall s | runs ok | requests failed | most served at once | most queued |"
        );
        println!("|---|---|---|---|---|---|");
        let mut adaptive: Option<(Duration, bool)> = None;
        let mut best_fixed: Option<(usize, Duration)> = None;
        for limit in LIMITS {
            let outcomes: Vec<Outcome> =
                (0..RUNS).map(|_| run(&rt, &squad, serves, limit)).collect();
            let mut walls: Vec<Duration> = outcomes.iter().map(|o| o.wall).collect();
            walls.sort();
            let median = walls[walls.len() / 2];
            let all_ok = outcomes.iter().all(|o| o.ok);
            let failed: usize = outcomes.iter().map(|o| o.failed_requests).sum();
            let served = outcomes.iter().map(|o| o.most_served).max().unwrap_or(0);
            let queued = outcomes.iter().map(|o| o.most_queued).max().unwrap_or(0);
            let name = limit.map_or("own (adaptive)".to_string(), |l| format!("fixed {l}"));
            println!(
                "| {name} | {:.2} | {} of {RUNS} | {failed} | {served} | {queued} |",
                median.as_secs_f64(),
                outcomes.iter().filter(|o| o.ok).count()
            );
            match limit {
                None => adaptive = Some((median, all_ok && failed == 0)),
                Some(l) if all_ok && failed == 0 => {
                    if best_fixed.is_none_or(|(_, b)| median < b) {
                        best_fixed = Some((l, median));
                    }
                }
                Some(_) => {}
            }
        }
        let (Some((own, own_ok)), Some((best, best_wall))) = (adaptive, best_fixed) else {
            println!("no fixed limit ran clean: no comparison");
            all_met = false;
            continue;
        };
        let ratio = own.as_secs_f64() / best_wall.as_secs_f64();
        let met = own_ok && ratio <= 1.2;
        all_met &= met;
        println!(
            "own limit {:.2} s vs best fixed ({best}) {:.2} s: {:+.0} %, {}; target ≤ +20 % and no failed request: {}",
            own.as_secs_f64(),
            best_wall.as_secs_f64(),
            (ratio - 1.0) * 100.0,
            if own_ok {
                "no failed request"
            } else {
                "FAILED REQUESTS"
            },
            if met { "met" } else { "MISSED" }
        );
    }
    println!("\nall targets {}", if all_met { "met" } else { "NOT met" });
}

fn run(rt: &tokio::runtime::Runtime, squad: &str, serves: usize, limit: Option<usize>) -> Outcome {
    let mock = rt.block_on(MockServer::start());
    mock.set_slots(None);
    mock.serve_at_once(serves);
    mock.set_responder(respond);
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "a\n").unwrap();
    std::fs::create_dir_all(ws.path().join(".squad")).unwrap();
    let fixed = limit.map_or(String::new(), |l| {
        format!("max_concurrent_requests = {l}\n")
    });
    std::fs::write(
        ws.path().join(".squad/config.toml"),
        format!(
            "[provider]\nrequest_timeout_s = {TIMEOUT_S}\nmax_retries = 0\n\
             [limits]\nmax_live_agents = {}\n{fixed}",
            WORKERS + 4
        ),
    )
    .unwrap();
    let started = Instant::now();
    let out = Command::new(squad)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("SQUAD_CONFIG_DIR", home.path().join("config"))
        .env("SQUAD_DATA_DIR", home.path().join("data"))
        .env("OPENAI_BASE_URL", mock.base_url())
        .current_dir(ws.path())
        .stdin(Stdio::null())
        .args(["exec", "--json", "--approval", "auto", "fan out"])
        .output()
        .unwrap();
    let wall = started.elapsed();
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let of = |ty: &str| events.iter().filter(|e| e["type"] == ty).count();
    let returned = of("result_returned");
    let failed_requests = of("retrying") + of("error");
    let (most_served, most_queued) = mock.most_at_once();
    Outcome {
        wall,
        ok: out.status.success() && returned == WORKERS,
        failed_requests,
        most_served,
        most_queued,
    }
}

/// Supervisor: spawn every worker, wait, answer. Worker: two reads, then its result.
fn respond(body: &Value) -> MockResponse {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let system = messages
        .iter()
        .find(|m| m["role"] == "system")
        .and_then(|m| m["content"].as_str())
        .unwrap_or("");
    let calls = messages.iter().filter(|m| m["role"] == "tool").count();
    let reply = if system.contains(WORKER_MARK) {
        match calls {
            n @ 0..2 => {
                MockResponse::tool_call(&format!("r{n}"), "read_file", r#"{"path":"a.txt"}"#)
            }
            _ => {
                let args = json!({"result": {
                    "status": "success", "summary": "read a.txt twice",
                    "artifacts": [], "known_issues": []
                }});
                MockResponse::tool_call("ret", "return_results", &args.to_string())
            }
        }
    } else if calls == 0 {
        MockResponse::tool_calls(
            (0..WORKERS)
                .map(|i| {
                    let args =
                        json!({"role_name": "agentic_coder", "task_prompt": format!("task {i}")});
                    MockToolCall::new(format!("s{i}"), "spawn_agent", args.to_string())
                })
                .collect(),
        )
    } else if calls == WORKERS {
        MockResponse::tool_call("w", "wait_for_agents", "{}")
    } else {
        MockResponse::text(FINAL_TEXT)
    };
    reply.with_delay(SERVICE)
}
