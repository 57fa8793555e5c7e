//! The model client against the mock OpenAI-compatible server, over real HTTP.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{MockResponse, MockServer, MockToolCall};
use serde_json::{Value, json};
use std::time::Duration;

/// Posts a chat request with plain reqwest and returns (status, body text).
async fn raw_post(mock: &MockServer, body: Value) -> (u16, String) {
    let resp = reqwest::Client::new()
        .post(format!("{}/chat/completions", mock.base_url()))
        .header("authorization", "Bearer sk-test")
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.text().await.unwrap_or_default())
}

/// The JSON payloads of the `data:` lines, `[DONE]` kept as a string.
fn sse_payloads(body: &str) -> Vec<Value> {
    body.split("\n\n")
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap_or(Value::String(d.to_string())))
        .collect()
}

#[tokio::test]
async fn mock_streams_sse_in_openai_format_and_records_requests() {
    let mock = MockServer::start().await;
    mock.push(MockResponse::text("Hello there, world").with_usage(7, 3));
    mock.push(MockResponse::tool_calls(vec![
        MockToolCall::new("call_a", "read_file", r#"{"path":"src/main.rs"}"#),
        MockToolCall::new("call_b", "list_dir", r#"{"path":"."}"#),
    ]));

    let (status, body) = raw_post(&mock, json!({"model": "m1", "messages": []})).await;
    assert_eq!(status, 200);
    let chunks = sse_payloads(&body);
    assert_eq!(chunks.last().unwrap(), &Value::String("[DONE]".into()));
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "Hello there, world");
    assert!(
        chunks
            .iter()
            .filter(|c| c["choices"][0]["delta"]["content"].is_string())
            .count()
            > 2
    );
    assert_eq!(chunks[0]["object"], "chat.completion.chunk");
    assert_eq!(chunks[0]["model"], "m1");
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let finish: Vec<_> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["finish_reason"].as_str())
        .collect();
    assert_eq!(finish, vec!["stop"]);
    let usage = &chunks[chunks.len() - 2];
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["usage"]["total_tokens"], 10);

    let (_, body) = raw_post(&mock, json!({"model": "m1", "messages": []})).await;
    let chunks = sse_payloads(&body);
    let calls: Vec<&Value> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["tool_calls"].get(0))
        .collect();
    // First delta per call carries id + name, later ones only index + argument fragments.
    assert_eq!(calls[0]["id"], "call_a");
    assert_eq!(calls[0]["function"]["name"], "read_file");
    assert!(calls[1].get("id").is_none() && calls[1]["index"] == 0);
    let args0: String = calls
        .iter()
        .filter(|c| c["index"] == 0)
        .filter_map(|c| c["function"]["arguments"].as_str())
        .collect();
    assert_eq!(args0, r#"{"path":"src/main.rs"}"#);
    assert!(calls.iter().any(|c| c["index"] == 1 && c["id"] == "call_b"));

    // Queue exhausted: loud 500.
    let (status, body) = raw_post(&mock, json!({"model": "m1"})).await;
    assert_eq!(status, 500);
    assert!(body.contains(common::mock_server::NO_RESPONSE_LEFT));

    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(reqs[0].body["model"], "m1");
    assert_eq!(reqs[0].header("Authorization"), Some("Bearer sk-test"));
    assert!(
        reqs.iter()
            .all(|r| r.finished_at.is_some_and(|f| f >= r.received_at))
    );
}

