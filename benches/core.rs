//! `cargo bench --bench core`: what one agent costs on its own.
//!
//! a. Squad's own time per agent-loop iteration (model call over HTTP, tool call, history
//!    append, events, session-log write), in-process through the public runtime API
//!    against the mock server, which answers at once. The mock records when each request
//!    arrived and when its response ended; the gap from one response's end to the next
//!    request's arrival is squad's time (plus the HTTP client's and hyper's on both ends).
//! b. `squad --version` start-up: the release binary, spawned and waited for.
//! c. Peak RSS of a real `squad exec --approval auto` run with 20 tool-call turns.
//! d. Session-log bytes per 1,000 streamed tokens: one answer streamed as 1,000 deltas,
//!    against the same answer in one delta.
//!
//! SQUAD_BENCH_BIN=path measures another build (e.g. an older commit) in b-d.
//! Targets: < 1 ms per iteration, < 10 ms start-up, < 20 MB peak.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/common/mock_server.rs"]
mod mock_server;
mod support;

use mock_server::{MockResponse, MockServer, RecordedRequest};
use squad::config::Config;
use squad::model::{ClientSettings, ModelClient, OpenAiClient};
use squad::protocol::{ApprovalPolicy, EventKind, HistoryItem, Op, TurnEnd};
use squad::roles::load_roles_from;
use squad::runtime::{SessionOptions, start_session};
use squad::session::SessionStore;
use squad::tools::{ToolRegistry, coding_tools};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{Stats, ms, verdict};

/// Iterations per session: enough to reach "turn 200" with a margin.
const ITERATIONS: usize = 250;
/// Sessions measured (after one warm-up session).
const SESSIONS: usize = 4;
const SMALL_FILE: &str = "fn main() {\n    println!(\"hello from a small file\");\n}\n\n// A few lines, like a small source file the model asked to see.\n";

fn main() {
    support::launcher_main_if_asked();
    let bin = std::env::var("SQUAD_BENCH_BIN").ok();
    let squad = bin.as_deref().unwrap_or(env!("CARGO_BIN_EXE_squad"));
    println!("squad binary: {squad}");
    // The mock gets a runtime (and a thread) of its own, as a real server would be
    // another process: squad's runtime is not busy running the mock.
    let mock_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("mock")
        .enable_all()
        .build()
        .unwrap();
    loop_iteration(&mock_rt);
    startup(squad);
    let mock = mock_rt.block_on(MockServer::start());
    exec_peak_memory(squad, &mock);
    log_per_token(squad, &mock);
}

// ---------------------------------------------------------------------------------------
// a. Per-iteration time inside squad

