//! The text tool protocol (`tool_protocol = "text"`, issue 49 part 2): no `tools` in the
//! request, the tool list and past calls written into the messages, calls read from the
//! reply's text; through the real client and the real `squad exec` against the loopback mock.
//!
//! One test checks the prompt bytes against llama.cpp's own renderer: it runs only when
//! `SQUAD_TEST_TEMPLATE_URL` names a llama-server started with the fenced template
//! (`../shared/real-llm`, `eval "$(../shared/real-llm/serve.sh)"`, then
//! `SQUAD_TEST_TEMPLATE_URL=${BASE_URL%/v1}`), and `SQUAD_TEST_STOCK_URL` optionally one with
//! the model's own template (`TEMPLATE=native`); otherwise it says so and passes.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use ::squad::config::ToolProtocol;
use ::squad::model::families::Protocols;
use ::squad::model::{ChatRequest, ClientSettings, ModelClient, OpenAiClient, ToolSpec, WireApi};
use ::squad::protocol::{HistoryItem, ToolCall};
use common::*;
use serde_json::{Value, json};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn settings(base_url: &str, default: ToolProtocol) -> ClientSettings {
    ClientSettings {
        base_url: base_url.to_string(),
        api_key: None,
        api_key_env: "SQUAD_TEST_API_KEY".to_string(),
        request_timeout: Duration::from_secs(20),
        idle_timeout: Duration::from_secs(5),
        max_retries: 0,
        retry_base: Duration::from_millis(10),
        wire_api: WireApi::Chat,
        wires: Vec::new(),
        protocols: Protocols {
            default,
            declared: Vec::new(),
        },
    }
}

fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "read_file".into(),
            description: "Read a file of the workspace — its text, “as is”.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "relative to the workspace"},
                    "limit": {"type": "integer", "minimum": 1}
                },
                "required": ["path"]
            }),
            freeform: None,
        },
        ToolSpec {
            name: "write_file".into(),
            description: "Write a file.\nReplaces it whole.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "content": {"type": "string"},
                    "mode": {"type": "string", "enum": ["create", "overwrite"]}
                },
                "required": ["path", "content"]
            }),
            freeform: None,
        },
        ToolSpec {
            name: "list_agents".into(),
            description: "List the team.".into(),
            parameters: json!({"type": "object", "properties": {}}),
            freeform: None,
        },
    ]
}

