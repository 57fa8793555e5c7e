//! `cargo bench --bench mcp`: what two MCP servers (the reference `server-everything` on
//! node and `mcp-server-git` on python, installed by `.ci/mcp-servers`) add to a session.
//!
//! a. In-process, through the public runtime API against the mock model (which answers at
//!    once), with no servers and with both: `start_session` returning, the first model
//!    request arriving (the servers must not delay it), both servers ready (their tools
//!    offered), and `Op::Shutdown` → the last event (servers stopped first).
//! b. The release binary: `squad exec "hi"` wall time with and without the two servers,
//!    and `squad mcp list` (start both, list, stop).
//!
//! Target: the first request is not delayed (< 10 ms added, median).

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/common/mock_server.rs"]
mod mock_server;
mod support;

use mock_server::{MockResponse, MockServer};
use squad::config::{Config, McpServerConfig};
use squad::model::{ClientSettings, OpenAiClient};
use squad::protocol::{ApprovalPolicy, EventKind, McpServerState, Op};
use squad::roles::load_roles_from;
use squad::runtime::{SessionOptions, start_session};
use squad::tools::{ToolRegistry, coding_tools};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{Stats, ms, verdict};

const RUNS: usize = 5;

fn main() {
    let Some(servers) = install() else {
        println!("skipped: node or python3 is missing, the MCP servers cannot run");
        return;
    };
    let mock_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    println!("\n== a. in-process session, {RUNS} runs each after 1 warm-up (median, min–max)");
    let none = (0..=RUNS)
        .map(|_| session(&rt, &mock_rt, &BTreeMap::new()))
        .skip(1)
        .collect::<Vec<_>>();
    let two = (0..=RUNS)
        .map(|_| session(&rt, &mock_rt, &servers))
        .skip(1)
        .collect::<Vec<_>>();
    let row = |what: &str, f: &dyn Fn(&Sample) -> Option<Duration>| {
        let a: Vec<_> = none.iter().filter_map(f).collect();
        let b: Vec<_> = two.iter().filter_map(f).collect();
        println!("   {what:<40} {:>24} {:>24}", show(&a), show(&b));
    };
    println!(
        "   {:<40} {:>24} {:>24}",
        "", "no servers", "everything + git"
    );
    row("start_session returns", &|s| Some(s.started));
    row("first model request arrives", &|s| Some(s.first_request));
    row("both servers ready (tools offered)", &|s| s.ready);
    row("Op::Shutdown -> last event", &|s| Some(s.shutdown));
    let added = |f: &dyn Fn(&Sample) -> Duration| {
        let a = Stats::of(&none.iter().map(f).collect::<Vec<_>>())
            .unwrap()
            .median;
        let b = Stats::of(&two.iter().map(f).collect::<Vec<_>>())
            .unwrap()
            .median;
        b.saturating_sub(a)
    };
    let first = added(&|s| s.first_request);
    println!("   added to the first request: {}", ms(first));
    verdict(
        "time the two servers add to the first request (median)",
        first.as_secs_f64() * 1e3,
        10.0,
        "ms",
    );

    println!("\n== b. the release binary, {RUNS} runs each after 1 warm-up (median, min–max)");
    let squad = env!("CARGO_BIN_EXE_squad");
    let mock = mock_rt.block_on(MockServer::start());
    let ws_none = tempfile::tempdir().unwrap();
    let ws_two = tempfile::tempdir().unwrap();
    write_config(ws_two.path(), &servers);
    let exec = |ws: &Path| {
        mock.push(MockResponse::text("hello"));
        let t = Instant::now();
        let out = Command::new(squad)
            .args(["exec", "hi"])
            .current_dir(ws)
            .env("OPENAI_BASE_URL", mock.base_url())
            .env("SQUAD_DATA_DIR", ws.join(".data"))
            .env("SQUAD_CONFIG_DIR", ws.join(".config"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        t.elapsed()
    };
    let runs = |f: &dyn Fn() -> Duration| (0..=RUNS).map(|_| f()).skip(1).collect::<Vec<_>>();
    let a = runs(&|| exec(ws_none.path()));
    let b = runs(&|| exec(ws_two.path()));
    println!(
        "   {:<40} {:>24} {:>24}",
        "", "no servers", "everything + git"
    );
    println!(
        "   {:<40} {:>24} {:>24}",
        "squad exec \"hi\" wall time",
        show(&a),
        show(&b)
    );
    let list = runs(&|| {
        let t = Instant::now();
        let out = Command::new(squad)
            .args(["mcp", "list"])
            .current_dir(ws_two.path())
            .env("SQUAD_CONFIG_DIR", ws_two.path().join(".config"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        t.elapsed()
    });
    println!(
        "   {:<40} {:>24} {:>24}",
        "squad mcp list wall time",
        "",
        show(&list)
    );
}

struct Sample {
    started: Duration,
    first_request: Duration,
    ready: Option<Duration>,
    shutdown: Duration,
}

/// One session that answers "hi", timed from just before `start_session`.
fn session(
    rt: &tokio::runtime::Runtime,
    mock_rt: &tokio::runtime::Runtime,
    servers: &BTreeMap<String, McpServerConfig>,
) -> Sample {
    let mock = mock_rt.block_on(MockServer::start());
    mock.push(MockResponse::text("hello"));
    let ws = tempfile::tempdir().unwrap();
    let mut config = Config::default();
    config.provider.base_url = mock.base_url();
    config.provider.api_key_env = String::new();
    config.mcp_servers = servers.clone();
    let mut tools = ToolRegistry::new();
    for t in coding_tools() {
        tools.register(t);
    }
    let client = OpenAiClient::new(ClientSettings::from_provider(&config.provider)).unwrap();
    let opts = SessionOptions {
        approval: ApprovalPolicy::Auto,
        config,
        roles: load_roles_from(None, ws.path()).unwrap(),
        workspace: ws.path().to_path_buf(),
        role: None,
        can_ask: false,
        model: Arc::new(client),
        tools,
        store: None,
        resume: None,
        replay_to_frontend: false,
        warnings: Vec::new(),
        notices: Vec::new(),
        editor: None,
    };
    rt.block_on(async {
        let t0 = Instant::now();
        let mut handle = start_session(opts).await.unwrap();
        let started = t0.elapsed();
        handle
            .ops
            .send(Op::UserMessage {
                to: None,
                text: "hi".into(),
            })
            .unwrap();
        let mut ready = 0;
        let mut ready_at = None;
        let mut idle = false;
        while !(idle && (servers.is_empty() || ready_at.is_some())) {
            let ev = tokio::time::timeout(Duration::from_secs(60), handle.events.recv())
                .await
                .expect("the session goes on")
                .expect("events");
            match ev.kind {
                EventKind::McpServer {
                    state: McpServerState::Ready,
                    ..
                } => {
                    ready += 1;
                    if ready == servers.len() {
                        ready_at = Some(t0.elapsed());
                    }
                }
                EventKind::McpServer {
                    state: McpServerState::Failed,
                    error,
                    server,
                    ..
                } => panic!("{server} failed: {error:?}"),
                EventKind::Idle => idle = true,
                _ => {}
            }
        }
        let first_request = mock.requests()[0].received_at.duration_since(t0);
        let t1 = Instant::now();
        handle.ops.send(Op::Shutdown).unwrap();
        while let Some(ev) = handle.events.recv().await {
            if matches!(ev.kind, EventKind::Summary { .. }) {
                break;
            }
        }
        Sample {
            started,
            first_request,
            ready: ready_at,
            shutdown: t1.elapsed(),
        }
    })
}

fn show(samples: &[Duration]) -> String {
    match Stats::of(samples) {
        Some(s) => format!("{} ({}–{})", short(s.median), short(s.min), short(s.max)),
        None => "—".to_string(),
    }
}

fn short(d: Duration) -> String {
    if d < Duration::from_millis(10) {
        format!("{:.2} ms", d.as_secs_f64() * 1e3)
    } else {
        format!("{:.0} ms", d.as_secs_f64() * 1e3)
    }
}

/// Installs the servers (once) and returns their configs.
fn install() -> Option<BTreeMap<String, McpServerConfig>> {
    let ok = |p: &str| {
        Command::new(p)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !ok("node") || !ok("python3") {
        return None;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/mcp-servers");
    let out = Command::new("bash").arg(script).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let index = dir.join("node/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let everything = McpServerConfig {
        command: Some("node".into()),
        args: vec![index.display().to_string(), "stdio".into()],
        ..Default::default()
    };
    let git = McpServerConfig {
        command: Some(dir.join("venv/bin/mcp-server-git").display().to_string()),
        ..Default::default()
    };
    Some(
        [
            ("everything".to_string(), everything),
            ("git".to_string(), git),
        ]
        .into(),
    )
}

fn write_config(ws: &Path, servers: &BTreeMap<String, McpServerConfig>) {
    let mut text = String::new();
    for (name, s) in servers {
        text.push_str(&format!(
            "[mcp_servers.{name}]\ncommand = {:?}\nargs = {:?}\n\n",
            s.command.as_deref().unwrap(),
            s.args
        ));
    }
    std::fs::create_dir_all(ws.join(".squad")).unwrap();
    std::fs::write(ws.join(".squad/config.toml"), text).unwrap();
}