fn loop_iteration(mock_rt: &tokio::runtime::Runtime) {
    println!(
        "\n== a. squad's own time per agent-loop iteration (in-process, mock answers at once)"
    );
    println!(
        "   {SESSIONS} sessions x {ITERATIONS} iterations (read_file tool call each), after 1 warm-up session"
    );
    // Same runtime shape as the binary: multi-threaded, one worker per core.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut per_session: Vec<Vec<Sample>> = Vec::new();
    for s in 0..=SESSIONS {
        // A fresh mock per session: its records (every request body) are dropped after.
        let mock = mock_rt.block_on(MockServer::start());
        let samples = rt.block_on(one_session(&mock, ITERATIONS));
        if s > 0 {
            per_session.push(samples);
        }
    }

    let buckets: [(&str, std::ops::Range<usize>); 5] = [
        ("iterations 1-20 (short history)", 0..20),
        ("iterations 45-55", 44..55),
        ("iterations 95-105", 94..105),
        ("iterations 190-210 (turn ~200)", 189..210),
        ("iterations 240-249", 239..249),
    ];
    println!(
        "   {:<34} {:>4} {:>11} {:>11} {:>11} {:>12} {:>13} {:>12}",
        "", "n", "median", "p95", "max", "mock median", "history items", "request KB"
    );
    let mut short = None;
    let mut long = None;
    for (name, range) in buckets {
        let picked: Vec<&Sample> = per_session
            .iter()
            .flat_map(|s| s[range.clone()].iter())
            .collect();
        let own: Vec<Duration> = picked.iter().map(|s| s.own).collect();
        let mock_t: Vec<Duration> = picked.iter().map(|s| s.mock).collect();
        let kb = picked.iter().map(|s| s.body_bytes).sum::<usize>() as f64
            / picked.len() as f64
            / 1024.0;
        let st = Stats::of(&own).unwrap();
        let mt = Stats::of(&mock_t).unwrap();
        println!(
            "   {:<34} {:>4} {:>11} {:>11} {:>11} {:>12} {:>13} {:>12.1}",
            name,
            st.n,
            ms(st.median),
            ms(st.p95),
            ms(st.max),
            ms(mt.median),
            format!("~{}", 2 * (range.start + 1) + 1),
            kb
        );
        if range.start == 0 {
            short = Some(st);
        } else if range.start == 189 {
            long = Some(st);
        }
    }
    println!("   where the time goes (medians, ms): short history | turn ~200");
    for (k, phase) in PHASES.iter().enumerate() {
        let median = |range: std::ops::Range<usize>| {
            let v: Vec<Duration> = per_session
                .iter()
                .flat_map(|s| s[range.clone()].iter().map(|x| x.phases[k]))
                .collect();
            Stats::of(&v).unwrap().median.as_secs_f64() * 1e3
        };
        println!(
            "     {phase:<76} {:>6.3} | {:>6.3}",
            median(0..20),
            median(189..210)
        );
    }
    let all: Vec<Duration> = per_session.iter().flatten().map(|s| s.own).collect();
    let all = Stats::of(&all).unwrap();
    println!(
        "   all {} iterations: median {}, p95 {}",
        all.n,
        ms(all.median),
        ms(all.p95)
    );
    let (short, long) = (short.unwrap(), long.unwrap());
    verdict(
        "median, short history",
        short.median.as_secs_f64() * 1e3,
        1.0,
        "ms",
    );
    verdict(
        "p95, short history",
        short.p95.as_secs_f64() * 1e3,
        1.0,
        "ms",
    );
    verdict(
        "median, turn ~200",
        long.median.as_secs_f64() * 1e3,
        1.0,
        "ms",
    );
    verdict("p95, turn ~200", long.p95.as_secs_f64() * 1e3, 1.0, "ms");
}

/// One iteration as the mock saw it.
struct Sample {
    /// From the end of response i to the arrival of request i+1: squad's own time.
    own: Duration,
    /// From the arrival of request i+1 to the end of its response: the mock's time.
    mock: Duration,
    /// Size of request i+1's JSON body (it grows with the history).
    body_bytes: usize,
    /// `own` split at the moments this front end received the events of the iteration:
    /// response end -> assistant item, -> tool call end, -> tool result item, -> next
    /// request at the mock. Event delivery adds its own delay to the first three, and
    /// takes it back from the following phase.
    phases: [Duration; 4],
}

const PHASES: [&str; 4] = [
    "end of response -> assistant item event (stream end, parse, history, log)",
    "-> tool_call_end event (read_file)",
    "-> tool result item event (history, log)",
    "-> next request at the mock (build request, serialize, HTTP)",
];

