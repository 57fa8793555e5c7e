//! `cargo bench --bench context`: what long sessions and small local models cost.
//!
//! a. The first request of each built-in persona, on each wire (chat completions and
//!    Responses): bytes of the JSON body, of its tools and of its system prompt; with `SQUAD_BENCH_BASE_URL=http://127.0.0.1:PORT` (a real
//!    llama.cpp server, without `/v1`) also its tokens, counted by the server's own chat
//!    template and tokenizer (`/apply-template` + `/tokenize`). Target: copilot ≤ 8 KB.
//! b. Time to build a request for an agent with ~1,000 history items: an in-process
//!    session of 520 read_file iterations against the mock, timed from the tool-result
//!    event to the next request's arrival at the mock (history, context estimate,
//!    compaction check, serialization, HTTP), over the last 20 iterations.
//!
//! `SQUAD_BENCH_DUMP=DIR` writes each first request to `DIR/<persona>.json`.
//!
//! Uses only the public API that main has too, so the same file measures an older commit
//! (copy it there) for "before" figures.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/common/mock_server.rs"]
mod mock_server;
mod support;

use mock_server::{MockResponse, MockServer};
use serde_json::{Value, json};
use squad::config::{Config, WireApi};
use squad::model::{ClientSettings, ModelClient, OpenAiClient};
use squad::protocol::{ApprovalPolicy, EventKind, HistoryItem, Op, TurnEnd};
use squad::roles::load_roles_from;
use squad::runtime::{SessionOptions, start_session};
use squad::tools::{ToolRegistry, coding_tools};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{Stats, ms, verdict};

const ITERATIONS: usize = 520;
const MEASURED: usize = 20;

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mock_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    for wire in [WireApi::Chat, WireApi::Responses] {
        first_requests(&rt, &mock_rt, wire);
    }
    request_build(&rt, &mock_rt);
}

fn options(
    mock: &MockServer,
    ws: &std::path::Path,
    role: Option<String>,
    max_iter: u32,
    wire: WireApi,
) -> SessionOptions {
    let mut config = Config::default();
    config.provider.wire_api = wire;
    config.provider.base_url = mock.base_url();
    config.provider.api_key_env = "SQUAD_BENCH_UNSET_KEY".into();
    config.limits.max_iterations = max_iter;
    // Reading one file again and again is the point here, not a loop to stop.
    config.guards.read_repeat_stop_after = 0;
    config.guards.repeat_note_after = 0;
    // Nor is a long turn without a changed file: the progress layer would end it at 40.
    config.limits.max_turn_calls = 0;
    config.approval = ApprovalPolicy::Auto;
    let model: Arc<dyn ModelClient> =
        Arc::new(OpenAiClient::new(ClientSettings::from_provider(&config.provider)).unwrap());
    let mut tools = ToolRegistry::new();
    for t in coding_tools() {
        tools.register(t);
    }
    SessionOptions {
        approval: ApprovalPolicy::Auto,
        roles: load_roles_from(None, ws).unwrap(),
        config,
        workspace: ws.to_path_buf(),
        role,
        can_ask: false,
        model,
        tools,
        store: None,
        resume: None,
        replay_to_frontend: false,
        warnings: Vec::new(),
        notices: Vec::new(),
        editor: None,
    }
}

// ---------------------------------------------------------------------------------------
// a. First request per persona

fn first_requests(rt: &tokio::runtime::Runtime, mock_rt: &tokio::runtime::Runtime, wire: WireApi) {
    println!("\n== a. first request of each built-in persona (the user's \"hi\"), wire {wire}");
    let server = std::env::var("SQUAD_BENCH_BASE_URL").ok();
    println!(
        "   {:<15} {:>9} {:>9} {:>9} {:>7} {:>8}",
        "persona",
        "body B",
        "tools B",
        "prompt B",
        "tools",
        if server.is_some() { "tokens" } else { "" }
    );
    let ws = tempfile::tempdir().unwrap();
    let roles = load_roles_from(None, ws.path()).unwrap().names();
    for role in roles {
        let mock = mock_rt.block_on(MockServer::start());
        mock.push(MockResponse::text("hello"));
        let opts = options(&mock, ws.path(), Some(role.clone()), 5, wire);
        rt.block_on(async {
            let mut handle = start_session(opts).await.unwrap();
            handle
                .ops
                .send(Op::UserMessage {
                    to: None,
                    text: "hi".into(),
                })
                .unwrap();
            while let Some(ev) = handle.events.recv().await {
                if matches!(ev.kind, EventKind::Idle) {
                    break;
                }
            }
            handle.ops.send(Op::Shutdown).unwrap();
            while handle.events.recv().await.is_some() {}
        });
        let body = &mock.requests()[0].body;
        if let Ok(dir) = std::env::var("SQUAD_BENCH_DUMP") {
            let pretty = serde_json::to_string_pretty(body).unwrap();
            std::fs::write(format!("{dir}/{role}-{wire}.json"), pretty).unwrap();
        }
        let bytes = serde_json::to_string(body).unwrap().len();
        let tools = body.get("tools").map_or(0, |t| t.to_string().len());
        let n_tools = body
            .get("tools")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        let prompt = body
            .get("instructions")
            .unwrap_or(&body["messages"][0]["content"])
            .as_str()
            .unwrap_or("")
            .len();
        let tokens = server
            .as_deref()
            .filter(|_| wire == WireApi::Chat)
            .and_then(|s| rt.block_on(count_tokens(s, body)))
            .map(|t| t.to_string())
            .unwrap_or_default();
        println!("   {role:<15} {bytes:>9} {tools:>9} {prompt:>9} {n_tools:>7} {tokens:>8}");
        if role == "copilot" {
            let what = format!("copilot's first request ({wire})");
            verdict(&what, bytes as f64 / 1024.0, 8.0, "KB");
        }
    }
}

