//! `squad acp` driven as an editor would: JSON-RPC lines over the real binary's stdin and
//! stdout, against the mock model.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::mcp::everything;

use common::acp::Client;
use common::agents::*;
use common::*;
use serde_json::{Value, json};
use std::time::Duration;

/// Reads a.txt, then edits b.txt, then answers "done".
fn read_then_edit(mock: &MockServer) {
    mock.set_responder(|body| match tool_count(body) {
        0 => MockResponse::tool_call("r1", "read_file", &json!({"path": "a.txt"}).to_string()),
        1 => MockResponse::tool_call(
            "e1",
            "edit_file",
            &json!({"path": "b.txt", "old_text": "old", "new_text": "new"}).to_string(),
        ),
        _ => MockResponse::text("done"),
    });
}

fn setup() -> Sandbox {
    let sb = Sandbox::new();
    sb.write("a.txt", "hello\n");
    sb.write("b.txt", "old\n");
    sb
}

/// Runs the read-then-edit prompt, answers the permission request with `option`, and
/// returns the prompt's response.
async fn edit_with_answer(c: &mut Client, session: &str, option: &str) -> Value {
    c.prompt(2, session, "change b.txt").await;
    let ask = c
        .until(|m| m["method"] == "session/request_permission")
        .await;
    assert_eq!(ask["params"]["sessionId"], session);
    assert_eq!(ask["params"]["toolCall"]["toolCallId"], "e1", "{ask}");
    assert_eq!(ask["params"]["toolCall"]["kind"], "edit");
    let kinds: Vec<&str> = ask["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["allow_once", "allow_always", "reject_once"]);
    c.send(json!({"jsonrpc": "2.0", "id": ask["id"],
        "result": {"outcome": {"outcome": "selected", "optionId": option}}}))
        .await;
    c.response(2).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_prompt_streams_tool_calls_and_allow_once_lets_the_edit_land() {
    let mock = MockServer::start().await;
    let sb = setup();
    read_then_edit(&mock);
    let mut c = Client::start(&sb, &mock, &["--approval", "ask"]);
    let init = c.initialize().await;
    assert_eq!(init["result"]["protocolVersion"], 1);
    assert_eq!(init["result"]["agentCapabilities"]["loadSession"], true);
    let session = c.new_session(&sb).await;

    let done = edit_with_answer(&mut c, &session, "allow_once").await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert_eq!(sb.read("b.txt"), "new\n");

    let calls = c.updates("tool_call");
    let ids: Vec<&str> = calls
        .iter()
        .map(|u| u["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["r1", "e1"]);
    assert_eq!(calls[0]["kind"], "read");
    // The edit shows as a diff where it lands.
    let b = sb.ws().canonicalize().unwrap().join("b.txt");
    assert_eq!(
        calls[1]["content"][0],
        json!({"type": "diff", "path": b, "oldText": "old", "newText": "new"})
    );
    assert_eq!(calls[1]["locations"][0]["path"], json!(b));
    assert_eq!(
        calls[0]["locations"][0]["path"],
        sb.ws()
            .canonicalize()
            .unwrap()
            .join("a.txt")
            .to_str()
            .unwrap()
    );
    let finished: Vec<Value> = c
        .updates("tool_call_update")
        .into_iter()
        .filter(|u| u["status"] == "completed")
        .collect();
    assert_eq!(finished.len(), 2, "{finished:?}");
    assert!(
        finished[0]["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("hello")
    );
    let text: String = c
        .updates("agent_message_chunk")
        .iter()
        .map(|u| u["content"]["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(text, "done");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn reject_leaves_the_file_and_the_model_is_told() {
    let mock = MockServer::start().await;
    let sb = setup();
    read_then_edit(&mock);
    let mut c = Client::start(&sb, &mock, &["--approval", "ask"]);
    c.initialize().await;
    let session = c.new_session(&sb).await;
    let done = edit_with_answer(&mut c, &session, "reject").await;
    assert_eq!(done["result"]["stopReason"], "end_turn");
    assert_eq!(sb.read("b.txt"), "old\n");
    let last = mock.requests().last().unwrap().body.clone();
    let told = tool_messages(&last);
    assert!(
        told.iter()
            .any(|(id, text)| id == "e1" && text.contains("the user refused `edit_file`")),
        "{told:?}"
    );
    let failed: Vec<Value> = c
        .updates("tool_call_update")
        .into_iter()
        .filter(|u| u["toolCallId"] == "e1" && u["status"] == "failed")
        .collect();
    assert_eq!(failed.len(), 1);
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_messages_get_json_rpc_errors_and_the_agent_goes_on() {
    let mock = MockServer::start().await;
    let sb = setup();
    mock.set_responder(|_| MockResponse::text("hi"));
    let mut c = Client::start(&sb, &mock, &[]);
    // Before `initialize` nothing else is served (the protocol's order, kept by the crate).
    c.request(6, "session/new", json!({"cwd": sb.ws(), "mcpServers": []}))
        .await;
    let err = c.response(6).await;
    assert_eq!(err["error"]["code"], -32600, "{err}");
    let init = c.initialize().await;
    assert_eq!(init["result"]["protocolVersion"], 1);

    c.send_raw("{this is not json").await;
    let err = c.next().await;
    assert_eq!(err["error"]["code"], -32700, "{err}");
    assert_eq!(err["id"], Value::Null);

    c.request(7, "no/such_method", json!({})).await;
    let err = c.response(7).await;
    assert_eq!(err["error"]["code"], -32601, "{err}");

    c.send(json!({"jsonrpc": "2.0", "id": 8})).await;
    let err = c.next().await;
    assert_eq!(err["error"]["code"], -32600, "{err}");

    c.prompt(9, "no-such-session", "hello").await;
    let err = c.response(9).await;
    assert_eq!(err["error"]["code"], -32002, "{err}");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown session")
    );

    c.request(10, "session/new", json!({"mcpServers": []}))
        .await;
    let err = c.response(10).await;
    assert_eq!(err["error"]["code"], -32602, "{err}");

    // A cancel naming no session is a notification: no answer, nothing breaks.
    c.send(json!({"jsonrpc": "2.0", "method": "session/cancel",
        "params": {"sessionId": "no-such-session"}}))
        .await;

    // Still serving.
    let session = c.new_session(&sb).await;
    c.prompt(11, &session, "hello").await;
    let done = c.response(11).await;
    assert_eq!(done["result"]["stopReason"], "end_turn");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn with_the_logs_flooded_stdout_carries_only_json_rpc() {
    let mock = MockServer::start().await;
    let sb = setup();
    mock.set_responder(|body| match tool_count(body) {
        0 => MockResponse::tool_call(
            "c0",
            "run_command",
            &json!({"command": "seq 1 20000; seq 1 20000 >&2"}).to_string(),
        ),
        n @ 1..6 => MockResponse::tool_calls(vec![
            call(&format!("r{n}"), "read_file", json!({"path": "a.txt"})),
            call(&format!("g{n}"), "grep", json!({"pattern": "hello"})),
        ]),
        _ => MockResponse::text_deltas(["all ", "read"]),
    });
    let mut c = Client::start_with(&sb, &mock, &["--approval", "auto"], "trace");
    c.initialize().await;
    let session = c.new_session(&sb).await;
    c.prompt(2, &session, "read a lot").await;
    let done = c.response(2).await;
    assert_eq!(done["result"]["stopReason"], "end_turn");
    // `next` checked every line; the flood went to the log file.
    let calls = c.updates("tool_call");
    assert!(
        calls.len() >= 7,
        "{calls:?} {:?}",
        c.updates("agent_message_chunk")
    );
    c.close().await;
    let logs: u64 = std::fs::read_dir(sb.data_dir().join("logs"))
        .unwrap()
        .map(|f| f.unwrap().metadata().unwrap().len())
        .sum();
    assert!(logs > 10_000, "the log file has {logs} bytes");
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_stops_the_turn_with_cancelled() {
    let mock = MockServer::start().await;
    let sb = setup();
    mock.set_responder(|body| match tool_count(body) {
        0 => MockResponse::tool_call("r1", "read_file", &json!({"path": "a.txt"}).to_string()),
        _ => MockResponse::text("late").with_delay(Duration::from_secs(20)),
    });
    let mut c = Client::start(&sb, &mock, &["--approval", "auto"]);
    c.initialize().await;
    let session = c.new_session(&sb).await;
    c.prompt(2, &session, "read").await;
    c.until(|m| m["params"]["update"]["status"] == "completed")
        .await;
    c.send(json!({"jsonrpc": "2.0", "method": "session/cancel",
        "params": {"sessionId": session}}))
        .await;
    let done = c.response(2).await;
    assert_eq!(done["result"]["stopReason"], "cancelled", "{done}");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn session_load_replays_a_finished_session() {
    let mock = MockServer::start().await;
    let sb = setup();
    mock.set_responder(|body| match tool_count(body) {
        0 => MockResponse::tool_call("r1", "read_file", &json!({"path": "a.txt"}).to_string()),
        _ => MockResponse::text("a.txt says hello"),
    });
    let mut c = Client::start(&sb, &mock, &["--approval", "auto"]);
    c.initialize().await;
    let session = c.new_session(&sb).await;
    c.prompt(2, &session, "what is in a.txt?").await;
    c.response(2).await;
    c.close().await;

    let mut c = Client::start(&sb, &mock, &["--approval", "auto"]);
    c.initialize().await;
    c.request(
        3,
        "session/load",
        json!({"sessionId": session, "cwd": sb.ws(), "mcpServers": []}),
    )
    .await;
    let loaded = c.response(3).await;
    assert!(loaded.get("error").is_none(), "{loaded}");
    let users = c.updates("user_message_chunk");
    assert_eq!(users.len(), 1, "{users:?}");
    assert_eq!(users[0]["content"]["text"], "what is in a.txt?");
    assert_eq!(c.updates("tool_call")[0]["toolCallId"], "r1");
    let text: String = c
        .updates("agent_message_chunk")
        .iter()
        .map(|u| u["content"]["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(text, "a.txt says hello");
    assert!(
        c.seen
            .iter()
            .filter(|m| m["method"] == "session/update")
            .all(|m| m["params"]["sessionId"] == session)
    );

    // The loaded session goes on.
    c.prompt(4, &session, "thanks").await;
    let done = c.response(4).await;
    assert_eq!(done["result"]["stopReason"], "end_turn");

    c.request(
        5,
        "session/load",
        json!({"sessionId": "nope", "cwd": sb.ws(), "mcpServers": []}),
    )
    .await;
    let err = c.response(5).await;
    assert!(err.get("error").is_some(), "{err}");
    c.close().await;
}

/// The persona spawns workers for tasks A and B, waits, then answers; each worker reads
/// a.txt and returns "<task> done". Worker A's first call takes `a_delay`.
fn two_workers(mock: &MockServer, a_delay: Duration) {
    mock.set_responder(move |body| {
        if is_worker(body) {
            let task_a = body.to_string().contains("task A");
            let name = if task_a { "A" } else { "B" };
            return match tool_count(body) {
                0 => MockResponse::tool_call(
                    &format!("w{name}"),
                    "read_file",
                    &json!({"path": "a.txt"}).to_string(),
                )
                .with_delay(if task_a { a_delay } else { Duration::ZERO }),
                _ => MockResponse::tool_call(
                    "ret",
                    "return_results",
                    &good_result(&format!("{name} done")).to_string(),
                ),
            };
        }
        match tool_count(body) {
            0 => MockResponse::tool_calls(vec![
                call(
                    "s0",
                    "spawn_agent",
                    json!({"role_name": "agentic_coder", "task_prompt": "task A"}),
                ),
                call(
                    "s1",
                    "spawn_agent",
                    json!({"role_name": "agentic_coder", "task_prompt": "task B"}),
                ),
            ]),
            2 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            _ => MockResponse::text("both done"),
        }
    });
}

async fn initialize_with_subagents(c: &mut Client) {
    c.request(
        0,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {"subagents": {}}}),
    )
    .await;
    c.response(0).await;
}

/// The updates sent on one session id.
fn on_session(c: &Client, session: &str) -> Vec<Value> {
    c.seen
        .iter()
        .filter(|m| m["method"] == "session/update" && m["params"]["sessionId"] == session)
        .map(|m| m["params"]["update"].clone())
        .collect()
}

/// The child session announced for the worker of `task`.
fn child_of(c: &Client, task: &str) -> String {
    c.updates("subagent_update")
        .iter()
        .find(|u| u["description"] == task)
        .unwrap_or_else(|| panic!("no child session for {task}"))["sessionId"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn two_workers_are_two_child_sessions_with_their_own_updates() {
    let mock = MockServer::start().await;
    let sb = setup();
    two_workers(&mock, Duration::ZERO);
    let mut c = Client::start(&sb, &mock, &["--approval", "auto"]);
    initialize_with_subagents(&mut c).await;
    let session = c.new_session(&sb).await;
    c.prompt(2, &session, "fan out").await;
    let done = c.response(2).await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");

    let (a, b) = (child_of(&c, "task A"), child_of(&c, "task B"));
    assert_ne!(a, b);
    for (child, name) in [(&a, "A"), (&b, "B")] {
        let announce = on_session(&c, &session)
            .into_iter()
            .find(|u| u["sessionUpdate"] == "subagent_update" && &u["sessionId"] == child)
            .unwrap();
        assert_eq!(announce["title"], "agentic_coder");
        assert_eq!(announce["capabilities"]["cancel"], json!({}));
        let own = on_session(&c, child);
        assert_eq!(own[0]["sessionUpdate"], "session_message", "{own:?}");
        assert_eq!(own[0]["content"][0]["text"], format!("task {name}"));
        assert_eq!(own[0]["senderSessionId"], session.as_str());
        let to_parent = on_session(&c, &session)
            .into_iter()
            .find(|u| u["sessionUpdate"] == "session_message" && &u["senderSessionId"] == child)
            .unwrap();
        assert!(
            to_parent["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains(&format!("{name} done"))
        );
        assert!(
            own.iter()
                .any(|u| u["sessionUpdate"] == "tool_call" && u["toolCallId"] == format!("w{name}")),
            "{own:?}"
        );
        assert!(own.iter().any(|u| {
            u["sessionUpdate"] == "agent_message_chunk"
                && u["content"]["text"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("{name} done"))
        }));
        let last_state = on_session(&c, &session)
            .into_iter()
            .rfind(|u| u["sessionUpdate"] == "subagent_update" && &u["sessionId"] == child)
            .unwrap();
        assert_eq!(last_state["state"]["state"], "idle");
        assert_eq!(last_state["state"]["stopReason"], "end_turn");
    }
    // The workers' tool calls are not the persona's.
    assert!(
        !on_session(&c, &session)
            .iter()
            .any(|u| u["toolCallId"] == "wA" || u["toolCallId"] == "wB")
    );
    // Both results reached the persona.
    let last = mock
        .requests()
        .into_iter()
        .rfind(|r| !is_worker(&r.body))
        .unwrap();
    let told = last.body.to_string();
    assert!(told.contains("A done") && told.contains("B done"));
    // A child session takes no prompt of its own.
    c.prompt(3, &a, "hello").await;
    let err = c.response(3).await;
    assert_eq!(err["error"]["code"], -32602, "{err}");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn without_subagents_each_worker_is_one_tool_call_of_its_supervisor() {
    let mock = MockServer::start().await;
    let sb = setup();
    two_workers(&mock, Duration::ZERO);
    let mut c = Client::start(&sb, &mock, &["--approval", "auto"]);
    c.initialize().await;
    let session = c.new_session(&sb).await;
    c.prompt(2, &session, "fan out").await;
    let done = c.response(2).await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert!(c.updates("subagent_update").is_empty());
    let workers: Vec<Value> = c
        .updates("tool_call")
        .into_iter()
        .filter(|u| u["toolCallId"].as_str().unwrap().starts_with("agent-"))
        .collect();
    assert_eq!(workers.len(), 2, "{workers:?}");
    for w in &workers {
        let id = &w["toolCallId"];
        let updates: Vec<Value> = c
            .updates("tool_call_update")
            .into_iter()
            .filter(|u| &u["toolCallId"] == id)
            .collect();
        assert!(
            updates.iter().any(|u| u["status"] == "completed"),
            "{updates:?}"
        );
        let shown: String = updates
            .iter()
            .filter_map(|u| u["content"][0]["content"]["text"].as_str())
            .collect();
        assert!(shown.contains("read_file a.txt"), "{shown}");
        assert!(shown.contains(" done"), "{shown}");
    }
    assert!(
        c.seen
            .iter()
            .filter(|m| m["method"] == "session/update")
            .all(|m| m["params"]["sessionId"] == session)
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn cancelling_a_child_session_stops_only_that_worker() {
    let mock = MockServer::start().await;
    let sb = setup();
    two_workers(&mock, Duration::from_secs(20));
    let mut c = Client::start(&sb, &mock, &["--approval", "auto"]);
    initialize_with_subagents(&mut c).await;
    let session = c.new_session(&sb).await;
    c.prompt(2, &session, "fan out").await;
    c.until(|m| {
        m["params"]["update"]["sessionUpdate"] == "subagent_update"
            && m["params"]["update"]["description"] == "task A"
    })
    .await;
    let a = child_of(&c, "task A");
    c.send(json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": a}}))
        .await;
    let done = c.response(2).await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let b = child_of(&c, "task B");
    let last_state = |child: &str| {
        on_session(&c, &session)
            .into_iter()
            .rfind(|u| u["sessionUpdate"] == "subagent_update" && u["sessionId"] == child)
            .unwrap()["state"]
            .clone()
    };
    assert_eq!(last_state(&a)["stopReason"], "cancelled");
    assert_eq!(last_state(&b)["stopReason"], "end_turn");
    // Worker A never went on past its first (cancelled) model call.
    assert!(!mock.requests().iter().any(|r| is_worker(&r.body)
        && r.body.to_string().contains("task A")
        && tool_count(&r.body) > 0));
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_modes_are_the_roles_and_set_mode_hands_the_session_over() {
    let mock = MockServer::start().await;
    let sb = setup();
    mock.set_responder(|_| MockResponse::text("ok"));
    let mut c = Client::start(&sb, &mock, &["--approval", "auto"]);
    c.initialize().await;
    c.request(1, "session/new", json!({"cwd": sb.ws(), "mcpServers": []}))
        .await;
    let new = c.response(1).await;
    let session = new["result"]["sessionId"].as_str().unwrap().to_string();
    let modes = &new["result"]["modes"];
    assert_eq!(modes["currentModeId"], "copilot");
    let ids: Vec<&str> = modes["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&"copilot") && ids.contains(&"architect"),
        "{ids:?}"
    );
    // An agent role (another agent over ACP) is no persona to become.
    assert!(!ids.contains(&"opencode"), "{ids:?}");

    c.request(
        2,
        "session/set_mode",
        json!({"sessionId": session, "modeId": "architect"}),
    )
    .await;
    let set = c.response(2).await;
    assert!(set.get("error").is_none(), "{set}");
    // The switch may be told before or after the answer: both are in order.
    if c.updates("current_mode_update").is_empty() {
        c.until(|m| m["params"]["update"]["sessionUpdate"] == "current_mode_update")
            .await;
    }
    assert_eq!(
        c.updates("current_mode_update")[0]["currentModeId"],
        "architect"
    );
    c.prompt(3, &session, "hello").await;
    c.response(3).await;
    let prompt = mock
        .requests()
        .last()
        .unwrap()
        .system_prompt()
        .unwrap()
        .to_string();
    assert!(prompt.contains("architect"), "{prompt}");

    c.request(
        4,
        "session/set_mode",
        json!({"sessionId": session, "modeId": "nobody"}),
    )
    .await;
    let err = c.response(4).await;
    assert_eq!(err["error"]["code"], -32602, "{err}");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_file_tools_go_through_the_client_when_it_offers_fs() {
    let mock = MockServer::start().await;
    let sb = setup();
    read_then_edit(&mock);
    let mut c = Client::start(&sb, &mock, &["--approval", "auto"]);
    c.request(
        0,
        "initialize",
        json!({"protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": true}}}),
    )
    .await;
    c.response(0).await;
    let session = c.new_session(&sb).await;
    c.prompt(2, &session, "change b.txt").await;
    let ws = sb.ws().canonicalize().unwrap();
    let mut written = Vec::new();
    let done = loop {
        let m = c.next().await;
        match m["method"].as_str() {
            Some("fs/read_text_file") => {
                assert_eq!(m["params"]["sessionId"], session.as_str());
                let path = m["params"]["path"].as_str().unwrap();
                let content = if path == ws.join("a.txt").to_str().unwrap() {
                    "hello from the buffer\n"
                } else {
                    "old and unsaved\n"
                };
                c.send(json!({"jsonrpc": "2.0", "id": m["id"], "result": {"content": content}}))
                    .await;
            }
            Some("fs/write_text_file") => {
                written.push((
                    m["params"]["path"].as_str().unwrap().to_string(),
                    m["params"]["content"].as_str().unwrap().to_string(),
                ));
                c.send(json!({"jsonrpc": "2.0", "id": m["id"], "result": null}))
                    .await;
            }
            _ if m["id"] == 2 && m.get("method").is_none() => break m,
            _ => {}
        }
    };
    assert_eq!(done["result"]["stopReason"], "end_turn");
    assert_eq!(
        written,
        [(
            ws.join("b.txt").to_str().unwrap().to_string(),
            "new and unsaved\n".to_string()
        )]
    );
    assert_eq!(
        sb.read("b.txt"),
        "old\n",
        "the disk is the editor's to save"
    );
    let read = c
        .updates("tool_call_update")
        .into_iter()
        .find(|u| u["toolCallId"] == "r1" && u["status"] == "completed")
        .unwrap();
    assert!(
        read["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("hello from the buffer")
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_clients_mcp_servers_join_the_session() {
    let Some((node, index)) = everything("the_clients_mcp_servers_join_the_session") else {
        return;
    };
    let mock = MockServer::start().await;
    let sb = setup();
    mock.set_responder(|body| match tool_count(body) {
        0 => MockResponse::tool_call(
            "m1",
            "everything__echo",
            &json!({"message": "through the editor's server"}).to_string(),
        ),
        _ => MockResponse::text("echoed"),
    });
    let mut c = Client::start(&sb, &mock, &["--approval", "auto"]);
    c.initialize().await;
    c.request(
        1,
        "session/new",
        json!({"cwd": sb.ws(), "mcpServers": [{
            "name": "everything",
            "command": node,
            "args": [index, "stdio"],
            "env": [],
        }]}),
    )
    .await;
    let session = c.response(1).await["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    c.prompt(2, &session, "echo").await;
    let done = c.response(2).await;
    assert_eq!(done["result"]["stopReason"], "end_turn");
    // Up by the second request (the first may go before the server is): offered.
    let second = &mock.requests()[1].body;
    assert!(second["tools"].to_string().contains("everything__echo"));
    let result = c
        .updates("tool_call_update")
        .into_iter()
        .find(|u| u["toolCallId"] == "m1" && u["status"] == "completed")
        .unwrap();
    assert!(
        result.to_string().contains("through the editor's server"),
        "{result}"
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_board_is_the_plan_and_a_question_with_options_is_a_permission_request() {
    let mock = MockServer::start().await;
    let sb = setup();
    mock.set_responder(|body| match tool_count(body) {
        0 => MockResponse::tool_call(
            "p1",
            "plan_tasks",
            &json!({"tasks": [
                {"id": "t1", "title": "read the notes"},
                {"id": "t2", "title": "write the summary", "depends_on": ["t1"]},
            ]})
            .to_string(),
        ),
        1 => MockResponse::tool_call(
            "q1",
            "ask_user",
            &json!({"question": "Which style?", "options": ["short", "long"]}).to_string(),
        ),
        _ => MockResponse::text("fine"),
    });
    let mut c = Client::start(&sb, &mock, &["--approval", "auto"]);
    c.initialize().await;
    let session = c.new_session(&sb).await;
    c.prompt(2, &session, "plan it").await;
    let ask = c
        .until(|m| m["method"] == "session/request_permission")
        .await;
    assert_eq!(ask["params"]["toolCall"]["title"], "Which style?");
    let names: Vec<&str> = ask["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["short", "long"]);
    c.send(json!({"jsonrpc": "2.0", "id": ask["id"],
        "result": {"outcome": {"outcome": "selected", "optionId": "1"}}}))
        .await;
    let done = c.response(2).await;
    assert_eq!(done["result"]["stopReason"], "end_turn");
    let plan = c.updates("plan");
    let entries = plan.last().unwrap()["entries"].as_array().unwrap().clone();
    let titles: Vec<&str> = entries
        .iter()
        .map(|e| e["content"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["read the notes", "write the summary"]);
    assert!(entries.iter().all(|e| e["status"] == "pending"));
    let told = tool_messages(&mock.requests().last().unwrap().body);
    assert!(
        told.iter()
            .any(|(id, text)| id == "q1" && text.contains("long")),
        "{told:?}"
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_turn_stopped_by_max_iterations_ends_with_max_turn_requests() {
    let mock = MockServer::start().await;
    let sb = setup();
    for i in 0..5 {
        sb.write(&format!("f{i}.txt"), "x\n");
    }
    sb.workspace_config("[limits]\nmax_iterations = 2\n");
    mock.set_responder(|body| {
        let n = tool_count(body);
        MockResponse::tool_call(
            &format!("r{n}"),
            "read_file",
            &json!({ "path": format!("f{n}.txt") }).to_string(),
        )
    });
    let mut c = Client::start(&sb, &mock, &["--approval", "auto"]);
    c.initialize().await;
    let session = c.new_session(&sb).await;
    c.prompt(2, &session, "read everything").await;
    let done = c.response(2).await;
    assert_eq!(done["result"]["stopReason"], "max_turn_requests", "{done}");
    let text: String = c
        .updates("agent_message_chunk")
        .iter()
        .map(|u| u["content"]["text"].as_str().unwrap().to_string())
        .collect();
    assert!(text.contains("max_iterations"), "{text}");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_session_budget_ends_the_prompt_with_refusal_and_says_why() {
    let mock = MockServer::start().await;
    let sb = setup();
    sb.workspace_config("[limits]\nmax_session_cost_usd = 0.01\n");
    mock.set_responder(|body| match tool_count(body) {
        0 => MockResponse::tool_call("r1", "read_file", &json!({"path": "a.txt"}).to_string())
            .with_usage(4_000, 500),
        _ => MockResponse::text("never"),
    });
    let mut c = Client::start(&sb, &mock, &["--approval", "auto"]);
    c.initialize().await;
    let session = c.new_session(&sb).await;
    c.prompt(2, &session, "read a.txt").await;
    let done = c.response(2).await;
    assert_eq!(done["result"]["stopReason"], "refusal", "{done}");
    let last = c.updates("agent_message_chunk").last().unwrap().clone();
    assert!(
        last["content"]["text"]
            .as_str()
            .unwrap()
            .contains("session budget reached: $0.0120 of $0.01 spent"),
        "{last}"
    );
    // Still spent: the next prompt is refused too, and does not hang.
    c.prompt(3, &session, "go on").await;
    let again = c.response(3).await;
    assert_eq!(again["result"]["stopReason"], "refusal", "{again}");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn session_load_replays_the_workers_as_child_sessions() {
    let mock = MockServer::start().await;
    let sb = setup();
    two_workers(&mock, Duration::ZERO);
    let mut c = Client::start(&sb, &mock, &["--approval", "auto"]);
    initialize_with_subagents(&mut c).await;
    let session = c.new_session(&sb).await;
    c.prompt(2, &session, "fan out").await;
    c.response(2).await;
    c.close().await;

    let mut c = Client::start(&sb, &mock, &["--approval", "auto"]);
    initialize_with_subagents(&mut c).await;
    c.request(
        3,
        "session/load",
        json!({"sessionId": session, "cwd": sb.ws(), "mcpServers": []}),
    )
    .await;
    let loaded = c.response(3).await;
    assert!(loaded.get("error").is_none(), "{loaded}");
    for (task, name) in [("task A", "A"), ("task B", "B")] {
        let child = child_of(&c, task);
        let own = on_session(&c, &child);
        assert!(
            own.iter()
                .any(|u| u["sessionUpdate"] == "tool_call" && u["toolCallId"] == format!("w{name}")),
            "{own:?}"
        );
        let state = on_session(&c, &session)
            .into_iter()
            .rfind(|u| u["sessionUpdate"] == "subagent_update" && u["sessionId"] == child)
            .unwrap();
        assert_eq!(state["state"]["stopReason"], "end_turn");
    }
    let text: String = on_session(&c, &session)
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .map(|u| u["content"]["text"].as_str().unwrap().to_string())
        .collect();
    assert!(text.ends_with("both done"), "{text}");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_cut_at_the_output_limit_ends_with_max_tokens() {
    let mock = MockServer::start().await;
    let sb = setup();
    mock.set_responder(|body| {
        if body.to_string().contains("go on") {
            return MockResponse::text("the rest");
        }
        match tool_count(body) {
            0 => MockResponse::tool_call("r1", "read_file", &json!({"path": "a.txt"}).to_string()),
            // The model's output limit: chat finish_reason `length`.
            _ => MockResponse::text("a.txt says hel").incomplete(),
        }
    });
    let mut c = Client::start(&sb, &mock, &["--approval", "auto"]);
    c.initialize().await;
    let session = c.new_session(&sb).await;
    c.prompt(2, &session, "what is in a.txt?").await;
    let done = c.response(2).await;
    assert_eq!(done["result"]["stopReason"], "max_tokens", "{done}");
    let last = c.updates("agent_message_chunk").last().unwrap().clone();
    assert!(
        last["content"]["text"]
            .as_str()
            .unwrap()
            .contains("output limit"),
        "{last}"
    );
    // The next prompt, answered whole, ends as usual.
    c.prompt(3, &session, "go on").await;
    let again = c.response(3).await;
    assert_eq!(again["result"]["stopReason"], "end_turn", "{again}");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_stopped_by_its_token_budget_is_idle_with_max_tokens() {
    let mock = MockServer::start().await;
    let sb = setup();
    sb.workspace_config("[limits]\nmax_tokens_per_agent = 1000\n");
    mock.set_responder(|body| {
        if is_worker(body) {
            return MockResponse::tool_call(
                "w1",
                "read_file",
                &json!({"path": "a.txt"}).to_string(),
            )
            .with_usage(4_000, 500);
        }
        match tool_count(body) {
            0 => spawn("agentic_coder", "task A"),
            1 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            _ => MockResponse::text("the worker ran out"),
        }
    });
    let mut c = Client::start(&sb, &mock, &["--approval", "auto"]);
    initialize_with_subagents(&mut c).await;
    let session = c.new_session(&sb).await;
    c.prompt(2, &session, "fan out").await;
    let done = c.response(2).await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let child = child_of(&c, "task A");
    let state = on_session(&c, &session)
        .into_iter()
        .rfind(|u| u["sessionUpdate"] == "subagent_update" && u["sessionId"] == child)
        .unwrap();
    assert_eq!(state["state"]["state"], "idle", "{state}");
    assert_eq!(state["state"]["stopReason"], "max_tokens", "{state}");
    // One model call of the worker: the budget stopped it before a second.
    assert_eq!(
        mock.requests()
            .iter()
            .filter(|r| is_worker(&r.body))
            .count(),
        1
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_loop_stop_ends_the_prompt_with_refusal_and_says_why() {
    let mock = MockServer::start().await;
    let sb = setup();
    mock.set_responder(|body| {
        // What a small model does: the very same failing edit, whatever it is told.
        MockResponse::tool_call(
            &format!("e{}", tool_count(body)),
            "edit_file",
            &json!({"path": "a.txt", "old_text": "nowhere", "new_text": "x"}).to_string(),
        )
    });
    let mut c = Client::start(&sb, &mock, &["--approval", "auto"]);
    c.initialize().await;
    let session = c.new_session(&sb).await;
    c.prompt(2, &session, "fix a.txt").await;
    let done = c.response(2).await;
    assert_eq!(done["result"]["stopReason"], "refusal", "{done}");
    let last = c.updates("agent_message_chunk").last().unwrap().clone();
    let text = last["content"]["text"].as_str().unwrap();
    assert!(
        text.contains("squad stopped: loop: called edit_file 5 times"),
        "{last}"
    );
    assert_eq!(sb.read("a.txt"), "hello\n");
    c.close().await;
}

// ---------------------------------------------------------------------------------------
// Ready for the ACP registry

/// The registry lists only agents whose `initialize` names how to authenticate (at least
/// one `agent` or `terminal` method, each with an id and a name); the answer must also read
/// as the protocol's own `InitializeResponse`, and `authenticate` with a method it named
/// succeeds.
#[tokio::test(flavor = "multi_thread")]
async fn initialize_names_auth_methods_as_the_registry_requires() {
    use agent_client_protocol::v1::schema::InitializeResponse;
    let mock = MockServer::start().await;
    let sb = setup();
    let mut c = Client::start(&sb, &mock, &[]);
    let init = c.initialize().await;
    let result = &init["result"];
    serde_json::from_value::<InitializeResponse>(result.clone())
        .unwrap_or_else(|e| panic!("not an InitializeResponse ({e}): {result}"));
    let methods = result["authMethods"].as_array().expect("authMethods");
    assert!(!methods.is_empty(), "{result}");
    for m in methods {
        assert!(m["id"].as_str().is_some_and(|s| !s.is_empty()), "{m}");
        assert!(m["name"].as_str().is_some_and(|s| !s.is_empty()), "{m}");
        let kind = m.get("type").and_then(Value::as_str).unwrap_or("agent");
        assert!(kind == "agent" || kind == "terminal", "{m}");
    }
    let id = methods[0]["id"].clone();
    c.request(5, "authenticate", json!({ "methodId": id }))
        .await;
    let auth = c.response(5).await;
    assert!(auth.get("error").is_none(), "{auth}");
    c.close().await;
}

/// Every tool call's kind comes from its handler (list_files and search_files search,
/// run_tests executes, plan_tasks thinks); a permission request keeps the call's title and diff, and a granted
/// call is `in_progress` before it completes.
#[tokio::test(flavor = "multi_thread")]
async fn tool_kinds_come_from_the_handlers_and_a_granted_call_is_in_progress() {
    let mock = MockServer::start().await;
    let sb = setup();
    mock.set_responder(|body| match tool_count(body) {
        0 => MockResponse::tool_calls(vec![
            call("l1", "list_files", json!({"path": "."})),
            call("s1", "search_files", json!({"pattern": "hello"})),
        ]),
        2 => MockResponse::tool_calls(vec![
            call("t1", "run_tests", json!({})),
            call(
                "p1",
                "plan_tasks",
                json!({"tasks": [{"id": "look", "title": "look around"}]}),
            ),
        ]),
        4 => MockResponse::tool_call(
            "e1",
            "edit_file",
            &json!({"path": "b.txt", "old_text": "old", "new_text": "new"}).to_string(),
        ),
        _ => MockResponse::text("done"),
    });
    sb.workspace_config("[tools]\ntest_command = \"true\"\n");
    let mut c = Client::start(&sb, &mock, &["--approval", "ask"]);
    c.initialize().await;
    let session = c.new_session(&sb).await;
    c.prompt(2, &session, "look, test, edit").await;
    loop {
        let ask = c
            .until(|m| m["method"] == "session/request_permission")
            .await;
        let call = &ask["params"]["toolCall"];
        if call["toolCallId"] == "e1" {
            assert!(
                call.get("title").is_none(),
                "the call's title stays: {call}"
            );
            assert!(
                call.get("content").is_none(),
                "the call's diff stays: {call}"
            );
        }
        c.send(json!({"jsonrpc": "2.0", "id": ask["id"],
            "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}}}))
            .await;
        if call["toolCallId"] == "e1" {
            break;
        }
    }
    let done = c.response(2).await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let kinds: Vec<(String, String)> = c
        .updates("tool_call")
        .iter()
        .map(|u| {
            let s = |k: &str| u[k].as_str().unwrap_or_default().to_string();
            (s("toolCallId"), s("kind"))
        })
        .collect();
    for (id, kind) in [
        ("l1", "search"),
        ("s1", "search"),
        ("t1", "execute"),
        ("p1", "think"),
        ("e1", "edit"),
    ] {
        assert!(
            kinds.contains(&(id.to_string(), kind.to_string())),
            "{id} {kind}: {kinds:?}"
        );
    }
    let statuses: Vec<String> = c
        .updates("tool_call_update")
        .iter()
        .filter(|u| u["toolCallId"] == "e1")
        .filter_map(|u| u["status"].as_str().map(str::to_string))
        .collect();
    let running = statuses.iter().position(|s| s == "in_progress");
    let completed = statuses.iter().position(|s| s == "completed");
    assert!(
        running.is_some() && running < completed,
        "in_progress before completed: {statuses:?}"
    );
    c.close().await;
}

/// The registry's manifest (`registry/agent.json`) names this version and starts `squad acp`.
#[test]
fn the_registry_manifest_matches_this_build() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("registry/agent.json");
    let m: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    for key in ["id", "name", "version", "description", "license"] {
        assert!(m[key].as_str().is_some_and(|s| !s.is_empty()), "{key}");
    }
    let id = m["id"].as_str().unwrap();
    assert!(id.starts_with(|c: char| c.is_ascii_lowercase()));
    assert!(
        id.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    );
    assert_eq!(m["version"], env!("CARGO_PKG_VERSION"));
    // Every URL names the same repository (its owner is an explicit placeholder until the
    // project has a public home).
    let repository = m["repository"].as_str().unwrap();
    assert!(
        repository.starts_with("https://github.com/"),
        "{repository}"
    );
    let targets = m["distribution"]["binary"].as_object().unwrap();
    assert!(!targets.is_empty());
    for (target, t) in targets {
        let archive = t["archive"].as_str().unwrap();
        assert!(
            archive.starts_with(&format!("{repository}/releases/download/v")),
            "{target}: {archive}"
        );
        assert_eq!(t["args"], json!(["acp"]), "{target}");
        assert!(
            t["archive"]
                .as_str()
                .unwrap()
                .contains(env!("CARGO_PKG_VERSION"))
        );
    }
}
