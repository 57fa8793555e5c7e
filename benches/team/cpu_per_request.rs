//! squad's own CPU per model request (issue 28, part 8), a section of the team bench.
//!
//! squad runs as its own process (through the launcher, so `wait4` gives its user + system
//! CPU alone); the mock is this process, a one-thread server that answers with SSE bodies
//! rendered before the run and tells requests apart by searching the body's bytes, so it
//! parses no JSON and is never the bottleneck.
//!
//! A supervisor spawns `WORKERS` workers. Each worker's first `rounds` requests are
//! answered with one `read_file` call (a different small file each round, so the loop
//! guard sees no repeat) and the next with `return_results`; every answer is a ~300-byte
//! SSE body with one tool call. Two runs that differ only in `rounds` (0 and `ROUNDS`)
//! cost the same apart from the extra requests, so
//! `(cpu(ROUNDS) - cpu(0)) / (WORKERS * ROUNDS)` is the CPU of one model request: build
//! and send it, read and parse the answer, run the call, record the result, events and
//! session log. Start-up, spawning and the supervisor cancel out.

use crate::support::{self, ms};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

const WORKERS: usize = 100;
/// Extra requests per worker in the measuring run.
const ROUNDS: usize = 30;
/// Pairs of runs; the median pair is reported. The machine is shared: single pairs move
/// by a third.
const PAIRS: usize = 5;
/// A model's latency: requests arrive spread out, as they do from a real server.
const LATENCY: Duration = Duration::from_millis(50);
const TARGET_MS: f64 = 0.3;
/// The figure before the work of issue 28 part 8 (commit 7e47bc7, measured in turn with
/// this build through `SQUAD_BENCH_BEFORE`), printed when that build is not measured.
const BEFORE: &str = "7e47bc7: median 0.334 ms and 0.303 ms per request in two runs";
const WORKER_MARK: &[u8] = b"You are a worker (role";
const FINAL_TEXT: &str = "All workers reported success.";

/// The answers, rendered once. Indexes into `reads` are rounds.
struct Answers {
    spawn: Bytes,
    wait: Bytes,
    text: Bytes,
    reads: Vec<Bytes>,
    ret: Bytes,
}

/// What the mock counted.
#[derive(Default)]
struct Counts {
    worker: AtomicUsize,
    supervisor: AtomicUsize,
}

struct Mock {
    answers: Answers,
    rounds: usize,
    workers: usize,
    counts: Counts,
}

/// Runs the section. `wrap`: a profiler squad runs under; then one measuring run only.
/// `SQUAD_BENCH_BEFORE=path` measures that build too, pair by pair in turn with this one,
/// so both see the same load.
pub fn run(squad: &str, wrap: &[String]) {
    println!(
        "\n== squad's CPU per model request: {WORKERS} workers x {ROUNDS} read_file rounds, \
         mock latency {}, ~300-byte SSE answers with one tool call each",
        ms(LATENCY)
    );
    let sample = Answers::new(WORKERS);
    println!(
        "   answer sizes: read_file {} bytes, return_results {} bytes",
        sample.reads[0].len(),
        sample.ret.len()
    );
    if !wrap.is_empty() {
        let r = one_run(squad, wrap, ROUNDS);
        println!(
            "   under the wrapper: squad CPU {} for {} requests ({} per request over the run)",
            ms(r.squad),
            r.requests,
            ms(r.squad / r.requests as u32)
        );
        return;
    }
    let before = std::env::var("SQUAD_BENCH_BEFORE").ok();
    let mut builds = vec![("this build", squad, Vec::new())];
    if let Some(path) = before.as_deref() {
        builds.insert(0, ("before (SQUAD_BENCH_BEFORE)", path, Vec::new()));
    }
    for pair in 1..=PAIRS {
        for (name, bin, figures) in &mut builds {
            figures.push(one_pair(bin, pair, name));
        }
    }
    let mut medians = Vec::new();
    for (name, _, figures) in &mut builds {
        figures.sort_by(f64::total_cmp);
        let median = figures[PAIRS / 2];
        println!(
            "   squad CPU per model request, {name}: median {median:.3} ms (min {:.3}, max {:.3})",
            figures[0],
            figures[PAIRS - 1]
        );
        medians.push(median);
    }
    if before.is_none() {
        println!("   before, as recorded: {BEFORE}");
    }
    if let Some(after) = medians.last() {
        support::verdict(
            "squad CPU per model request (user + system)",
            *after,
            TARGET_MS,
            "ms",
        );
    }
}

