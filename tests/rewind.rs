//! Checkpoints before each user message and `squad exec --resume ID --rewind N`, on the
//! real binary against the mock model server (issue 39, part 1).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::Value;

fn write_call(id: &str, path: &str, content: &str) -> MockResponse {
    let args = serde_json::json!({ "path": path, "content": content }).to_string();
    MockResponse::tool_call(id, "write_file", &args)
}

fn seq_of(events: &[Value], pred: impl Fn(&Value) -> bool) -> u64 {
    events.iter().find(|e| pred(e)).unwrap()["seq"]
        .as_u64()
        .unwrap()
}

/// Two messages, each writing; returns the sandbox after both.
async fn two_messages(mock: &MockServer) -> Sandbox {
    let sb = Sandbox::new();
    sb.write("a.txt", "one\n");
    mock.push_all([
        write_call("w1", "a.txt", "two\n"),
        MockResponse::text("done 1"),
    ]);
    let run = sb
        .exec(mock, &["--approval", "auto", "--json", "make it two"])
        .await;
    run.assert_ok();
    let events = run.events();
    let started = of_type(&events, "checkpoint_started");
    assert_eq!(started.len(), 1, "one checkpoint per user message");
    assert_eq!(started[0]["message"], 1);
    assert_eq!(started[0]["history_len"], 0);
    let taken = of_type(&events, "checkpoint_taken");
    assert_eq!(taken.len(), 1);
    assert!(taken[0]["checkpoint"].is_string(), "{:?}", taken[0]);
    assert_eq!(taken[0]["agent_id"], started[0]["agent_id"]);
    // The write of the turn ran only after its checkpoint was taken.
    let taken_at = seq_of(&events, |e| e["type"] == "checkpoint_taken");
    let write_at = seq_of(&events, |e| {
        e["type"] == "item_added" && e["item"]["call_id"] == "w1"
    });
    assert!(
        taken_at < write_at,
        "checkpoint {taken_at}, write {write_at}"
    );
    assert_eq!(sb.read("a.txt"), "two\n");

    mock.push_all([
        write_call("w2", "a.txt", "three\n"),
        write_call("w3", "sub/b.txt", "new\n"),
        MockResponse::text("done 2"),
    ]);
    let run = sb
        .exec(
            mock,
            &["--approval", "auto", "--json", "--resume", "last", "more"],
        )
        .await;
    run.assert_ok();
    let started = of_type(&run.events(), "checkpoint_started").len();
    assert_eq!(started, 1);
    sb
}

#[tokio::test(flavor = "multi_thread")]
async fn rewind_puts_back_the_files_then_the_conversation() {
    let mock = MockServer::start().await;
    let sb = two_messages(&mock).await;
    assert_eq!(sb.read("sub/b.txt"), "new\n");
    // The user's git is not squad's: no repository was made in the workspace.
    assert!(!sb.ws().join(".git").exists());

    let run = sb
        .exec(
            &mock,
            &[
                "--resume",
                "last",
                "--rewind",
                "2",
                "--rewind-what",
                "files",
            ],
        )
        .await;
    run.assert_ok();
    assert!(run.stderr.contains("to before message 2"), "{}", run.stderr);
    assert_eq!(sb.read("a.txt"), "two\n");
    assert!(!sb.ws().join("sub").exists(), "the file made since is gone");

    let run = sb.exec(&mock, &["--resume", "last", "--rewind", "1"]).await;
    run.assert_ok();
    assert_eq!(sb.read("a.txt"), "one\n");
    assert!(
        run.stderr.contains("conversation: 0 items kept"),
        "{}",
        run.stderr
    );

    // The resumed persona hears only the new message: its conversation was rewound.
    mock.push(MockResponse::text("fresh"));
    sb.exec(&mock, &["--resume", "last", "start again"])
        .await
        .assert_ok();
    let t = transcript(&mock.requests().last().unwrap().body);
    let roles: Vec<&str> = t.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(roles, ["system", "user"], "{t:?}");
    assert_eq!(t[1].1, "start again");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_user_edit_since_is_named_and_kept_unless_forced() {
    let mock = MockServer::start().await;
    let sb = two_messages(&mock).await;
    sb.write("a.txt", "mine\n");
    let run = sb.exec(&mock, &["--resume", "last", "--rewind", "1"]).await;
    assert_ne!(run.code, 0);
    assert!(run.stderr.contains("a.txt"), "{}", run.stderr);
    assert!(run.stderr.contains("--force"), "{}", run.stderr);
    assert_eq!(sb.read("a.txt"), "mine\n", "nothing overwritten");
    assert_eq!(sb.read("sub/b.txt"), "new\n", "nothing changed at all");

    let run = sb.exec(&mock, &["--resume", "last", "--rewind", "9"]).await;
    assert_ne!(run.code, 0);
    assert!(run.stderr.contains("no user message 9"), "{}", run.stderr);

    let run = sb
        .exec(&mock, &["--resume", "last", "--rewind", "1", "--force"])
        .await;
    run.assert_ok();
    assert_eq!(sb.read("a.txt"), "one\n");
    assert!(!sb.ws().join("sub/b.txt").exists());
}
