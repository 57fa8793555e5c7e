//! Prefix kept, cache hit (issue 38): each agent's request is its previous request plus
//! what is new — system prompt, tool list and earlier messages byte-identical — so a local
//! server's prompt cache serves everything but the new part. Checked on the request bodies
//! the mock receives, through the real binary: across tool results, a worker's result
//! arriving, squad's notices, and a resumed session.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::*;
use common::*;
use serde_json::{Value, json};

/// Where `next` stops extending `prev`, if it does not: `None` when the system prompt and
/// the tools are the same bytes and every message of `prev` is in `next` as it was (the
/// last one may have grown at its end: squad sends consecutive notices as one message).
fn broken_prefix(prev: &Value, next: &Value) -> Option<String> {
    if prev["tools"] != next["tools"] {
        let names = |b: &Value| -> Vec<String> {
            b["tools"]
                .as_array()
                .map(|t| {
                    t.iter()
                        .map(|t| t["function"]["name"].to_string())
                        .collect()
                })
                .unwrap_or_default()
        };
        return Some(format!(
            "the tool list changed: {:?} → {:?}",
            names(prev),
            names(next)
        ));
    }
    let (a, b) = (
        prev["messages"].as_array().unwrap(),
        next["messages"].as_array().unwrap(),
    );
    if b.len() < a.len() {
        return Some(format!("{} messages, then {}", a.len(), b.len()));
    }
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        if x == y {
            continue;
        }
        let grew = i + 1 == a.len()
            && x["role"] == y["role"]
            && content_text(&y["content"]).starts_with(&content_text(&x["content"]));
        if !grew {
            return Some(format!("message {i} changed:\n  was {x}\n  now {y}"));
        }
    }
    None
}

/// Each agent's requests, in order, keyed by its system prompt's first line and task.
fn by_agent(requests: &[common::RecordedRequest]) -> Vec<Vec<Value>> {
    let mut agents: Vec<(String, Vec<Value>)> = Vec::new();
    for r in requests {
        let messages = r.body["messages"].as_array().unwrap();
        let key = format!(
            "{}\n{}",
            content_text(&messages[0]["content"]),
            content_text(&messages[1]["content"])
        );
        match agents.iter_mut().find(|(k, _)| *k == key) {
            Some((_, list)) => list.push(r.body.clone()),
            None => agents.push((key, vec![r.body.clone()])),
        }
    }
    agents.into_iter().map(|(_, list)| list).collect()
}

fn assert_prefixes_kept(requests: &[common::RecordedRequest]) {
    for (n, list) in by_agent(requests).iter().enumerate() {
        for (i, pair) in list.windows(2).enumerate() {
            if let Some(why) = broken_prefix(&pair[0], &pair[1]) {
                panic!("agent {n}, request {} → {}: {why}", i + 1, i + 2);
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_agents_requests_extend_its_previous_one_across_results_notices_and_a_resume() {
    let mock = MockServer::start().await;
    // A repository: the worker's write gives it a worktree in the middle of its turn.
    let sb = Sandbox::new();
    sb.write("notes.md", "alpha\n");
    git(sb.ws(), &["init", "-q"]);
    git(sb.ws(), &["add", "-A"]);
    git(sb.ws(), &["commit", "-qm", "start"]);
    mock.set_responder(|body| {
        if is_worker(body) {
            return match tool_count(body) {
                0 => MockResponse::tool_call("r1", "read_file", r#"{"path": "notes.md"}"#),
                1 => MockResponse::tool_call(
                    "w1",
                    "write_file",
                    r#"{"path": "out.md", "content": "beta\n"}"#,
                ),
                _ => MockResponse::tool_call(
                    "ret",
                    "return_results",
                    &json!({"result": {"status": "success", "summary": "wrote out.md", "artifacts": [{"file_path": "out.md", "change_type": "created", "description": "the copy"}], "known_issues": []}}).to_string(),
                ),
            };
        }
        match tool_count(body) {
            0 => spawn("implementer", "copy notes.md to out.md as beta"),
            1 => MockResponse::tool_call("rd", "read_file", r#"{"path": "notes.md"}"#),
            2 => MockResponse::tool_call("wt", "wait_for_agents", "{}"),
            3 => MockResponse::text("out.md is written."),
            4 => MockResponse::tool_call("rd2", "read_file", r#"{"path": "out.md"}"#),
            _ => MockResponse::text("it says beta."),
        }
    });
    let run = sb
        .exec(&mock, &["--approval", "auto", "copy the notes"])
        .await;
    run.assert_ok();
    sb.exec(
        &mock,
        &[
            "--json",
            "--approval",
            "auto",
            "--resume",
            "last",
            "what is in out.md?",
        ],
    )
    .await
    .assert_ok();
    let requests = mock.requests();
    assert!(requests.len() >= 8, "{} requests", requests.len());
    assert_eq!(
        sb.read("out.md"),
        "beta\n",
        "merged from the worker's worktree"
    );
    assert_prefixes_kept(&requests);
}

#[tokio::test(flavor = "multi_thread")]
async fn siblings_first_requests_differ_only_in_their_task() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_worker(body) {
            return MockResponse::tool_call(
                "ret",
                "return_results",
                &good_result("done").to_string(),
            );
        }
        match tool_count(body) {
            0 => MockResponse::tool_calls(vec![
                call(
                    "s1",
                    "spawn_agent",
                    json!({"role_name": "agentic_coder", "task_prompt": "write a.txt"}),
                ),
                call(
                    "s2",
                    "spawn_agent",
                    json!({"role_name": "agentic_coder", "task_prompt": "write b.txt"}),
                ),
            ]),
            2 => MockResponse::tool_call("wt", "wait_for_agents", "{}"),
            _ => MockResponse::text("both done."),
        }
    });
    sb.exec(&mock, &["--json", "--approval", "auto", "two files"])
        .await
        .assert_ok();
    let firsts: Vec<Value> = mock
        .requests()
        .into_iter()
        .filter(|r| is_worker(&r.body) && tool_count(&r.body) == 0)
        .map(|r| r.body)
        .collect();
    assert_eq!(firsts.len(), 2);
    let (a, b) = (&firsts[0], &firsts[1]);
    assert_eq!(a["tools"].to_string(), b["tools"].to_string());
    let (ma, mb) = (
        a["messages"].as_array().unwrap(),
        b["messages"].as_array().unwrap(),
    );
    assert_eq!(ma.len(), mb.len());
    assert_eq!(ma[0], mb[0], "the system prompt is the same bytes");
    // The task message: the same up to the task itself.
    let (ta, tb) = (
        content_text(&ma[1]["content"]),
        content_text(&mb[1]["content"]),
    );
    let common = ta
        .bytes()
        .zip(tb.bytes())
        .take_while(|(x, y)| x == y)
        .count();
    let task_at = ta.find("write ").unwrap();
    assert!(
        common >= task_at,
        "the task message differs before the task, at byte {common}:\n{ta}\n---\n{tb}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_personas_system_prompt_and_tools_are_the_same_bytes_in_every_workspace() {
    let mock = MockServer::start().await;
    for _ in 0..2 {
        mock.push(MockResponse::text("hello"));
        let sb = Sandbox::new();
        sb.exec(&mock, &["say hello"]).await.assert_ok();
    }
    let reqs = mock.requests();
    let (a, b) = (&reqs[0].body, &reqs[1].body);
    assert_eq!(a["tools"], b["tools"]);
    assert_eq!(
        a["messages"][0], b["messages"][0],
        "no workspace path in the system prompt: the server's prompt cache serves the next \
         session, wherever it runs"
    );
}