/// A conversation with every kind of turn: words, calls with and without words, a result
/// with quotes and newlines, two results in a row, a notice after them, a call whose
/// arguments hold nested values and a float.
fn conversation() -> ChatRequest {
    let call = |id: &str, name: &str, arguments: &str| ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    };
    ChatRequest {
        model: "qwen2.5-coder-1.5b-instruct".into(),
        system_prompt: "You are squad's persona. Do the work with your tools.".into(),
        history: vec![
            HistoryItem::user("Fix calc.py so the test passes."),
            HistoryItem::Assistant {
                text: String::new(),
                tool_calls: vec![call("c1", "read_file", r#"{"path": "calc.py", "limit": 40}"#)],
                reasoning: Vec::new(),
            },
            HistoryItem::ToolResult {
                call_id: "c1".into(),
                name: "read_file".into(),
                output: "def add(a, b):\n    return a - b  # \"wrong\"\n".into(),
                is_error: false,
            },
            HistoryItem::Assistant {
                text: "The sign is wrong. I will fix it and look at the team.".into(),
                tool_calls: vec![
                    call(
                        "c2",
                        "write_file",
                        "{\"path\":\"calc.py\",\"content\":\"def add(a, b):\\n    return a + b\\n\",\"mode\":\"overwrite\"}",
                    ),
                    call("c3", "list_agents", "{}"),
                ],
                reasoning: Vec::new(),
            },
            HistoryItem::ToolResult {
                call_id: "c2".into(),
                name: "write_file".into(),
                output: "wrote calc.py (2 lines)".into(),
                is_error: false,
            },
            HistoryItem::ToolResult {
                call_id: "c3".into(),
                name: "list_agents".into(),
                output: "[]".into(),
                is_error: false,
            },
            HistoryItem::notice("worker w1 finished: é ünïcode ✓"),
            HistoryItem::Assistant {
                text: String::new(),
                tool_calls: vec![call(
                    "c4",
                    "read_file",
                    r#"{"path": "notes/a b.md", "opts": {"deep": [1, 2.5, true, null]}}"#,
                )],
                reasoning: Vec::new(),
            },
            HistoryItem::ToolResult {
                call_id: "c4".into(),
                name: "read_file".into(),
                output: "tab\there".into(),
                is_error: true,
            },
            HistoryItem::Assistant {
                text: "Fixed: add returns a + b.".into(),
                tool_calls: vec![],
                reasoning: Vec::new(),
            },
            HistoryItem::user("Thanks. Now run the tests."),
        ]
        .into(),
        tools: tools().into(),
    }
}

/// The body the client sends for `request` under `protocol`, as the mock received it.
async fn body_of(request: &ChatRequest, protocol: ToolProtocol) -> Value {
    let mock = MockServer::start().await;
    mock.push(MockResponse::text("ok"));
    let client = OpenAiClient::new(settings(&mock.base_url(), protocol)).unwrap();
    client
        .stream_chat(request, &|_| {}, &CancellationToken::new())
        .await
        .unwrap();
    mock.requests()[0].body.clone()
}

#[tokio::test]
async fn in_text_the_request_has_no_tools_and_the_prompt_holds_them_and_the_calls() {
    let body = body_of(&conversation(), ToolProtocol::Text).await;
    assert!(body.get("tools").is_none(), "{body}");
    let said = transcript(&body);
    let roles: Vec<&str> = said.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "user",
            "assistant",
            "user",
            "user",
            "assistant",
            "user",
            "assistant",
            "user"
        ]
    );
    let system = &said[0].1;
    assert!(system.starts_with("You are squad's persona."), "{system}");
    assert!(
        system.contains("<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"read_file\", \"description\": \"Read a file of the workspace — its text, “as is”.\", \"parameters\": {\"type\": \"object\""),
        "{system}"
    );
    assert!(
        system.contains("\"enum\": [\"create\", \"overwrite\"]"),
        "{system}"
    );
    assert!(
        system.contains(
            "```json\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n```"
        )
    );
    assert_eq!(
        said[2].1,
        "```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"calc.py\", \"limit\": 40}}\n```"
    );
    assert_eq!(
        said[4].1,
        "The sign is wrong. I will fix it and look at the team.\n```json\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"calc.py\", \"content\": \"def add(a, b):\\n    return a + b\\n\", \"mode\": \"overwrite\"}}\n```\n```json\n{\"name\": \"list_agents\", \"arguments\": {}}\n```"
    );
    assert_eq!(
        said[3].1,
        "<tool_response>\ndef add(a, b):\n    return a - b  # \"wrong\"\n\n</tool_response>"
    );
    assert_eq!(
        said[5].1,
        "<tool_response>\nwrote calc.py (2 lines)\n</tool_response>\n<tool_response>\n[]\n</tool_response>"
    );
    assert_eq!(said[6].1, "[squad] worker w1 finished: é ünïcode ✓");
    for m in body["messages"].as_array().unwrap() {
        assert!(m.get("tool_calls").is_none() && m["role"] != "tool", "{m}");
    }
}

#[tokio::test]
async fn auto_is_text_only_for_a_measured_family_and_native_for_every_other_model() {
    let mut request = conversation();
    let body = body_of(&request, ToolProtocol::Auto).await;
    assert!(
        body.get("tools").is_none(),
        "qwen2.5-coder-1.5b on loopback"
    );
    for model in ["gpt-4.1", "qwen2.5-coder:7b", "llama3.2"] {
        request.model = model.into();
        let body = body_of(&request, ToolProtocol::Auto).await;
        assert_eq!(body["tools"].as_array().map(Vec::len), Some(3), "{model}");
        assert_eq!(body["messages"][0]["content"], request.system_prompt);
        assert!(
            body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["role"] == "tool"),
            "{model}"
        );
    }
    // Declared native wins over the table.
    request.model = "qwen2.5-coder-1.5b-instruct".into();
    let body = body_of(&request, ToolProtocol::Native).await;
    assert!(body.get("tools").is_some());
}