#[tokio::test]
async fn mock_errors_cuts_and_responder() {
    let mock = MockServer::start().await;
    mock.push(MockResponse::error(429, "slow down").with_retry_after(2));
    mock.push(MockResponse::text("abcdefghijkl").cut_after(2));
    let resp = reqwest::Client::new()
        .post(format!("{}/chat/completions", mock.base_url()))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 429);
    assert_eq!(resp.headers()["retry-after"], "2");
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["message"], "slow down");

    // A cut stream is a body error for the client, not a clean end.
    let resp = reqwest::Client::new()
        .post(format!("{}/chat/completions", mock.base_url()))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let mut resp = resp;
    let mut got = Vec::new();
    let err = loop {
        match resp.chunk().await {
            Ok(Some(b)) => got.extend_from_slice(&b),
            Ok(None) => panic!("a cut stream must not end cleanly"),
            Err(e) => break e,
        }
    };
    let got = String::from_utf8(got).unwrap();
    assert_eq!(sse_payloads(&got).len(), 2, "{got} / {err}");
    assert!(!got.contains("[DONE]"));

    mock.set_responder(|body| {
        let who = body["messages"][0]["content"]
            .as_str()
            .unwrap_or("?")
            .to_string();
        MockResponse::text(&format!("hi {who}"))
    });
    let (_, body) = raw_post(
        &mock,
        json!({"messages": [{"role": "system", "content": "tester"}]}),
    )
    .await;
    let text: String = sse_payloads(&body)
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "hi tester");
    assert_eq!(mock.requests()[2].system_prompt(), Some("tester"));
}

#[tokio::test]
async fn mock_delay_is_visible_in_recorded_times() {
    let mock = MockServer::start().await;
    mock.push(MockResponse::text("x").with_delay(Duration::from_millis(200)));
    raw_post(&mock, json!({})).await;
    let r = &mock.requests()[0];
    assert!(r.finished_at.unwrap() - r.received_at >= Duration::from_millis(200));
}

// ---------------------------------------------------------------------------------------
// OpenAiClient over real HTTP against the mock.

use squad::model::{
    ChatRequest, ChatResponse, ClientSettings, ModelClient, ModelError, ModelProgress,
    OpenAiClient, TokenUsage, ToolSpec, WireApi,
};
use squad::protocol::{HistoryItem, ToolCall};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio_util::sync::CancellationToken;

fn settings(base_url: &str) -> ClientSettings {
    ClientSettings {
        base_url: base_url.to_string(),
        api_key: None,
        api_key_env: "SQUAD_TEST_API_KEY".to_string(),
        request_timeout: Duration::from_secs(20),
        idle_timeout: Duration::from_secs(5),
        max_retries: 2,
        retry_base: Duration::from_millis(10),
        wire_api: WireApi::Chat,
        wires: Vec::new(),
        protocols: Default::default(),
    }
}

fn client(mock: &MockServer) -> OpenAiClient {
    OpenAiClient::new(settings(&mock.base_url())).unwrap()
}

fn request() -> ChatRequest {
    ChatRequest {
        model: "test-model".to_string(),
        system_prompt: "You are a coder.".to_string(),
        history: vec![HistoryItem::user("hello")].into(),
        tools: Vec::new().into(),
    }
}

/// Runs one call and returns its result with every progress report, in order.
async fn run(
    client: &OpenAiClient,
    req: &ChatRequest,
    cancel: &CancellationToken,
) -> (Result<ChatResponse, ModelError>, Vec<ModelProgress>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let progress = move |p: ModelProgress| sink.lock().unwrap().push(p);
    let result = client.stream_chat(req, &progress, cancel).await;
    let seen = seen.lock().unwrap().clone();
    (result, seen)
}

async fn run_simple(
    client: &OpenAiClient,
) -> (Result<ChatResponse, ModelError>, Vec<ModelProgress>) {
    run(client, &request(), &CancellationToken::new()).await
}

fn deltas(progress: &[ModelProgress]) -> Vec<String> {
    progress
        .iter()
        .filter_map(|p| match p {
            ModelProgress::TextDelta(t) => Some(t.clone()),
            ModelProgress::Retrying { .. } | ModelProgress::Received => None,
        })
        .collect()
}

fn retries(progress: &[ModelProgress]) -> Vec<(u32, u32, Duration)> {
    progress
        .iter()
        .filter_map(|p| match p {
            ModelProgress::Retrying {
                attempt,
                max_attempts,
                delay,
                ..
            } => Some((*attempt, *max_attempts, *delay)),
            ModelProgress::TextDelta(_) | ModelProgress::Received => None,
        })
        .collect()
}