/// The prompt tokens of `body` as the server's chat template and tokenizer make them.
async fn count_tokens(server: &str, body: &Value) -> Option<u64> {
    let http = reqwest::Client::new();
    let post = |path: &str, body: Value| {
        let request = http
            .post(format!("{server}{path}"))
            .header("content-type", "application/json")
            .body(body.to_string());
        async move {
            let bytes = request.send().await.ok()?.bytes().await.ok()?;
            serde_json::from_slice::<Value>(&bytes).ok()
        }
    };
    let mut req = body.clone();
    req["stream"] = json!(false);
    if let Some(o) = req.as_object_mut() {
        o.remove("stream_options");
    }
    let prompt = post("/apply-template", req).await?;
    let tokens = post(
        "/tokenize",
        json!({"content": prompt["prompt"], "add_special": false, "parse_special": true}),
    )
    .await?;
    tokens["tokens"].as_array().map(|t| t.len() as u64)
}

// ---------------------------------------------------------------------------------------
// b. Building a request with ~1,000 history items

fn request_build(rt: &tokio::runtime::Runtime, mock_rt: &tokio::runtime::Runtime) {
    println!(
        "\n== b. time from a tool result to the next request at the mock, history of ~1,000 items"
    );
    let mut samples = Vec::new();
    let mut kb = 0.0;
    for _ in 0..3 {
        let mock = mock_rt.block_on(MockServer::start());
        let (s, size) = rt.block_on(one_session(&mock));
        samples.extend(s);
        kb = size as f64 / 1024.0;
    }
    let st = Stats::of(&samples).unwrap();
    println!(
        "   3 sessions x last {MEASURED} of {ITERATIONS} iterations (history {}-{} items, request {kb:.0} KB): median {}, p95 {}, max {}",
        2 * (ITERATIONS - MEASURED) + 1,
        2 * ITERATIONS + 1,
        ms(st.median),
        ms(st.p95),
        ms(st.max)
    );
    verdict(
        "median request build at ~1,000 items",
        st.median.as_secs_f64() * 1e3,
        1.0,
        "ms",
    );
}

async fn one_session(mock: &MockServer) -> (Vec<Duration>, usize) {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("small.rs"), "fn main() {}\n").unwrap();
    for i in 0..ITERATIONS {
        mock.push(MockResponse::tool_call(
            &format!("call_{i}"),
            "read_file",
            r#"{"path":"small.rs"}"#,
        ));
    }
    mock.push(MockResponse::text("done"));
    let opts = options(mock, ws.path(), None, ITERATIONS as u32 + 10, WireApi::Chat);
    let mut handle = start_session(opts).await.unwrap();
    let root = handle.info.root_agent;
    handle
        .ops
        .send(Op::UserMessage {
            to: None,
            text: "read small.rs again and again".into(),
        })
        .unwrap();
    let mut result_at = Vec::new();
    loop {
        let ev = tokio::time::timeout(Duration::from_secs(120), handle.events.recv())
            .await
            .expect("session stalled")
            .expect("session ended early");
        match ev.kind {
            EventKind::TurnFinished { end } if ev.agent_id == root => {
                assert_eq!(end, TurnEnd::Completed);
                break;
            }
            EventKind::ItemAdded {
                item: HistoryItem::ToolResult { .. },
            } => result_at.push(Instant::now()),
            _ => {}
        }
    }
    handle.ops.send(Op::Shutdown).unwrap();
    while handle.events.recv().await.is_some() {}
    let reqs = mock.requests();
    assert_eq!(reqs.len(), ITERATIONS + 1);
    let samples = (ITERATIONS - MEASURED..ITERATIONS)
        .map(|i| {
            reqs[i + 1]
                .received_at
                .saturating_duration_since(result_at[i])
        })
        .collect();
    let size = reqs[ITERATIONS].body.to_string().len();
    (samples, size)
}
