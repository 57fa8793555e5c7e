//! The model client against the mock OpenAI-compatible server, over real HTTP.

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