#[tokio::test]
async fn streamed_text_arrives_in_order() {
    let mock = MockServer::start().await;
    let text = "The quick brown fox jumps over the lazy dog.";
    mock.push(MockResponse::text(text));
    let (result, progress) = run_simple(&client(&mock)).await;
    let response = result.unwrap();
    assert_eq!(response.text, text);
    assert!(response.tool_calls.is_empty());
    assert_eq!(response.finish_reason.as_deref(), Some("stop"));
    let deltas = deltas(&progress);
    assert!(deltas.len() > 5, "{deltas:?}");
    assert_eq!(deltas.concat(), text);
    assert!(retries(&progress).is_empty());
}

#[tokio::test]
async fn tool_call_split_across_many_deltas() {
    let mock = MockServer::start().await;
    let args = r#"{"path":"src/lib.rs","start_line":10,"end_line":42,"note":"ünïcödé"}"#;
    mock.push(MockResponse::tool_call("call_1", "read_file", args).with_arg_fragment(3));
    let (result, progress) = run_simple(&client(&mock)).await;
    let response = result.unwrap();
    assert_eq!(
        response.tool_calls,
        vec![ToolCall {
            id: "call_1".into(),
            name: "read_file".into(),
            arguments: args.into()
        }]
    );
    assert_eq!(response.text, "");
    assert_eq!(response.finish_reason.as_deref(), Some("tool_calls"));
    assert!(deltas(&progress).is_empty());
}

