//! The Responses wire (`provider.wire_api = "responses"`, `--wire-api responses`): the
//! mock's `/v1/responses` stream as OpenAI sends it, the model client over it, and the
//! real binary's tool loop, team fan-out, overflow recovery and resume across wires.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use ::squad::model::{
    ChatRequest, ClientSettings, ModelClient, ModelError, ModelProgress, OpenAiClient, TokenUsage,
    ToolSpec, WireApi,
};
use ::squad::protocol::HistoryItem;
use async_openai::types::responses::ResponseStreamEvent;
use common::agents::{good_result, is_worker, tool_count};
use common::*;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// (event line, data) of each SSE event of a raw `/v1/responses` answer.
async fn raw_events(mock: &MockServer) -> Vec<(String, Value)> {
    let body = reqwest::Client::new()
        .post(format!("{}/responses", mock.base_url()))
        .json(&json!({"model": "m1", "input": "hi", "stream": true}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    body.split("\n\n")
        .filter(|b| !b.trim().is_empty())
        .map(|block| {
            let mut lines = block.lines();
            let event = lines.next().unwrap().strip_prefix("event: ").unwrap();
            let data = lines.next().unwrap().strip_prefix("data: ").unwrap();
            (event.to_string(), serde_json::from_str(data).unwrap())
        })
        .collect()
}

fn types(events: &[(String, Value)]) -> Vec<&str> {
    events.iter().map(|(e, _)| e.as_str()).collect()
}

#[tokio::test]
async fn mock_streams_responses_events_in_openai_order_and_schema() {
    let mock = MockServer::start().await;
    mock.push(MockResponse::text_deltas(["Hel", "lo"]).with_usage(7, 3));
    mock.push(
        MockResponse::tool_calls(vec![
            MockToolCall::new("call_a", "read_file", r#"{"path":"src/main.rs"}"#),
            MockToolCall::new("call_b", "list_files", r#"{"path":"."}"#),
        ])
        .with_arg_fragment(4),
    );
    mock.push(MockResponse::text("abcdefgh").stream_error_after(2, "server_error", "boom"));

    let text = raw_events(&mock).await;
    assert_eq!(
        types(&text),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let calls = raw_events(&mock).await;
    let t = types(&calls);
    let deltas = t
        .iter()
        .filter(|e| **e == "response.function_call_arguments.delta")
        .count();
    assert!(deltas >= 8, "arguments split over many deltas: {t:?}");
    let added: Vec<usize> = t
        .iter()
        .enumerate()
        .filter(|(_, e)| **e == "response.output_item.added")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(added.len(), 2, "two parallel calls");
    assert_eq!(t[added[1] - 2], "response.function_call_arguments.done");
    assert_eq!(t[added[1] - 1], "response.output_item.done");
    assert_eq!(calls[added[1]].1["item"]["call_id"], "call_b");
    let errored = raw_events(&mock).await;
    assert_eq!(errored.last().unwrap().0, "error");
    assert_eq!(errored.last().unwrap().1["code"], "server_error");

    for (event, data) in text.iter().chain(&calls).chain(&errored) {
        assert_eq!(data["type"], event.as_str());
        let strict = serde_json::from_value::<ResponseStreamEvent>(data.clone());
        assert!(strict.is_ok(), "{event}: {strict:?}\n{data}");
    }
    let completed = &text.last().unwrap().1["response"];
    assert_eq!(completed["usage"]["input_tokens"], 7);
    assert_eq!(completed["output"][0]["content"][0]["text"], "Hello");
    let seq: Vec<u64> = text
        .iter()
        .map(|(_, d)| d["sequence_number"].as_u64().unwrap())
        .collect();
    assert!(seq.windows(2).all(|w| w[0] + 1 == w[1]), "{seq:?}");
    assert!(mock.requests().iter().all(|r| r.is_responses()));
}

fn settings(base_url: &str, wire_api: WireApi) -> ClientSettings {
    ClientSettings {
        base_url: base_url.to_string(),
        api_key: None,
        api_key_env: "SQUAD_TEST_API_KEY".to_string(),
        request_timeout: Duration::from_secs(20),
        idle_timeout: Duration::from_secs(5),
        max_retries: 2,
        retry_base: Duration::from_millis(10),
        wire_api,
        wires: Vec::new(),
        protocols: Default::default(),
    }
}

fn client(mock: &MockServer) -> OpenAiClient {
    OpenAiClient::new(settings(&mock.base_url(), WireApi::Responses)).unwrap()
}

fn request() -> ChatRequest {
    ChatRequest {
        model: "test-model".to_string(),
        system_prompt: "You are a coder.".to_string(),
        history: vec![HistoryItem::user("list the files")].into(),
        tools: vec![ToolSpec {
            name: "list_files".to_string(),
            description: "List files".to_string(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            freeform: None,
        }]
        .into(),
    }
}

type Seen = Arc<Mutex<Vec<ModelProgress>>>;

async fn call(
    client: &OpenAiClient,
    req: &ChatRequest,
) -> (Result<::squad::model::ChatResponse, ModelError>, Seen) {
    let seen: Seen = Arc::default();
    let sink = seen.clone();
    let progress = move |p: ModelProgress| sink.lock().unwrap().push(p);
    let r = client
        .stream_chat(req, &progress, &CancellationToken::new())
        .await;
    (r, seen)
}

#[tokio::test]
async fn text_answer_with_usage_and_a_stateless_request() {
    let mock = MockServer::start().await;
    mock.push(
        MockResponse::text_deltas(["Two ", "files."])
            .with_usage(11, 3)
            .with_cached(8),
    );
    let (r, seen) = call(&client(&mock), &request()).await;
    let r = r.unwrap();
    assert_eq!(r.text, "Two files.");
    assert_eq!(
        r.usage,
        Some(TokenUsage {
            prompt_tokens: 11,
            completion_tokens: 3,
            cached_tokens: 8,
        })
    );
    let deltas: Vec<_> = seen
        .lock()
        .unwrap()
        .iter()
        .filter_map(|p| match p {
            ModelProgress::TextDelta(t) => Some(t.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, ["Two ", "files."]);
    let req = &mock.requests()[0];
    assert!(req.is_responses());
    let body = &req.body;
    assert_eq!(body["store"], false);
    assert_eq!(body["stream"], true);
    assert_eq!(body["instructions"], "You are a coder.");
    assert_eq!(
        body["input"],
        json!([{"type": "message", "role": "user", "content": "list the files"}])
    );
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(body["tools"][0]["name"], "list_files");
    assert!(body.get("messages").is_none() && body.get("include").is_none());
}

#[tokio::test]
async fn a_call_split_over_many_deltas_and_two_parallel_calls() {
    let mock = MockServer::start().await;
    let long = json!({"path": "src/very/deep/module/file_with_a_long_name.rs"}).to_string();
    mock.push(MockResponse::tool_call("c1", "read_file", &long).with_arg_fragment(2));
    mock.push(MockResponse::tool_calls(vec![
        MockToolCall::new("p1", "read_file", r#"{"path":"a"}"#),
        MockToolCall::new("p2", "list_files", r#"{"path":"."}"#),
    ]));
    let c = client(&mock);
    let (r, seen) = call(&c, &request()).await;
    let r = r.unwrap();
    assert_eq!(r.tool_calls.len(), 1);
    assert_eq!(r.tool_calls[0].id, "c1");
    assert_eq!(r.tool_calls[0].arguments, long);
    assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
    assert!(seen.lock().unwrap().len() > 20, "every event is progress");
    let (r, _) = call(&c, &request()).await;
    let calls: Vec<_> = r
        .unwrap()
        .tool_calls
        .into_iter()
        .map(|c| (c.id, c.name, c.arguments))
        .collect();
    assert_eq!(
        calls,
        [
            ("p1".into(), "read_file".into(), r#"{"path":"a"}"#.into()),
            ("p2".into(), "list_files".into(), r#"{"path":"."}"#.into()),
        ]
    );
}

#[tokio::test]
async fn errors_mid_stream_are_retried_or_reported_as_on_the_chat_wire() {
    let mock = MockServer::start().await;
    mock.push(MockResponse::text("partial answer").stream_error_after(3, "server_error", "hiccup"));
    mock.push(MockResponse::text("whole answer"));
    let (r, seen) = call(&client(&mock), &request()).await;
    assert_eq!(r.unwrap().text, "whole answer");
    assert!(
        seen.lock()
            .unwrap()
            .iter()
            .any(|p| matches!(p, ModelProgress::Retrying { attempt: 2, .. }))
    );

    mock.push(MockResponse::text("x").failed_after(0, "invalid_prompt", "not allowed"));
    let (r, _) = call(&client(&mock), &request()).await;
    let e = r.unwrap_err();
    assert!(
        matches!(&e, ModelError::Http { status: 400, message } if message.contains("not allowed")),
        "{e:?}"
    );
    assert_eq!(
        mock.requests().len(),
        3,
        "a refused prompt is not sent again"
    );

    mock.push(MockResponse::text("x").failed_after(
        0,
        "context_length_exceeded",
        "Your input exceeds the context window of this model.",
    ));
    let (r, _) = call(&client(&mock), &request()).await;
    assert!(matches!(r, Err(ModelError::ContextOverflow { .. })));
    mock.push(MockResponse::error_body(
        400,
        json!({"error": {"message": "Your input exceeds the context window of this model.",
                         "type": "invalid_request_error", "code": "context_length_exceeded"}}),
    ));
    let (r, _) = call(&client(&mock), &request()).await;
    assert!(matches!(r, Err(ModelError::ContextOverflow { .. })));

    mock.push(MockResponse::text("cut at the li").incomplete());
    let (r, _) = call(&client(&mock), &request()).await;
    let r = r.unwrap();
    assert_eq!(
        (r.text.as_str(), r.finish_reason.as_deref()),
        ("cut at the li", Some("length"))
    );
    mock.push(MockResponse::error(429, "slow down").with_retry_after(0));
    mock.push(MockResponse::text("after the wait"));
    let (r, _) = call(&client(&mock), &request()).await;
    assert_eq!(r.unwrap().text, "after the wait");
}

#[tokio::test]
async fn each_model_goes_out_on_its_own_wire() {
    let mock = MockServer::start().await;
    mock.push_all([MockResponse::text("chat"), MockResponse::text("responses")]);
    let mut s = settings(&mock.base_url(), WireApi::Chat);
    s.wires = vec![("gpt-5-codex".to_string(), WireApi::Responses)];
    let c = OpenAiClient::new(s).unwrap();
    assert_eq!(call(&c, &request()).await.0.unwrap().text, "chat");
    let codex = ChatRequest {
        model: "gpt-5-codex".into(),
        ..request()
    };
    assert_eq!(call(&c, &codex).await.0.unwrap().text, "responses");
    let reqs = mock.requests();
    assert_eq!(reqs[0].path, "/v1/chat/completions");
    assert_eq!(reqs[1].path, "/v1/responses");
    assert_eq!(
        reqs[1].body["include"],
        json!(["reasoning.encrypted_content"])
    );
}

// ---------------------------------------------------------------------------------------
// The real binary with `--wire-api responses`.

/// The `function_call_output` items of a Responses request, as (call_id, output).
fn outputs(body: &Value) -> Vec<(String, String)> {
    body["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "function_call_output")
        .map(|i| {
            (
                i["call_id"].as_str().unwrap().to_string(),
                i["output"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_runs_the_tool_loop_on_responses_and_passes_reasoning_back() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("greet.sh", "echo \"Helo, $1\"\n");
    sb.workspace_config("[prices.\"gpt-4.1\"]\ninput_per_mtok = 2.0\noutput_per_mtok = 8.0\n");
    mock.push_all([
        MockResponse::tool_call("c1", "read_file", r#"{"path":"greet.sh"}"#)
            .with_reasoning("ENC-1")
            .with_usage(1000, 10),
        MockResponse::tool_call(
            "c2",
            "edit_file",
            r#"{"path":"greet.sh","old_text":"Helo","new_text":"Hello"}"#,
        )
        .with_arg_fragment(3)
        .with_usage(1100, 20),
        MockResponse::text("Fixed the typo.").with_usage(1200, 5),
    ]);
    let run = sb
        .exec(
            &mock,
            &[
                "--wire-api",
                "responses",
                "--approval",
                "auto",
                "--json",
                "fix the greeting",
            ],
        )
        .await;
    run.assert_ok();
    assert_eq!(sb.read("greet.sh"), "echo \"Hello, $1\"\n");
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3);
    assert!(
        reqs.iter().all(|r| r.is_responses()),
        "every call on /responses"
    );
    let read = outputs(&reqs[1].body);
    assert_eq!(read[0].0, "c1");
    assert!(read[0].1.contains("Helo"), "{read:?}");
    let input = reqs[1].body["input"].as_array().unwrap();
    let reasoning: Vec<&Value> = input.iter().filter(|i| i["type"] == "reasoning").collect();
    assert_eq!(reasoning.len(), 1, "{input:?}");
    assert_eq!(reasoning[0]["encrypted_content"], "ENC-1");
    assert_eq!(input.last().unwrap()["type"], "function_call_output");
    assert_eq!(outputs(&reqs[2].body).len(), 2);
    let events = run.events();
    let summary = events.last().unwrap();
    assert_eq!(summary["type"], "summary");
    let s = summary.to_string();
    assert!(
        s.contains("3300") || s.contains("3,300"),
        "usage counted: {s}"
    );
    assert_eq!(
        items_of_kind(&events, "assistant").last().unwrap()["text"],
        "Fixed the typo."
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_supervisor_fans_out_to_workers_on_responses() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_worker(body) {
            return MockResponse::tool_call(
                "r",
                "return_results",
                &good_result("looked").to_string(),
            );
        }
        match tool_count(body) {
            0 => MockResponse::tool_calls(vec![
                common::agents::call(
                    "s1",
                    "spawn_agent",
                    json!({"role_name": "code_reviewer", "task_prompt": "review a"}),
                ),
                common::agents::call(
                    "s2",
                    "spawn_agent",
                    json!({"role_name": "code_reviewer", "task_prompt": "review b"}),
                ),
            ]),
            2 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            _ => MockResponse::text("both reviewed"),
        }
    });
    let run = sb
        .exec(
            &mock,
            &[
                "--wire-api",
                "responses",
                "--approval",
                "auto",
                "review both",
            ],
        )
        .await;
    run.assert_ok();
    assert_eq!(run.stdout.trim(), "both reviewed");
    let reqs = mock.requests();
    assert!(reqs.iter().all(|r| r.is_responses()));
    let workers = reqs.iter().filter(|r| is_worker(&r.as_chat())).count();
    assert_eq!(workers, 2, "each worker made its one call");
    let last = &reqs.last().unwrap().body;
    let results = outputs(last);
    assert!(
        results.iter().any(|(_, o)| o.contains("looked")),
        "the results reached the supervisor: {results:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_resumes_on_the_other_wire_and_back() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("notes.txt", "remember me\n");
    sb.workspace_config("[provider]\nretry_base_ms = 10\n");
    mock.push_all([
        MockResponse::tool_call("n1", "read_file", r#"{"path":"notes.txt"}"#).with_reasoning("ENC"),
        MockResponse::text("The notes say: remember me"),
    ]);
    sb.exec(&mock, &["--wire-api", "responses", "read my notes"])
        .await
        .assert_ok();

    // Resumed on chat: the same conversation as messages, the reasoning left out.
    mock.push(MockResponse::text("Updated."));
    sb.exec(&mock, &["--resume", "last", "and now the README"])
        .await
        .assert_ok();
    let reqs = mock.requests();
    assert_eq!(reqs[2].path, "/v1/chat/completions");
    let t = transcript(&reqs[2].body);
    let roles: Vec<&str> = t.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "assistant", "user"]
    );
    assert!(t[3].1.contains("remember me"));
    assert!(!reqs[2].body.to_string().contains("ENC"));

    // And back on Responses: function calls, outputs and the reasoning from the log.
    mock.push(MockResponse::text("done"));
    sb.exec(
        &mock,
        &["--wire-api", "responses", "--resume", "last", "one more"],
    )
    .await
    .assert_ok();
    let reqs = mock.requests();
    let resumed = &reqs[3].body;
    assert!(reqs[3].is_responses());
    let kinds: Vec<&str> = resumed["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "message",
            "reasoning",
            "function_call",
            "function_call_output",
            "message",
            "message",
            "message",
            "message"
        ]
    );
    assert_eq!(
        resumed["input"][1]["encrypted_content"], "ENC",
        "reasoning kept in the log"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_context_overflow_on_responses_compacts_once_and_retries() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config("[context_windows]\n\"gpt-4.1\" = 20000\n[provider]\nretry_base_ms = 10\n");
    for (i, name) in ["ONE", "TWO", "THREE"].iter().enumerate() {
        let line = format!("FILE-{name}-MARKER {}\n", "x".repeat(60));
        sb.write(&format!("f{}.txt", i + 1), &line.repeat(7000 / line.len()));
    }
    let read = |i: usize| {
        MockResponse::tool_call(
            &format!("c{i}"),
            "read_file",
            &json!({"path": format!("f{i}.txt")}).to_string(),
        )
    };
    mock.push_all([
        read(1),
        read(2),
        read(3),
        MockResponse::text("x").failed_after(
            0,
            "context_length_exceeded",
            "Your input exceeds the context window of this model.",
        ),
        MockResponse::text("SUMMARY-TEXT"),
        MockResponse::text("done after compaction"),
    ]);
    let run = sb
        .exec(
            &mock,
            &["--wire-api", "responses", "--json", "TASK: read them"],
        )
        .await;
    run.assert_ok();
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 6, "one compaction, one retry");
    assert!(reqs[4].body.get("tools").is_none(), "the summary request");
    let retry = reqs[5].body["input"].to_string();
    assert!(retry.contains("SUMMARY-TEXT"));
    assert!(!retry.contains("FILE-ONE-MARKER"));
    assert!(retry.contains("FILE-THREE-MARKER"));
    let events = run.events();
    assert!(of_type(&events, "error").is_empty(), "{events:?}");
    assert_eq!(of_type(&events, "compacted").len(), 1);
    assert_eq!(
        run.stdout
            .trim()
            .lines()
            .last()
            .map(|l| l.contains("summary")),
        Some(true)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn copilots_first_request_fits_8_kb_on_both_wires() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.push_all([MockResponse::text("hello"), MockResponse::text("hello")]);
    sb.exec(&mock, &["hi"]).await.assert_ok();
    sb.exec(&mock, &["--wire-api", "responses", "hi"])
        .await
        .assert_ok();
    let reqs = mock.requests();
    let size = |i: usize| serde_json::to_string(&reqs[i].body).unwrap().len();
    let (chat, responses) = (size(0), size(1));
    println!("copilot's first request: chat {chat} B, responses {responses} B");
    assert!(reqs[1].is_responses());
    assert!(chat <= 8 * 1024, "chat: {chat} B");
    assert!(responses <= 8 * 1024, "responses: {responses} B");
}

#[tokio::test(flavor = "multi_thread")]
async fn doctor_names_each_wire_and_probes_it_only_when_asked() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config(
        "[provider]\napi_key_env = \"\"\n[models]\nsmart = { model = \"gpt-4.1\", wire_api = \"responses\" }\n",
    );
    let run = sb.run(Some(&mock), &["doctor"]).await;
    run.assert_ok();
    assert!(
        run.stdout
            .contains("· wire of gpt-4.1 (level base): responses (POST /responses); not tried"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("wire of gpt-4.1-mini (level fast): chat")
    );
    assert!(
        mock.requests().is_empty(),
        "no model request without --probe"
    );

    mock.push_all([MockResponse::text("OK"), MockResponse::text("OK")]);
    let run = sb.run(Some(&mock), &["doctor", "--probe"]).await;
    run.assert_ok();
    assert!(
        run.stdout
            .contains("✓ wire of gpt-4.1 (level base): responses (POST /responses): answers"),
        "{}",
        run.stdout
    );
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2);
    assert!(reqs[0].is_responses() && reqs[0].body["max_output_tokens"] == 16);
    assert_eq!(reqs[1].body["max_tokens"], 1);

    mock.push(MockResponse::error(404, "not found"));
    mock.push(MockResponse::text("OK"));
    let run = sb
        .run(Some(&mock), &["doctor", "--probe", "--wire-api", "chat"])
        .await;
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains("--wire-api responses"),
        "the fix names the other wire: {}",
        run.stdout
    );
}