async fn one_session(mock: &MockServer, iterations: usize) -> Vec<Sample> {
    let ws = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("small.rs"), SMALL_FILE).unwrap();
    let first = mock.requests().len();
    for i in 0..iterations {
        mock.push(MockResponse::tool_call(
            &format!("call_{i}"),
            "read_file",
            r#"{"path":"small.rs"}"#,
        ));
    }
    mock.push(MockResponse::text("Read it many times."));

    let mut config = Config::default();
    config.provider.base_url = mock.base_url();
    // A variable that is never set: no API key goes anywhere.
    config.provider.api_key_env = "SQUAD_BENCH_UNSET_KEY".into();
    config.limits.max_iterations = (iterations + 10) as u32;
    // Reading one file again and again is the point here, not a loop to stop.
    config.guards.read_repeat_stop_after = 0;
    config.guards.repeat_note_after = 0;
    config.approval = ApprovalPolicy::Auto;
    let model: Arc<dyn ModelClient> =
        Arc::new(OpenAiClient::new(ClientSettings::from_provider(&config.provider)).unwrap());
    let mut tools = ToolRegistry::new();
    for t in coding_tools() {
        tools.register(t);
    }
    let opts = SessionOptions {
        approval: ApprovalPolicy::Auto,
        roles: load_roles_from(None, ws.path()).unwrap(),
        config,
        workspace: ws.path().to_path_buf(),
        role: None,
        can_ask: false,
        model,
        tools,
        store: Some(SessionStore::new(data.path().join("sessions"))),
        resume: None,
        replay_to_frontend: false,
        warnings: Vec::new(),
        notices: Vec::new(),
        editor: None,
    };
    let mut handle = start_session(opts).await.unwrap();
    let root = handle.info.root_agent;
    handle
        .ops
        .send(Op::UserMessage {
            to: None,
            text: "Read small.rs again and again.".into(),
        })
        .unwrap();
    let (mut assistant_at, mut tool_end_at, mut result_at) = (Vec::new(), Vec::new(), Vec::new());
    let end = loop {
        let ev = tokio::time::timeout(Duration::from_secs(60), handle.events.recv())
            .await
            .expect("session stalled")
            .expect("session ended early");
        let now = Instant::now();
        match ev.kind {
            EventKind::TurnFinished { end } if ev.agent_id == root => break end,
            EventKind::ItemAdded {
                item: HistoryItem::Assistant { .. },
            } => assistant_at.push(now),
            EventKind::ToolCallEnd { .. } => tool_end_at.push(now),
            EventKind::ItemAdded {
                item: HistoryItem::ToolResult { .. },
            } => result_at.push(now),
            _ => {}
        }
    };
    assert_eq!(tool_end_at.len(), iterations);
    assert_eq!(result_at.len(), iterations);
    assert_eq!(end, TurnEnd::Completed);
    handle.ops.send(Op::Shutdown).unwrap();
    while handle.events.recv().await.is_some() {}
    assert_eq!(mock.remaining(), 0, "not every scripted response was used");

    let reqs: Vec<RecordedRequest> = mock.requests().into_iter().skip(first).collect();
    assert_eq!(reqs.len(), iterations + 1);
    // Request i+1 must carry the result of call i: the loop really ran the tool.
    let last = reqs[iterations].body["messages"].as_array().unwrap();
    let results = last.iter().filter(|m| m["role"] == "tool").count();
    assert_eq!(results, iterations);
    assert!(
        last.last().unwrap()["content"]
            .to_string()
            .contains("hello from a small file")
    );
    assert!(
        std::fs::read_dir(data.path().join("sessions"))
            .unwrap()
            .next()
            .is_some(),
        "no session log was written"
    );
    reqs.windows(2)
        .enumerate()
        .map(|(i, w)| {
            let done = w[0].finished_at.expect("response never finished");
            let marks = [
                done,
                assistant_at[i],
                tool_end_at[i],
                result_at[i],
                w[1].received_at,
            ];
            let phases = std::array::from_fn(|k| marks[k + 1].saturating_duration_since(marks[k]));
            Sample {
                phases,
                own: w[1].received_at.saturating_duration_since(done),
                mock: w[1]
                    .finished_at
                    .expect("response never finished")
                    .saturating_duration_since(w[1].received_at),
                body_bytes: w[1].body.to_string().len(),
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// b. Start-up

fn startup(squad: &str) {
    const RUNS: usize = 50;
    println!("\n== b. `squad --version` start-up ({RUNS} runs after 5 warm-ups)");
    let home = tempfile::tempdir().unwrap();
    let run = || {
        let t = Instant::now();
        let out = Command::new(squad)
            .arg("--version")
            .env_clear()
            .env("HOME", home.path())
            .env("SQUAD_CONFIG_DIR", home.path().join("config"))
            .env("SQUAD_DATA_DIR", home.path().join("data"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let elapsed = t.elapsed();
        assert!(out.status.success());
        assert!(String::from_utf8_lossy(&out.stdout).starts_with("squad "));
        elapsed
    };
    for _ in 0..5 {
        run();
    }
    let times: Vec<Duration> = (0..RUNS).map(|_| run()).collect();
    let st = Stats::of(&times).unwrap();
    println!(
        "   median {}, min {}, p95 {}, max {}",
        ms(st.median),
        ms(st.min),
        ms(st.p95),
        ms(st.max)
    );
    verdict("median start-up", st.median.as_secs_f64() * 1e3, 10.0, "ms");
}

// ---------------------------------------------------------------------------------------
// c. Peak memory of `squad exec`

fn exec_peak_memory(squad: &str, mock: &MockServer) {
    const RUNS: usize = 5;
    const TURNS: usize = 20;
    println!(
        "\n== c. peak RSS of `squad exec --approval auto` (wait4 ru_maxrss via a small launcher, {RUNS} runs each)"
    );
    for turns in [0, TURNS] {
        let mut peaks = Vec::new();
        let mut floor = 0;
        for _ in 0..RUNS {
            let r = exec_once(squad, mock, turns);
            peaks.push(r.max_rss_kb);
            floor = floor.max(r.floor_kb);
        }
        peaks.sort();
        let median = peaks[peaks.len() / 2] as f64 / 1024.0;
        let max = *peaks.last().unwrap() as f64 / 1024.0;
        let label = if turns == 0 {
            "answer only (no tool call)".to_string()
        } else {
            format!("{turns} read_file turns + final answer")
        };
        println!(
            "   {label:<38} median {median:.1} MB, max {max:.1} MB (launcher's own peak {:.1} MB)",
            floor as f64 / 1024.0
        );
        if turns == TURNS {
            verdict("peak RSS, 20 turns (max of runs)", max, 20.0, "MB");
        }
    }
}

/// One `squad exec` run with `turns` tool-call turns; returns its figures.
fn exec_once(squad: &str, mock: &MockServer, turns: usize) -> support::Reaped {
    let ws = tempfile::tempdir().unwrap();
    // One file per turn: the same read five times over would be stopped as a loop (and a
    // config turning the guard off would not load in an older build, SQUAD_BENCH_BIN).
    for i in 0..turns {
        let name = format!("small_{i}.rs");
        std::fs::write(ws.path().join(&name), SMALL_FILE).unwrap();
        mock.push(MockResponse::tool_call(
            &format!("call_{i}"),
            "read_file",
            &format!(r#"{{"path":"{name}"}}"#),
        ));
    }
    mock.push(MockResponse::text("All read."));
    let run = exec(
        squad,
        mock,
        ws.path(),
        &["--approval", "auto", "Read small.rs many times."],
    );
    assert_eq!(run.stdout.trim(), "All read.");
    assert_eq!(mock.remaining(), 0);
    run.reaped
}

/// A finished `squad exec` run with its own home directory (config, data, session log).
struct ExecRun {
    reaped: support::Reaped,
    stdout: String,
    home: tempfile::TempDir,
}

/// Runs `squad exec ARGS` in `ws`, sandboxed, against `mock`; it must exit 0.
fn exec(squad: &str, mock: &MockServer, ws: &Path, args: &[&str]) -> ExecRun {
    let home = tempfile::tempdir().unwrap();
    let out_path = home.path().join("stdout");
    let err_path = home.path().join("stderr");
    let mut run = support::Measured::new(squad, home.path());
    run.sandboxed(home.path(), ws, &mock.base_url(), &out_path, &err_path)
        .arg("exec")
        .args(args);
    let reaped = run.spawn().wait();
    assert_eq!(
        reaped.code,
        Some(0),
        "squad exec failed: {}",
        read(&err_path)
    );
    ExecRun {
        reaped,
        stdout: read(&out_path),
        home,
    }
}

// ---------------------------------------------------------------------------------------
// d. Session log per 1,000 streamed tokens

fn log_per_token(squad: &str, mock: &MockServer) {
    const TOKENS: usize = 1000;
    println!("\n== d. session-log size for one answer of {TOKENS} streamed tokens");
    let tokens: Vec<String> = (0..TOKENS).map(|i| format!("word{i} ")).collect();
    let whole = tokens.concat();
    let streamed = log_bytes(
        squad,
        mock,
        MockResponse::text_deltas(tokens.clone()),
        &whole,
    );
    let at_once = log_bytes(
        squad,
        mock,
        MockResponse::text_deltas([whole.clone()]),
        &whole,
    );
    println!(
        "   log with {TOKENS} deltas {streamed} bytes, with the same answer in one delta {at_once} bytes"
    );
    println!(
        "   -> {} bytes per {TOKENS} streamed tokens beyond the answer itself",
        streamed.saturating_sub(at_once)
    );
    verdict(
        "log bytes added by streaming 1,000 tokens",
        streamed.saturating_sub(at_once) as f64,
        1024.0,
        "bytes",
    );
}

/// Runs one `squad exec` answered by `answer`; returns the size of its session log.
fn log_bytes(squad: &str, mock: &MockServer, answer: MockResponse, text: &str) -> u64 {
    let ws = tempfile::tempdir().unwrap();
    mock.push(answer);
    let run = exec(squad, mock, ws.path(), &["Say many words."]);
    assert_eq!(run.stdout.trim(), text.trim());
    let (_, bytes) = support::session_logs(run.home.path());
    assert!(
        bytes > 0,
        "no session log under {}",
        run.home.path().display()
    );
    bytes
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}
