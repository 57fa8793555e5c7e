//! squad's slash commands in an editor: `squad acp` on the real binary offers them once a
//! session is open, and a prompt that is one runs it (against the mock model, in a real
//! git repository where it matters) instead of going to the persona as a message.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::acp::Client;
use common::agents::*;
use common::*;
use serde_json::{Value, json};

/// The text of the agent's message chunks since message `from` of the client's log.
fn said_since(c: &Client, from: usize) -> String {
    c.seen[from..]
        .iter()
        .filter(|m| {
            m["method"] == "session/update"
                && m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
        })
        .filter_map(|m| m["params"]["update"]["content"]["text"].as_str())
        .collect()
}

/// Sends `text` as prompt `id`; the stop reason and what squad said meanwhile.
async fn run(c: &mut Client, id: u64, session: &str, text: &str) -> (Value, String) {
    let from = c.seen.len();
    c.prompt(id, session, text).await;
    let done = c.response(id).await;
    (done["result"]["stopReason"].clone(), said_since(c, from))
}

async fn open(sb: &Sandbox, mock: &MockServer) -> (Client, String) {
    let mut c = Client::start(sb, mock, &["--approval", "auto"]);
    c.initialize().await;
    let session = c.new_session(sb).await;
    (c, session)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_commands_are_offered_after_the_session_opens() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    let (mut c, session) = open(&sb, &mock).await;
    let offered = c
        .until(|m| m["params"]["update"]["sessionUpdate"] == "available_commands_update")
        .await;
    assert_eq!(offered["params"]["sessionId"], session);
    let names: Vec<&str> = offered["params"]["update"]["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["goal", "review", "compact", "budget", "model", "merge"]
    );
    let goal = &offered["params"]["update"]["availableCommands"][0];
    assert_eq!(goal["input"]["hint"], "TEXT --check CMD", "{goal}");
    // The session's answer came first: the client knew the session it is about.
    let answer_at = c.seen.iter().position(|m| m["id"] == 1).unwrap();
    let offer_at = c.seen.iter().position(|m| *m == offered).unwrap();
    assert!(answer_at < offer_at);
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn budget_and_model_are_set_without_a_model_call_and_a_wrong_one_says_its_usage() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    let (mut c, session) = open(&sb, &mock).await;
    let (reason, said) = run(&mut c, 2, &session, "/budget 5").await;
    assert_eq!(reason, "end_turn");
    assert_eq!(said, "The session's cost limit is now $5.00.");
    let (reason, said) = run(&mut c, 3, &session, "/model gpt-4.1-mini").await;
    assert_eq!(reason, "end_turn");
    assert_eq!(said, "The persona uses gpt-4.1-mini from now on.");
    let (reason, said) = run(&mut c, 4, &session, "/budget lots").await;
    assert_eq!(reason, "end_turn");
    assert!(said.starts_with("usage: /budget"), "{said}");
    assert!(mock.requests().is_empty(), "no command reached the model");

    // An ordinary message still goes to the persona, now on the model just set.
    mock.push(MockResponse::text("hello"));
    let (reason, said) = run(&mut c, 5, &session, "/etc/hosts looks odd").await;
    assert_eq!(reason, "end_turn");
    assert_eq!(said, "hello");
    let body = &mock.requests()[0].body;
    assert_eq!(body["model"], "gpt-4.1-mini");
    let asked = transcript(body).last().unwrap().1.clone();
    assert!(asked.contains("/etc/hosts looks odd"), "{asked}");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn review_says_its_findings_or_why_it_could_not_start() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    let (mut c, session) = open(&sb, &mock).await;
    let (reason, said) = run(&mut c, 2, &session, "/review").await;
    assert_eq!(reason, "end_turn");
    assert!(
        said.starts_with("squad: review:") && said.contains("git"),
        "no repository is said: {said}"
    );
    c.close().await;

    git(sb.ws(), &["init", "-q", "-b", "main"]);
    sb.write("a.txt", "one\n");
    git(sb.ws(), &["add", "."]);
    git(sb.ws(), &["commit", "-q", "-m", "a"]);
    let (mut c, session) = open(&sb, &mock).await;
    let (reason, said) = run(&mut c, 2, &session, "/review").await;
    assert_eq!(reason, "end_turn");
    assert_eq!(
        said, "Review: no findings.",
        "nothing changed, nothing found"
    );
    let (reason, said) = run(&mut c, 3, &session, "/review yesterday").await;
    assert_eq!(reason, "end_turn");
    assert!(said.starts_with("usage: /review"), "{said}");
    assert!(mock.requests().is_empty());
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn goal_works_until_its_check_passes_and_clear_stops_it() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config("[verify]\nenabled = false\n");
    mock.set_responder(|body| match tool_count(body) {
        0 => MockResponse::tool_call(
            "w1",
            "write_file",
            &json!({"path": "done.txt", "content": "yes\n"}).to_string(),
        ),
        _ => MockResponse::text("done.txt is there"),
    });
    let (mut c, session) = open(&sb, &mock).await;
    let (reason, said) = run(
        &mut c,
        2,
        &session,
        "/goal make done.txt --check test -f done.txt",
    )
    .await;
    assert_eq!(reason, "end_turn");
    assert!(said.contains("done.txt is there"), "{said}");
    assert_eq!(sb.read("done.txt"), "yes\n");
    let first = transcript(&mock.requests()[0].body);
    let asked = &first.last().unwrap().1;
    assert!(
        asked.contains("make done.txt") && asked.contains("test -f done.txt"),
        "the persona is given the goal and its check: {asked}"
    );
    // Met, so ended: there is no goal left to clear.
    let (reason, said) = run(&mut c, 3, &session, "/goal clear").await;
    assert_eq!(reason, "end_turn");
    assert_eq!(said, "squad: goal: no goal is set");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn compact_on_a_short_conversation_says_there_is_nothing_to_compact() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    let (mut c, session) = open(&sb, &mock).await;
    let (reason, said) = run(&mut c, 2, &session, "/compact").await;
    assert_eq!(reason, "end_turn");
    assert!(said.starts_with("/compact:"), "{said}");
    assert!(mock.requests().is_empty());
    c.close().await;
}