/// A run without rounds and one with: the CPU of one request, in ms.
fn one_pair(squad: &str, pair: usize, name: &str) -> f64 {
    let base = one_run(squad, &[], 0);
    let full = one_run(squad, &[], ROUNDS);
    let extra = full.squad.saturating_sub(base.squad);
    let each = extra.as_secs_f64() * 1e3 / (WORKERS * ROUNDS) as f64;
    println!(
        "   pair {pair}, {name}: squad CPU {} ({} requests) and {} ({} requests) -> {each:.3} ms per request; \
         over the whole run {}; the mock's CPU {}",
        ms(base.squad),
        base.requests,
        ms(full.squad),
        full.requests,
        ms(full.squad / full.requests as u32),
        ms(full.mock)
    );
    each
}

struct Figures {
    squad: Duration,
    mock: Duration,
    requests: usize,
}

/// One `squad exec` against a fresh mock where each worker makes `rounds` read_file
/// requests before returning.
fn one_run(squad: &str, wrap: &[String], rounds: usize) -> Figures {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join(".squad")).unwrap();
    std::fs::write(
        ws.path().join(".squad/config.toml"),
        format!(
            "[limits]\nmax_concurrent_requests = {WORKERS}\nmax_live_agents = {}\nmax_depth = 2\n",
            WORKERS + 100
        ),
    )
    .unwrap();
    for k in 0..ROUNDS {
        std::fs::write(ws.path().join(format!("f{k}.txt")), format!("line {k}\n")).unwrap();
    }
    let mock = Arc::new(Mock {
        answers: Answers::new(WORKERS),
        rounds,
        workers: WORKERS,
        counts: Counts::default(),
    });
    let (base_url, stop, server) = serve(mock.clone());

    let cpu_before = support::self_cpu();
    let out = home.path().join("stdout");
    let err = home.path().join("stderr");
    let mut launch = match wrap.split_first() {
        Some((program, args)) => {
            let mut l = support::Measured::new(program, home.path());
            l.cmd.args(args).arg(squad);
            l
        }
        None => support::Measured::new(squad, home.path()),
    };
    launch
        .sandboxed(home.path(), ws.path(), &base_url, &out, &err)
        .args([
            "exec",
            "--approval",
            "auto",
            "Split the work into tasks and run them in parallel.",
        ]);
    let reaped = launch.spawn().wait();
    let _ = stop.send(());
    server.join().unwrap();
    let mock_cpu = support::self_cpu() - cpu_before;
    let stderr = std::fs::read_to_string(&err).unwrap_or_default();
    assert_eq!(reaped.code, Some(0), "squad exec failed: {stderr}");
    let stdout = std::fs::read_to_string(&out).unwrap();
    assert_eq!(stdout.trim(), FINAL_TEXT);
    let worker = mock.counts.worker.load(Ordering::Relaxed);
    let supervisor = mock.counts.supervisor.load(Ordering::Relaxed);
    assert_eq!(worker, WORKERS * (rounds + 1), "worker requests");
    assert_eq!(supervisor, 3, "supervisor: spawn, wait, answer");
    Figures {
        squad: reaped.user + reaped.sys,
        mock: mock_cpu,
        requests: worker + supervisor,
    }
}

