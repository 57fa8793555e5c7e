//! The composer on the real binary in a pseudo-terminal: prompts recalled across sessions,
//! `@path` attachments, `!command`, and switching the model and approval mid-session.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::pty::Tui;
use common::*;
use std::time::Duration;

async fn quit(mut tui: Tui) {
    tui.send(b"\x03");
    tokio::time::sleep(Duration::from_millis(100)).await;
    tui.send(b"\x03");
    let status = tui
        .wait_exit(Duration::from_secs(10))
        .await
        .expect("squad exits");
    assert!(status.success(), "{status:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn up_recalls_a_prompt_typed_in_an_earlier_session_but_not_an_exec_prompt() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.push(MockResponse::text("Noted."));
    mock.push(MockResponse::text("Done from exec."));
    let tui = Tui::spawn(&sb, &mock.base_url(), &[], 30, 100);
    tui.wait_text("copilot").await;
    tui.type_text("remember the milk").await;
    tui.enter().await;
    tui.wait_text("Noted.").await;
    quit(tui).await;
    sb.exec(&mock, &["an exec prompt"]).await.assert_ok();

    let tui = Tui::spawn(&sb, &mock.base_url(), &[], 30, 100);
    tui.wait_text("copilot").await;
    assert!(!tui.screen().contains("remember the milk"));
    tui.send(b"\x1b[A");
    let screen = tui.wait_text("remember the milk").await;
    assert!(!screen.contains("an exec prompt"), "{screen}");
    // The recalled prompt is a draft: the first Ctrl+C clears it, then two quit.
    tui.send(b"\x03");
    tokio::time::sleep(Duration::from_millis(100)).await;
    quit(tui).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn at_path_completes_a_workspace_file_and_the_message_carries_its_content() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("src/notes.txt", "the secret is 42\n");
    sb.write("build/notes.txt", "generated\n");
    sb.write(".gitignore", "build/\n");
    mock.push(MockResponse::text("It says 42."));
    let tui = Tui::spawn(&sb, &mock.base_url(), &[], 30, 100);
    tui.wait_text("copilot").await;
    tui.type_text("summarize @nots").await;
    let screen = tui.wait_text("src/notes.txt").await;
    assert!(!screen.contains("build/notes.txt"), "ignored: {screen}");
    tui.send(b"\t");
    tui.wait_text("summarize @src/notes.txt").await;
    tui.enter().await;
    tui.wait_text("It says 42.").await;
    let body = &mock.requests()[0].body;
    let sent = transcript(body).last().unwrap().1.clone();
    assert!(sent.starts_with("summarize @src/notes.txt"), "{sent}");
    assert!(
        sent.contains("<file path=\"src/notes.txt\">\nthe secret is 42"),
        "{sent}"
    );
    assert!(!sent.contains("generated"), "{sent}");
    quit(tui).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bang_command_output_shows_and_the_persona_reads_it_next_turn() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("data.txt", "hello-from-the-file\n");
    mock.push(MockResponse::text("The file says hello."));
    let tui = Tui::spawn(&sb, &mock.base_url(), &[], 30, 100);
    tui.wait_text("copilot").await;
    tui.type_text("!cat data.txt; echo done-$((40+2))").await;
    tui.enter().await;
    tui.wait_text("done-42").await;
    assert!(mock.requests().is_empty(), "a command starts no turn");
    tui.type_text("what did it print?").await;
    tui.enter().await;
    tui.wait_text("The file says hello.").await;
    let body = &mock.requests()[0].body;
    let users: Vec<String> = transcript(body)
        .into_iter()
        .filter(|(role, _)| role == "user")
        .map(|(_, text)| text)
        .collect();
    let ran = users
        .iter()
        .find(|t| t.starts_with("!cat data.txt"))
        .unwrap_or_else(|| panic!("{users:?}"));
    assert!(ran.contains("exit code: 0"), "{ran}");
    assert!(ran.contains("hello-from-the-file\ndone-42"), "{ran}");
    quit(tui).await;
}

/// The status bar: the screen's last row.
fn status_bar(screen: &str) -> String {
    screen.lines().last().unwrap_or_default().to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn model_and_approval_switch_for_the_session_and_survive_a_resume() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.push_all([
        MockResponse::text("first answer"),
        MockResponse::text("second answer"),
    ]);
    let tui = Tui::spawn(&sb, &mock.base_url(), &[], 30, 100);
    tui.wait_text("copilot").await;
    tui.type_text("/model tiny-coder").await;
    tui.enter().await;
    tui.wait_for("the model in the status bar", |s| {
        status_bar(s).contains("tiny-coder")
    })
    .await;
    tui.type_text("/approval read-only").await;
    tui.enter().await;
    tui.wait_for("read-only in the status bar", |s| {
        status_bar(s).contains("read-only")
    })
    .await;
    tui.type_text("hello").await;
    tui.enter().await;
    tui.wait_text("first answer").await;
    assert_eq!(mock.requests()[0].body["model"], "tiny-coder");
    quit(tui).await;

    let tui = Tui::spawn(&sb, &mock.base_url(), &["--resume", "last"], 30, 100);
    let screen = tui.wait_text("first answer").await;
    let bar = status_bar(&screen);
    assert!(
        bar.contains("tiny-coder") && bar.contains("read-only"),
        "{screen}"
    );
    tui.type_text("again").await;
    tui.enter().await;
    tui.wait_text("second answer").await;
    assert_eq!(mock.requests()[1].body["model"], "tiny-coder");
    quit(tui).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn approval_auto_is_refused_where_there_is_no_sandbox() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    let env = [("SQUAD_SANDBOX_UNAVAILABLE", "1")];
    let tui = Tui::spawn_with_env(&sb, &mock.base_url(), &[], &env, 30, 100);
    tui.wait_text("copilot").await;
    tui.type_text("/approval auto").await;
    tui.enter().await;
    let screen = tui.wait_text("there is none here").await;
    assert!(status_bar(&screen).contains(" ask "), "{screen}");
    tui.type_text("/approval read-only").await;
    tui.enter().await;
    tui.wait_for("read-only in the status bar", |s| {
        status_bar(s).contains("read-only")
    })
    .await;
    quit(tui).await;
}