/// A repository with an off-by-one written over a committed `src/sum.rs`.
fn planted_bug() -> Sandbox {
    let sb = Sandbox::new();
    git(sb.ws(), &["init", "-q", "-b", "main"]);
    sb.write("src/sum.rs", "pub fn sum(v: &[u32]) -> u32 {\n    let mut t = 0;\n    for i in 0..v.len() {\n        t += v[i];\n    }\n    t\n}\n");
    git(sb.ws(), &["add", "."]);
    git(sb.ws(), &["commit", "-q", "-m", "sum"]);
    sb.write("src/sum.rs", "pub fn sum(v: &[u32]) -> u32 {\n    let mut t = 0;\n    for i in 0..=v.len() {\n        t += v[i];\n    }\n    t\n}\n");
    sb
}

#[tokio::test(flavor = "multi_thread")]
async fn review_says_each_checked_finding_with_its_place_and_severity() {
    let mock = MockServer::start().await;
    let sb = planted_bug();
    mock.set_responder(|_| {
        let finding = json!({"file": "src/sum.rs", "line": 3, "severity": "high",
            "title": "Off-by-one: the loop reads past the end of v",
            "body": "the last pass reads v[v.len()]", "quote": "for i in 0..=v.len() {"});
        MockResponse::text(&format!(
            "```json\n{}\n```",
            json!({ "findings": [finding] })
        ))
    });
    let (mut c, session) = open(&sb, &mock).await;
    let (reason, said) = run(&mut c, 2, &session, "/review").await;
    assert_eq!(reason, "end_turn");
    assert!(
        said.starts_with("Review: 1 finding(s)."),
        "one, merged: {said}"
    );
    assert!(
        said.contains("- **high** `src/sum.rs:3` Off-by-one: the loop reads past the end of v")
            && said.contains("the last pass reads v[v.len()]"),
        "{said}"
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_review_no_reviewer_answered_says_so_rather_than_no_findings() {
    let mock = MockServer::start().await;
    let sb = planted_bug();
    mock.set_responder(|_| MockResponse::text("Looks fine to me."));
    let (mut c, session) = open(&sb, &mock).await;
    let (reason, said) = run(&mut c, 2, &session, "/review").await;
    assert_eq!(reason, "end_turn");
    assert!(
        said.starts_with("Review: no reviewer could answer (review:"),
        "{said}"
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn merge_names_a_worker_or_says_why_not_without_a_model_call() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    let (mut c, session) = open(&sb, &mock).await;
    let (reason, said) = run(&mut c, 2, &session, "/merge").await;
    assert_eq!(reason, "end_turn");
    assert!(said.starts_with("usage: /merge"), "{said}");
    // Outside git no worker has a worktree, and a name that is no worker is told so.
    let (reason, said) = run(&mut c, 3, &session, "/merge nobody").await;
    assert_eq!(reason, "end_turn");
    assert!(
        said.starts_with("squad: merge:") && said.contains("no worker `nobody`"),
        "{said}"
    );
    assert!(mock.requests().is_empty(), "no command reached the model");
    c.close().await;
}