#[tokio::test]
async fn two_tool_calls_in_one_turn() {
    let mock = MockServer::start().await;
    mock.push(MockResponse::tool_calls(vec![
        MockToolCall::new("call_a", "grep", r#"{"pattern":"fn main"}"#),
        MockToolCall::new("call_b", "list_dir", r#"{"path":"."}"#),
    ]));
    let response = run_simple(&client(&mock)).await.0.unwrap();
    let got: Vec<(&str, &str, &str)> = response
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("call_a", "grep", r#"{"pattern":"fn main"}"#),
            ("call_b", "list_dir", r#"{"path":"."}"#),
        ]
    );
}

#[tokio::test]
async fn text_and_tool_call() {
    let mock = MockServer::start().await;
    mock.push(MockResponse::text_and_tool_calls(
        "Let me look at the file.",
        vec![MockToolCall::new("c9", "read_file", r#"{"path":"a.txt"}"#)],
    ));
    let (result, progress) = run_simple(&client(&mock)).await;
    let response = result.unwrap();
    assert_eq!(response.text, "Let me look at the file.");
    assert_eq!(deltas(&progress).concat(), "Let me look at the file.");
    assert_eq!(response.tool_calls.len(), 1);
    assert_eq!(response.tool_calls[0].arguments, r#"{"path":"a.txt"}"#);
}

#[tokio::test]
async fn usage_is_recorded() {
    let mock = MockServer::start().await;
    mock.push(MockResponse::text("ok").with_usage(120, 7).with_cached(100));
    let response = run_simple(&client(&mock)).await.0.unwrap();
    assert_eq!(
        response.usage,
        Some(TokenUsage {
            prompt_tokens: 120,
            completion_tokens: 7,
            cached_tokens: 100,
        })
    );
    // Without a usage chunk there is no usage, not a made-up zero.
    mock.push(MockResponse::text("ok"));
    assert_eq!(run_simple(&client(&mock)).await.0.unwrap().usage, None);
}

#[tokio::test]
async fn server_error_then_success_retries_once() {
    let mock = MockServer::start().await;
    mock.push(MockResponse::error(500, "internal hiccup"));
    mock.push(MockResponse::text("recovered"));
    let (result, progress) = run_simple(&client(&mock)).await;
    assert_eq!(result.unwrap().text, "recovered");
    assert_eq!(mock.requests().len(), 2);
    let r = retries(&progress);
    assert_eq!(r.len(), 1);
    assert_eq!((r[0].0, r[0].1), (2, 3));
    let reason = progress
        .iter()
        .find_map(|p| match p {
            ModelProgress::Retrying { reason, .. } => Some(reason.clone()),
            ModelProgress::TextDelta(_) | ModelProgress::Received => None,
        })
        .unwrap();
    assert!(
        reason.contains("500") && reason.contains("internal hiccup"),
        "{reason}"
    );
}

#[tokio::test]
async fn rate_limit_honours_retry_after() {
    let mock = MockServer::start().await;
    mock.push(MockResponse::error(429, "rate limited").with_retry_after(1));
    mock.push(MockResponse::text("finally"));
    let (result, progress) = run_simple(&client(&mock)).await;
    assert_eq!(result.unwrap().text, "finally");
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2);
    let waited = reqs[1].received_at - reqs[0].finished_at.unwrap();
    assert!(
        waited >= Duration::from_millis(950),
        "waited only {waited:?}"
    );
    assert_eq!(retries(&progress)[0].2, Duration::from_secs(1));
}

#[tokio::test]
async fn cut_stream_is_retried_without_duplicate_text() {
    let mock = MockServer::start().await;
    let text = "Hello brave new world, here I am.";
    mock.push(MockResponse::text(text).cut_after(3));
    mock.push(MockResponse::text(text));
    let (result, progress) = run_simple(&client(&mock)).await;
    assert_eq!(result.unwrap().text, text);
    assert_eq!(mock.requests().len(), 2);
    // Partial text came first, then the retry notice, then the whole answer again.
    let at = progress
        .iter()
        .position(|p| matches!(p, ModelProgress::Retrying { .. }))
        .unwrap();
    assert_eq!(deltas(&progress[..at]).concat(), "Hello brave ");
    assert_eq!(deltas(&progress[at..]).concat(), text);
}

#[tokio::test]
async fn cut_stream_beyond_budget_is_stream_broken() {
    let mock = MockServer::start().await;
    for _ in 0..3 {
        mock.push(MockResponse::text("never finished").cut_after(2));
    }
    mock.push(MockResponse::text("too late"));
    let (result, progress) = run_simple(&client(&mock)).await;
    assert!(
        matches!(result, Err(ModelError::StreamBroken(_))),
        "{result:?}"
    );
    assert_eq!(mock.requests().len(), 3);
    assert_eq!(retries(&progress).len(), 2);
}

#[tokio::test]
async fn stream_without_finish_reason_is_broken_but_missing_done_is_tolerated() {
    let mock = MockServer::start().await;
    let mut s = settings(&mock.base_url());
    s.max_retries = 0;
    let client = OpenAiClient::new(s).unwrap();
    mock.push(MockResponse::text("cut short").with_finish_reason(None));
    let result = run_simple(&client).await.0;
    assert!(
        matches!(result, Err(ModelError::StreamBroken(_))),
        "{result:?}"
    );
    mock.push(MockResponse::text("complete").without_done());
    assert_eq!(run_simple(&client).await.0.unwrap().text, "complete");
}

#[tokio::test]
async fn stalled_stream_hits_idle_timeout() {
    let mock = MockServer::start().await;
    let mut s = settings(&mock.base_url());
    s.idle_timeout = Duration::from_millis(300);
    s.max_retries = 0;
    let client = OpenAiClient::new(s).unwrap();
    mock.push(MockResponse::text("a slow answer").stall_after(1, Duration::from_secs(30)));
    let started = Instant::now();
    let result = run_simple(&client).await.0;
    assert!(
        matches!(result, Err(ModelError::IdleTimeout(d)) if d == Duration::from_millis(300)),
        "{result:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn stall_then_success_is_retried() {
    let mock = MockServer::start().await;
    let mut s = settings(&mock.base_url());
    s.idle_timeout = Duration::from_millis(300);
    let client = OpenAiClient::new(s).unwrap();
    mock.push(MockResponse::text("stuck").stall_after(1, Duration::from_secs(30)));
    mock.push(MockResponse::text("unstuck"));
    let (result, progress) = run_simple(&client).await;
    assert_eq!(result.unwrap().text, "unstuck");
    assert_eq!(retries(&progress).len(), 1);
}

#[tokio::test]
async fn cancellation_during_slow_response_is_prompt() {
    let mock = MockServer::start().await;
    let client = client(&mock);
    // Slow to answer at all.
    mock.push(MockResponse::text("late").with_delay(Duration::from_secs(30)));
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let result = run(&client, &request(), &cancel).await.0;
    assert!(matches!(result, Err(ModelError::Cancelled)), "{result:?}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );

    // Slow mid-stream.
    mock.push(MockResponse::text("one word at a time").with_chunk_delay(Duration::from_secs(1)));
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(1300)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let (result, progress) = run(&client, &request(), &cancel).await;
    assert!(matches!(result, Err(ModelError::Cancelled)), "{result:?}");
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(
        !deltas(&progress).is_empty(),
        "some text arrived before the cancel"
    );
}

#[tokio::test]
async fn cancellation_during_backoff_is_prompt() {
    let mock = MockServer::start().await;
    mock.push(MockResponse::error(429, "busy").with_retry_after(30));
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let (result, progress) = run(&client(&mock), &request(), &cancel).await;
    assert!(matches!(result, Err(ModelError::Cancelled)), "{result:?}");
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(retries(&progress).len(), 1);
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn unauthorized_is_not_retried() {
    let mock = MockServer::start().await;
    mock.push(MockResponse::error(401, "Incorrect API key provided"));
    mock.push(MockResponse::text("should not be reached"));
    let (result, progress) = run_simple(&client(&mock)).await;
    match result {
        Err(ModelError::Http { status, message }) => {
            assert_eq!(status, 401);
            assert!(message.contains("Incorrect API key provided"), "{message}");
            assert!(message.contains("SQUAD_TEST_API_KEY"), "{message}");
        }
        other => panic!("expected a 401, got {other:?}"),
    }
    assert_eq!(mock.requests().len(), 1);
    assert!(retries(&progress).is_empty());
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test]
async fn a_server_that_never_answered_is_not_retried_and_the_url_is_named() {
    let base_url = format!("http://127.0.0.1:{}/v1", free_port());
    let client = OpenAiClient::new(settings(&base_url)).unwrap();
    let (result, progress) = run_simple(&client).await;
    match result {
        Err(ModelError::Unreachable {
            base_url: b,
            message,
        }) => {
            assert_eq!(b, base_url);
            assert!(message.contains("--base-url"), "{message}");
            assert!(message.contains("OPENAI_BASE_URL"), "{message}");
            assert!(!message.contains("error sending request"), "{message}");
        }
        other => panic!("expected an unreachable server, got {other:?}"),
    }
    assert!(retries(&progress).is_empty(), "{progress:?}");
}

#[tokio::test]
async fn a_server_that_answered_once_is_retried_when_it_goes_away() {
    let port = free_port();
    let mock = MockServer::start_on(port).await;
    mock.push(MockResponse::text("first"));
    let client = OpenAiClient::new(settings(&mock.base_url())).unwrap();
    assert_eq!(run_simple(&client).await.0.unwrap().text, "first");
    drop(mock);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let (result, progress) = run_simple(&client).await;
    assert!(
        matches!(result, Err(ModelError::Connection { .. })),
        "{result:?}"
    );
    assert_eq!(retries(&progress).len(), 2, "the retry budget is spent");
}

#[tokio::test]
async fn no_key_for_openai_itself_is_refused_before_sending() {
    let mut s = settings("https://api.openai.com/v1");
    s.max_retries = 0;
    let client = OpenAiClient::new(s).unwrap();
    let started = Instant::now();
    let (result, progress) = run_simple(&client).await;
    match result {
        Err(ModelError::MissingKey(fix)) => {
            assert!(fix.contains("SQUAD_TEST_API_KEY"), "{fix}");
            assert!(fix.contains("--base-url"), "{fix}");
        }
        other => panic!("expected a missing key, got {other:?}"),
    }
    assert!(progress.is_empty());
    // Nothing was sent: no DNS lookup, no connection, no wait.
    assert!(started.elapsed() < Duration::from_millis(500));
}

#[tokio::test]
async fn models_are_listed_from_the_server() {
    let mock = MockServer::start().await;
    mock.set_models(["a", "b"]);
    let ids = squad::model::list_models(&settings(&mock.base_url()))
        .await
        .unwrap();
    assert_eq!(ids, ["a", "b"]);
    let dead = format!("http://127.0.0.1:{}/v1", free_port());
    let err = squad::model::list_models(&settings(&dead))
        .await
        .unwrap_err();
    assert!(matches!(err, ModelError::Unreachable { .. }), "{err:?}");
    assert!(err.to_string().contains(&dead), "{err}");
}

#[tokio::test]
async fn request_body_carries_history_tools_and_usage_option() {
    let mock = MockServer::start().await;
    mock.push(MockResponse::text("fine"));
    let req = ChatRequest {
        model: "qwen-coder".to_string(),
        system_prompt: "You are the supervisor.".to_string(),
        history: vec![
            HistoryItem::user("list the files"),
            HistoryItem::Assistant {
                text: String::new(),
                tool_calls: vec![
                    ToolCall {
                        id: "c1".into(),
                        name: "list_dir".into(),
                        arguments: r#"{"path":"."}"#.into(),
                    },
                    ToolCall {
                        id: "c2".into(),
                        name: "read_file".into(),
                        arguments: r#"{"path":"README.md"}"#.into(),
                    },
                ],
                reasoning: Vec::new(),
            },
            HistoryItem::ToolResult {
                call_id: "c1".into(),
                name: "list_dir".into(),
                output: "README.md\nsrc/".into(),
                is_error: false,
            },
            HistoryItem::ToolResult {
                call_id: "c2".into(),
                name: "read_file".into(),
                output: "no such file".into(),
                is_error: true,
            },
            HistoryItem::notice("worker w1 returned its results"),
            HistoryItem::Assistant {
                text: "Two entries.".into(),
                tool_calls: vec![],
                reasoning: Vec::new(),
            },
            HistoryItem::user("thanks"),
        ]
        .into(),
        tools: vec![ToolSpec {
            name: "list_dir".into(),
            description: "List a directory".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            freeform: None,
        }]
        .into(),
    };
    run(&client(&mock), &req, &CancellationToken::new())
        .await
        .0
        .unwrap();
    let recorded = &mock.requests()[0];
    let body = &recorded.body;
    assert_eq!(body["model"], "qwen-coder");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"]["include_usage"], true);
    let roles: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "tool",
            "tool",
            "user",
            "assistant",
            "user"
        ]
    );
    let m = &body["messages"];
    assert_eq!(m[0]["content"], "You are the supervisor.");
    assert_eq!(m[2]["content"], Value::Null);
    assert_eq!(m[2]["tool_calls"][1]["id"], "c2");
    assert_eq!(m[2]["tool_calls"][1]["type"], "function");
    assert_eq!(m[2]["tool_calls"][1]["function"]["name"], "read_file");
    assert_eq!(
        m[2]["tool_calls"][1]["function"]["arguments"],
        r#"{"path":"README.md"}"#
    );
    assert_eq!(m[3]["tool_call_id"], "c1");
    assert_eq!(m[4]["tool_call_id"], "c2");
    assert_eq!(m[4]["content"], "no such file");
    assert!(m[5]["content"].as_str().unwrap().starts_with("[squad] "));
    assert_eq!(m[6]["content"], "Two entries.");
    assert!(m[6].get("tool_calls").is_none());
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "function": {
            "name": "list_dir",
            "description": "List a directory",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        }}])
    );
    // No key: no Authorization header at all.
    assert_eq!(recorded.header("authorization"), None);

    // With a key: a bearer header, and no tools field when there are no tools.
    let mut s = settings(&mock.base_url());
    s.api_key = Some("sk-test-123".to_string());
    let keyed = OpenAiClient::new(s).unwrap();
    assert!(!format!("{keyed:?}").contains("sk-test-123"));
    mock.push(MockResponse::text("fine"));
    run_simple(&keyed).await.0.unwrap();
    let recorded = &mock.requests()[1];
    assert_eq!(recorded.header("authorization"), Some("Bearer sk-test-123"));
    assert!(recorded.body.get("tools").is_none());
}