const ARGS: &str = r#"{"path": "out.txt", "content": "made\n"}"#;

/// Declared in the config for any model, or `auto` for a measured family on a local server.
const SETUPS: [(&str, &[&str]); 2] = [
    ("", &["--model", "qwen2.5-coder-1.5b-instruct"]),
    ("[provider]\ntool_protocol = \"text\"\n", &[]),
];

#[tokio::test(flavor = "multi_thread")]
async fn a_call_written_in_a_text_reply_runs_and_the_next_prompt_shows_it() {
    for (config, model) in SETUPS {
        let mock = MockServer::start().await;
        let sb = Sandbox::new();
        sb.workspace_config(config);
        // Words, the call, and a result the model made up before any came back.
        mock.push(MockResponse::text(&format!(
            "I will write it.\n```json\n{{\"name\": \"write_file\", \"arguments\": {ARGS}}}\n```\nDone, out.txt says made."
        )));
        mock.push(MockResponse::text("Wrote out.txt."));
        let mut args = model.to_vec();
        args.extend(["--approval", "auto", "write out.txt"]);
        let run = sb.exec(&mock, &args).await;
        run.assert_ok();
        let reqs = mock.requests();
        for r in &reqs {
            assert!(
                r.body.get("tools").is_none(),
                "{config}{model:?}: {}",
                r.body
            );
        }
        assert_eq!(reqs.len(), 2, "{config}{model:?}");
        assert_eq!(sb.read("out.txt"), "made\n");
        assert!(run.stdout.contains("Wrote out.txt."), "{}", run.stdout);
        let first = transcript(&reqs[0].body);
        assert!(
            first[0].1.contains("\"name\": \"write_file\"") && first[0].1.contains("# Tools"),
            "{first:?}"
        );
        let said = transcript(&reqs[1].body);
        let n = said.len();
        assert_eq!(said[n - 2].0, "assistant");
        assert_eq!(
            said[n - 2].1,
            "I will write it.\n```json\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"out.txt\", \"content\": \"made\\n\"}}\n```"
        );
        assert_eq!(said[n - 1].0, "user");
        let result = &said[n - 1].1;
        assert!(
            result.starts_with("<tool_response>\n") && result.ends_with("\n</tool_response>"),
            "{result}"
        );
        // A call by the protocol, not one written as text by mistake: no note says so.
        assert!(!result.contains("written as text"), "{result}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn doctor_says_each_models_protocol_and_why() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config(
        "[models]\nbase = \"qwen2.5-coder-1.5b-instruct\"\nfast = \"gpt-4.1-mini\"\n\
         smart = { model = \"big-model\", tool_protocol = \"text\" }\n",
    );
    mock.set_models(["qwen2.5-coder-1.5b-instruct", "gpt-4.1-mini", "big-model"]);
    let run = sb.run(Some(&mock), &["doctor"]).await;
    let out = &run.stdout;
    assert!(
        out.contains("tool protocol of qwen2.5-coder-1.5b-instruct: text (tools and calls written in the prompt, calls read from the reply); auto: Qwen2.5-Coder 0.5B and 1.5B Instruct on a local server is in the table of families measured to need it"),
        "{out}"
    );
    assert!(
        out.contains("tool protocol of gpt-4.1-mini: native (the API's tools and tool_calls); auto: the model is in no family measured to need text"),
        "{out}"
    );
    assert!(
        out.contains("tool protocol of big-model: text (tools and calls written in the prompt, calls read from the reply); set in the config"),
        "{out}"
    );
}

/// llama.cpp's rendering of `body` (`POST /apply-template`): the prompt the model reads.
async fn rendered(root: &str, body: &Value) -> String {
    let response = reqwest::Client::new()
        .post(format!("{root}/apply-template"))
        .json(body)
        .send()
        .await
        .unwrap();
    let status = response.status();
    let v: Value = response.json().await.unwrap();
    assert!(status.is_success(), "{status}: {v}");
    v["prompt"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn the_text_prompt_is_the_fenced_templates_bytes_on_llama_cpp() {
    let Some(fenced) = std::env::var("SQUAD_TEST_TEMPLATE_URL")
        .ok()
        .filter(|s| !s.is_empty())
    else {
        eprintln!(
            "skipped: no llama-server with the fenced template; start one with \
             `eval \"$(../shared/real-llm/serve.sh)\"` and set SQUAD_TEST_TEMPLATE_URL=${{BASE_URL%/v1}}"
        );
        return;
    };
    let fenced = fenced.trim_end_matches('/').trim_end_matches("/v1");
    let request = conversation();
    let native = body_of(&request, ToolProtocol::Native).await;
    let text = body_of(&request, ToolProtocol::Text).await;
    let want = rendered(fenced, &native).await;
    assert!(
        want.contains("```json\n{\"name\": \"write_file\""),
        "{want}"
    );
    let got = rendered(fenced, &text).await;
    assert_eq!(
        got, want,
        "squad's text prompt differs from the fenced template's"
    );
    // A conversation's first request (no calls yet), and one without tools.
    let mut first = conversation();
    first.history = vec![HistoryItem::user("hi")].into();
    let want = rendered(fenced, &body_of(&first, ToolProtocol::Native).await).await;
    let got = rendered(fenced, &body_of(&first, ToolProtocol::Text).await).await;
    assert_eq!(got, want);
    first.tools = Vec::new().into();
    let want = rendered(fenced, &body_of(&first, ToolProtocol::Native).await).await;
    let got = rendered(fenced, &body_of(&first, ToolProtocol::Text).await).await;
    assert_eq!(got, want);
    // squad's own prompt and tools, from a real `squad exec` (copilot's persona, its
    // seventeen tools): the request after a call, in either protocol.
    let mut bodies = Vec::new();
    for (config, reply) in [
        (
            "[provider]\ntool_protocol = \"native\"\n",
            MockResponse::tool_call("c1", "write_file", ARGS),
        ),
        (
            "[provider]\ntool_protocol = \"text\"\n",
            MockResponse::text(&format!(
                "```json\n{{\"name\": \"write_file\", \"arguments\": {ARGS}}}\n```"
            )),
        ),
    ] {
        let mock = MockServer::start().await;
        let sb = Sandbox::new();
        sb.workspace_config(config);
        mock.push(reply);
        mock.push(MockResponse::text("Wrote out.txt."));
        let args = [
            "--model",
            "qwen2.5-coder-1.5b-instruct",
            "--approval",
            "auto",
            "write out.txt",
        ];
        sb.exec(&mock, &args).await.assert_ok();
        bodies.push(mock.requests()[1].body.clone());
    }
    assert!(bodies[0].get("tools").is_some() && bodies[1].get("tools").is_none());
    let want = rendered(fenced, &bodies[0]).await;
    assert_eq!(
        rendered(fenced, &bodies[1]).await,
        want,
        "squad's own prompt"
    );
    // The stock template, given the text request, renders the same bytes: what the model
    // reads does not depend on the server's template.
    if let Some(stock) = std::env::var("SQUAD_TEST_STOCK_URL")
        .ok()
        .filter(|s| !s.is_empty())
    {
        let stock = stock.trim_end_matches('/').trim_end_matches("/v1");
        let want = rendered(fenced, &native).await;
        assert_eq!(rendered(stock, &text).await, want, "on the stock template");
    } else {
        eprintln!("stock template not checked: SQUAD_TEST_STOCK_URL is not set");
    }
}