/// Serves `mock` on 127.0.0.1 from a thread of its own with a one-thread runtime until
/// the sender is used. Returns the base URL.
fn serve(
    mock: Arc<Mock>,
) -> (
    String,
    tokio::sync::oneshot::Sender<()>,
    std::thread::JoinHandle<()>,
) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind(("127.0.0.1", 0)))
        .unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let app = Router::new()
        .route(
            "/v1/chat/completions",
            post(move |body: Bytes| answer(mock.clone(), body)),
        )
        .layer(axum::extract::DefaultBodyLimit::disable());
    let thread = std::thread::spawn(move || {
        rt.block_on(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = rx.await;
                })
                .await;
        });
    });
    (url, tx, thread)
}

async fn answer(mock: Arc<Mock>, body: Bytes) -> Response {
    let results = count(&body, b"\"tool_call_id\"");
    let bytes = if find(&body, WORKER_MARK) {
        mock.counts.worker.fetch_add(1, Ordering::Relaxed);
        match mock.answers.reads.get(results) {
            Some(read) if results < mock.rounds => read.clone(),
            _ => mock.answers.ret.clone(),
        }
    } else {
        mock.counts.supervisor.fetch_add(1, Ordering::Relaxed);
        match results {
            0 => mock.answers.spawn.clone(),
            n if n == mock.workers => mock.answers.wait.clone(),
            _ => mock.answers.text.clone(),
        }
    };
    tokio::time::sleep(LATENCY).await;
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/event-stream")],
        Body::from(bytes),
    )
        .into_response()
}

fn find(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn count(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).filter(|w| *w == needle).count()
}

impl Answers {
    fn new(workers: usize) -> Self {
        let spawns: Vec<(String, String, String)> = (0..workers)
            .map(|i| {
                let args = serde_json::json!({
                    "role_name": "agentic_coder",
                    "task_prompt": format!("Task {i}: update module_{i}.rs and report what changed.")
                });
                (format!("spawn_{i}"), "spawn_agent".to_string(), args.to_string())
            })
            .collect();
        let reads = (0..ROUNDS)
            .map(|k| {
                let args = serde_json::json!({"path": format!("f{k}.txt")}).to_string();
                sse(&[(format!("call_r{k}"), "read_file".into(), args)], "")
            })
            .collect();
        let result = serde_json::json!({"result": {
            "status": "success", "summary": "done", "artifacts": [], "known_issues": []
        }});
        Self {
            spawn: sse(&spawns, ""),
            wait: sse(
                &[("wait".into(), "wait_for_agents".into(), "{}".into())],
                "",
            ),
            text: sse(&[], FINAL_TEXT),
            reads,
            ret: sse(
                &[("ret".into(), "return_results".into(), result.to_string())],
                "",
            ),
        }
    }
}

/// A chat-completions SSE body: one chunk per call (id, name and whole arguments), or
/// the text, then the finish reason with usage, then `[DONE]`. Only the fields squad
/// reads, as llama.cpp-like servers send them.
fn sse(calls: &[(String, String, String)], text: &str) -> Bytes {
    let mut out = String::new();
    let mut chunk = |delta: serde_json::Value| {
        let c = serde_json::json!({"choices": [{"index": 0, "delta": delta}]});
        out.push_str(&format!("data: {c}\n\n"));
    };
    if calls.is_empty() {
        chunk(serde_json::json!({"role": "assistant", "content": text}));
    }
    for (index, (id, name, args)) in calls.iter().enumerate() {
        chunk(serde_json::json!({"tool_calls": [{
            "index": index, "id": id, "type": "function",
            "function": {"name": name, "arguments": args},
        }]}));
    }
    let finish = if calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    let end = serde_json::json!({
        "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
        "usage": {"prompt_tokens": 2000, "completion_tokens": 30, "total_tokens": 2030}
    });
    out.push_str(&format!("data: {end}\n\ndata: [DONE]\n\n"));
    Bytes::from(out)
}
