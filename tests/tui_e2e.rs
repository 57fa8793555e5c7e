//! The real `squad` binary in a pseudo-terminal against the mock model server: what a
//! person types, and what they see.

mod common;

use common::pty::Tui;
use common::*;
use serde_json::json;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread")]
async fn prompt_streams_an_answer_and_ctrl_c_twice_restores_the_terminal() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.push(
        MockResponse::text_deltas(["The answer ", "is ", "**forty-two**."])
            .with_chunk_delay(Duration::from_millis(50)),
    );
    let mut tui = Tui::spawn(&sb, &mock.base_url(), &[], 30, 100);
    tui.wait_text("copilot").await;
    assert!(tui.alternate_screen(), "the TUI draws on the alternate screen");
    tui.type_text("what is the answer?").await;
    tui.enter().await;
    let screen = tui.wait_text("forty-two").await;
    assert!(screen.contains("what is the answer?"));
    let body = &mock.requests()[0].body;
    assert_eq!(transcript(body).last().unwrap().1, "what is the answer?");

    tui.send(b"\x03");
    tokio::time::sleep(Duration::from_millis(100)).await;
    tui.send(b"\x03");
    let status = tui.wait_exit(Duration::from_secs(10)).await.expect("squad exits");
    assert!(status.success(), "{status:?}");
    assert!(!tui.alternate_screen(), "left the alternate screen");
    assert!(!tui.cursor_hidden(), "cursor visible again");
}

#[tokio::test(flavor = "multi_thread")]
async fn approving_with_y_changes_the_file_and_n_refuses() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("notes.txt", "old line\n");
    mock.push_all([
        MockResponse::tool_call(
            "e1",
            "edit_file",
            &json!({"path": "notes.txt", "old_text": "old line", "new_text": "new line"}).to_string(),
        ),
        MockResponse::text("Edited."),
        MockResponse::tool_call(
            "w1",
            "write_file",
            &json!({"path": "other.txt", "content": "nope"}).to_string(),
        ),
        MockResponse::text("Fine, I will not."),
    ]);
    let tui = Tui::spawn(&sb, &mock.base_url(), &[], 30, 100);
    tui.wait_text("copilot").await;
    tui.type_text("edit my notes").await;
    tui.enter().await;
    let screen = tui.wait_text("+new line").await;
    assert!(screen.contains("-old line"), "{screen}");
    // Keys typed in the first moments of a dialog are ignored (typed-ahead protection).
    tokio::time::sleep(::squad::tui::APPROVAL_GUARD + Duration::from_millis(100)).await;
    tui.send(b"y");
    tui.wait_text("Edited.").await;
    assert_eq!(sb.read("notes.txt"), "new line\n");

    tui.type_text("write another").await;
    tui.enter().await;
    tui.wait_text("other.txt").await;
    tokio::time::sleep(::squad::tui::APPROVAL_GUARD + Duration::from_millis(100)).await;
    tui.send(b"n");
    tui.wait_text("Fine, I will not.").await;
    assert!(!sb.ws().join("other.txt").exists());
    let refused = tool_messages(&mock.requests()[3].body);
    assert!(refused.last().unwrap().1.contains("refused"), "{refused:?}");
}
