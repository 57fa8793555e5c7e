//! `cargo bench --bench batch`: the 100-row batch of tests/batch.rs, timed.
//!
//! Runs the real binary (`squad exec --approval auto --batch rows.csv …`, eight rows at
//! once) in a git repository against the mock server, which lives in this process on a
//! runtime of its own. Each row's worker writes its file (a worktree each, merged through
//! the queue) and returns a result checked against the schema; ten rows miss it once and
//! go again, two never match. Figures per run: wall time from start to exit, squad's peak
//! RSS (`wait4`, through the launcher in `support`), and squad's CPU (user + system) per
//! row. `SQUAD_BENCH_RUNS=N` (3), `SQUAD_BENCH_DELAY_MS=D` (0: the mock answers at once, so
//! the wall time is squad's own work) and `SQUAD_BENCH_BIN=path` (another build).

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/common/mock_server.rs"]
mod mock_server;
mod support;

use mock_server::{MockResponse, MockServer};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const ROWS: usize = 100;
const TEMPLATE: &str = "Row {id}: write out/{id}.txt holding {name}; report its id and len.";

fn main() {
    support::launcher_main_if_asked();
    let bin = std::env::var("SQUAD_BENCH_BIN").ok();
    let squad = bin.as_deref().unwrap_or(env!("CARGO_BIN_EXE_squad"));
    let runs: usize = env_or("SQUAD_BENCH_RUNS", 3);
    let delay = Duration::from_millis(env_or("SQUAD_BENCH_DELAY_MS", 0));
    println!("squad binary: {squad}");
    println!("{ROWS} rows, 8 at once, mock delay {delay:?}, {runs} run(s)");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .thread_name("mock")
        .enable_all()
        .build()
        .unwrap();
    for run in 1..=runs {
        let mock = rt.block_on(MockServer::start());
        mock.set_responder(move |body| respond(body).with_delay(delay));
        let dir = tempfile::tempdir().unwrap();
        let (home, ws) = (dir.path().join("home"), dir.path().join("ws"));
        workspace(&ws);
        let mut launch = support::Measured::new(squad, dir.path());
        let (out, err) = (dir.path().join("out.txt"), dir.path().join("err.txt"));
        launch
            .sandboxed(&home, &ws, &mock.base_url(), &out, &err)
            .args(["exec", "--approval", "auto", "--batch", "rows.csv"])
            .args(["--template", TEMPLATE, "--schema", "schema.json"])
            .args(["--output", "results.csv", "--max-concurrency", "8"]);
        let started = Instant::now();
        let reaped = launch.spawn().wait();
        let wall = started.elapsed();
        let stderr = std::fs::read_to_string(&err).unwrap_or_default();
        let results = std::fs::read_to_string(ws.join("results.csv")).unwrap_or_default();
        let done = results.lines().filter(|l| l.contains(",done,")).count();
        let failed = results.lines().filter(|l| l.contains(",failed,")).count();
        assert_eq!((done, failed), (98, 2), "run {run}: {stderr}");
        let cpu = reaped.user + reaped.sys;
        println!(
            "run {run}: wall {:.2} s, peak RSS {:.1} MB, squad CPU {} per row ({} user + {} sys \
             in all), {} requests",
            wall.as_secs_f64(),
            reaped.max_rss_kb as f64 / 1024.0,
            support::ms(cpu / ROWS as u32),
            support::ms(reaped.user),
            support::ms(reaped.sys),
            mock.requests().len()
        );
    }
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The repository: the rows, the schema, and a config that releases workers at once.
fn workspace(ws: &Path) {
    std::fs::create_dir_all(ws.join(".squad")).unwrap();
    let mut rows = String::from("id,name\n");
    for n in 1..=ROWS {
        rows.push_str(&format!("r{n:03},\"name {n}\"\n"));
    }
    std::fs::write(ws.join("rows.csv"), rows).unwrap();
    let schema = json!({"type": "object", "properties": {
        "id": {"type": "string"}, "len": {"type": "integer"}}, "required": ["id", "len"]});
    std::fs::write(ws.join("schema.json"), schema.to_string()).unwrap();
    let config = "[team]\nrelease_after_s = 0\n";
    std::fs::write(ws.join(".squad/config.toml"), config).unwrap();
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .args(args)
            .current_dir(ws)
            .output()
            .unwrap();
        assert!(ok.status.success(), "git {args:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["add", "."]);
    git(&[
        "-c",
        "user.name=b",
        "-c",
        "user.email=b@b",
        "commit",
        "-qm",
        "rows",
    ]);
}

/// The persona answers in words; a row's worker writes its file, then returns its result
/// (`len` left out on the first try of rows 3, 13, …, 93, and always for rows 50 and 77).
fn respond(body: &Value) -> MockResponse {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    // A string, or an array of text parts.
    let text = |m: &Value| match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => String::new(),
    };
    let task = messages
        .iter()
        .find(|m| m["role"] == "user")
        .map(text)
        .unwrap_or_default();
    let Some(row) = task.strip_prefix("Row ").and_then(|r| r.split(':').next()) else {
        return MockResponse::text("ok");
    };
    let n: usize = row[1..].parse().unwrap_or(0);
    let retry = task.contains("did not count");
    let path = format!("out/{row}.txt");
    if !messages.iter().any(|m| m["role"] == "tool") {
        let content = format!("name {n}{}\n", if retry { ", again" } else { "" });
        let args = json!({"path": path, "content": content});
        return MockResponse::tool_call("w", "write_file", &args.to_string()).with_usage(1000, 20);
    }
    let bad = n == 50 || n == 77 || (n % 10 == 3 && !retry);
    let summary = match bad {
        true => json!({"id": row}),
        false => json!({"id": row, "len": n}),
    };
    let change = if retry { "modified" } else { "created" };
    let args = json!({"result": {"status": "success", "summary": summary.to_string(),
        "artifacts": [{"file_path": path, "description": "the row's file", "change_type": change}],
        "known_issues": []}});
    MockResponse::tool_call("r", "return_results", &args.to_string()).with_usage(1100, 30)
}
