//! The real `squad` binary in a pseudo-terminal against the mock model server: what a
//! person types, and what they see.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::is_worker;
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
    assert!(
        tui.alternate_screen(),
        "the TUI draws on the alternate screen"
    );
    tui.type_text("what is the answer?").await;
    tui.enter().await;
    let screen = tui.wait_text("forty-two").await;
    assert!(screen.contains("what is the answer?"));
    let body = &mock.requests()[0].body;
    assert_eq!(transcript(body).last().unwrap().1, "what is the answer?");

    tui.send(b"\x03");
    tokio::time::sleep(Duration::from_millis(100)).await;
    tui.send(b"\x03");
    let status = tui
        .wait_exit(Duration::from_secs(10))
        .await
        .expect("squad exits");
    assert!(status.success(), "{status:?}");
    assert!(!tui.alternate_screen(), "left the alternate screen");
    assert!(!tui.cursor_hidden(), "cursor visible again");
    // Back in the shell, the way back to the session is printed.
    let out = String::from_utf8_lossy(&tui.raw_output()).to_string();
    let hint = out
        .lines()
        .find(|l| l.contains("squad --resume "))
        .unwrap_or_else(|| panic!("no resume hint after quitting: {out}"));
    let id = hint.rsplit(' ').next().unwrap().trim();
    assert!(!id.is_empty() && !id.contains('<'), "{hint}");
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
            &json!({"path": "notes.txt", "old_text": "old line", "new_text": "new line"})
                .to_string(),
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

#[tokio::test(flavor = "multi_thread")]
async fn a_spawned_worker_appears_in_the_tree_and_its_conversation_can_be_read() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_worker(body) {
            let result = json!({"result": {"status": "success", "summary": "parser written",
                "artifacts": [{"file_path": "src/parser.rs", "description": "new parser", "change_type": "created"}],
                "known_issues": []}});
            return MockResponse::text_and_tool_calls(
                "WORKER-REPLY: writing the parser",
                vec![MockToolCall::new("r", "return_results", result.to_string())],
            )
            .with_delay(Duration::from_millis(800));
        }
        match tool_messages(body).len() {
            0 => MockResponse::tool_call(
                "s",
                "spawn_agent",
                &json!({"role_name": "agentic_coder", "task_prompt": "write the parser"}).to_string(),
            ),
            1 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            _ => MockResponse::text("Parser done."),
        }
    });
    let tui = Tui::spawn(&sb, &mock.base_url(), &[], 30, 110);
    tui.wait_text("copilot").await;
    tui.type_text("build a parser").await;
    tui.enter().await;
    // A spawn under `ask` shows the worker's role, task, tools and model.
    let dialog = tui.wait_text("write the parser").await;
    assert!(dialog.contains("agentic_coder"), "{dialog}");
    tokio::time::sleep(::squad::tui::APPROVAL_GUARD + Duration::from_millis(100)).await;
    tui.send(b"y");
    tui.wait_for("the worker in the tree", |s| {
        s.contains("agentic_coder") && s.contains("2 agents")
    })
    .await;
    let screen = tui.wait_text("Parser done.").await;
    assert!(screen.contains("2 agents"), "{screen}");
    // Select the worker in the tree and read its conversation.
    tui.send(b"\t");
    tokio::time::sleep(Duration::from_millis(100)).await;
    tui.send(b"j");
    tokio::time::sleep(Duration::from_millis(100)).await;
    tui.send(b"\r");
    let screen = tui.wait_text("WORKER-REPLY").await;
    assert!(screen.contains("parser written"), "results card: {screen}");
    assert!(
        screen.contains("to agentic_coder"),
        "composer addresses the worker: {screen}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn esc_interrupts_a_slow_stream() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    let chunks: Vec<String> = (0..60).map(|i| format!("chunk{i} ")).collect();
    mock.push_all([
        MockResponse::text_deltas(chunks).with_chunk_delay(Duration::from_millis(250)),
        MockResponse::text("Back again."),
    ]);
    let tui = Tui::spawn(&sb, &mock.base_url(), &[], 30, 100);
    tui.wait_text("copilot").await;
    tui.type_text("talk slowly").await;
    tui.enter().await;
    tui.wait_text("chunk1").await;
    tui.send(b"\x1b");
    let screen = tui.wait_text("interrupted").await;
    assert!(!screen.contains("chunk30"), "{screen}");
    let req = mock.requests()[0].clone();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while mock.requests()[0].finished_at.is_none() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let finished = mock.requests()[0]
        .finished_at
        .expect("the stream was dropped");
    assert!(finished.duration_since(req.received_at) < Duration::from_secs(8));
    // The session goes on.
    tui.type_text("are you there?").await;
    tui.enter().await;
    tui.wait_text("Back again.").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn new_and_resume_switch_sessions_in_place() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.push_all([
        MockResponse::text("FIRST-SESSION-ANSWER"),
        MockResponse::text("SECOND-SESSION-ANSWER"),
        MockResponse::text("continued the first"),
    ]);
    let tui = Tui::spawn(&sb, &mock.base_url(), &[], 30, 100);
    tui.wait_text("copilot").await;
    tui.type_text("first question").await;
    tui.enter().await;
    tui.wait_text("FIRST-SESSION-ANSWER").await;

    tui.type_text("/new").await;
    tui.enter().await;
    tui.wait_for("an empty session", |s| {
        !s.contains("FIRST-SESSION-ANSWER") && s.contains("copilot")
    })
    .await;
    tui.type_text("second question").await;
    tui.enter().await;
    tui.wait_text("SECOND-SESSION-ANSWER").await;

    // /resume without an id goes back to the latest other session, history and all.
    tui.type_text("/resume").await;
    tui.enter().await;
    let screen = tui.wait_text("FIRST-SESSION-ANSWER").await;
    assert!(!screen.contains("SECOND-SESSION-ANSWER"), "{screen}");
    tui.type_text("go on").await;
    tui.enter().await;
    tui.wait_text("continued the first").await;
    let t = transcript(&mock.requests()[2].body);
    assert_eq!(t[1].1, "first question");
    assert_eq!(t.last().unwrap().1, "go on");

    // A session that does not exist: a fresh session that says why.
    tui.type_text("/resume no-such-session").await;
    tui.enter().await;
    tui.wait_text("cannot resume").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_key_or_an_unreachable_server_is_explained_on_screen() {
    let sb = Sandbox::new();
    // No key and the default provider: said at once, before anything is sent.
    let mut tui = Tui::spawn(&sb, "", &[], 30, 100);
    tui.wait_text("OPENAI_API_KEY").await;
    tui.send(b"\x03");
    tokio::time::sleep(Duration::from_millis(100)).await;
    tui.send(b"\x03");
    tui.wait_exit(Duration::from_secs(10)).await.expect("exits");

    // A server that is not there: the message says what to check, and the session goes on.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    sb.workspace_config("[provider]\nmax_retries = 0\n");
    let tui = Tui::spawn(&sb, &format!("http://127.0.0.1:{port}/v1"), &[], 30, 100);
    tui.wait_text("copilot").await;
    tui.type_text("hello?").await;
    tui.enter().await;
    let screen = tui.wait_text("cannot reach the model server").await;
    assert!(
        screen.contains("base-url") || screen.contains("OPENAI_BASE_URL"),
        "{screen}"
    );
    assert!(screen.contains("copilot"), "still running: {screen}");
}

#[tokio::test(flavor = "multi_thread")]
async fn slash_role_hands_the_session_to_another_persona() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.push(MockResponse::text("Architect here."));
    let tui = Tui::spawn(&sb, &mock.base_url(), &[], 30, 100);
    tui.wait_text("copilot").await;
    tui.type_text("/role architect").await;
    tui.enter().await;
    let screen = tui.wait_text("copilot → architect").await;
    assert!(
        screen.contains("to architect"),
        "composer title follows: {screen}"
    );
    tui.type_text("design it").await;
    tui.enter().await;
    tui.wait_text("Architect here.").await;
    let system = content_text(&mock.requests()[0].body["messages"][0]["content"]);
    assert!(system.contains("You are the architect"), "{system}");
}

#[tokio::test(flavor = "multi_thread")]
async fn ask_user_opens_a_dialog_and_the_typed_answer_reaches_the_model() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    let ask = json!({
        "question": "Which database should the cache use?",
        "options": ["Postgres", "SQLite"]
    })
    .to_string();
    mock.push_all([
        MockResponse::tool_call("q1", "ask_user", &ask),
        MockResponse::text("Using Redis then."),
        MockResponse::tool_call("q2", "ask_user", &ask),
        MockResponse::text("SQLite it is."),
    ]);
    let tui = Tui::spawn(&sb, &mock.base_url(), &[], 30, 100);
    tui.wait_text("copilot").await;
    tui.type_text("add a cache").await;
    tui.enter().await;
    // The call's line in the conversation shows the question a moment before the dialog.
    tui.wait_text("question · copilot").await;
    let screen = tui.wait_text("2 SQLite").await;
    // Labelled with the asking agent: role and short id.
    let label = screen
        .split("question · copilot ")
        .nth(1)
        .unwrap_or_else(|| panic!("no dialog title:\n{screen}"));
    assert!(
        label.chars().take(8).all(|c| c.is_ascii_hexdigit()),
        "{screen}"
    );
    assert!(
        screen.contains("1 Postgres") && screen.contains("2 SQLite"),
        "{screen}"
    );
    tokio::time::sleep(::squad::tui::APPROVAL_GUARD + Duration::from_millis(100)).await;
    tui.type_text("Redis, we run it already").await;
    tui.enter().await;
    tui.wait_text("Using Redis then.").await;
    let results = tool_messages(&mock.requests()[1].body);
    assert_eq!(results[0].0, "q1");
    assert!(
        results[0].1.contains("Redis, we run it already"),
        "{:?}",
        results[0]
    );
    let screen = tui.screen();
    assert!(
        !screen.contains("question · copilot"),
        "dialog closed:\n{screen}"
    );

    // A digit picks an option.
    tui.type_text("and the sessions?").await;
    tui.enter().await;
    tui.wait_text("1-2 pick").await;
    tokio::time::sleep(::squad::tui::APPROVAL_GUARD + Duration::from_millis(100)).await;
    tui.send(b"2");
    tui.wait_text("SQLite it is.").await;
    let results = tool_messages(&mock.requests()[3].body);
    assert_eq!(results.last().unwrap().0, "q2");
    assert!(
        results.last().unwrap().1.contains("answered: SQLite"),
        "{results:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_session_budget_pauses_the_team_until_budget_raises_it() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    sb.workspace_config("[limits]\nmax_session_cost_usd = 0.01\n");
    // gpt-4.1 at $2 / $8 per million tokens: the first answer costs $0.012.
    mock.push_all([
        MockResponse::tool_call("r", "read_file", r#"{"path":"a.txt"}"#).with_usage(4_000, 500),
        MockResponse::text("All read."),
    ]);
    let tui = Tui::spawn(&sb, &mock.base_url(), &[], 30, 110);
    tui.wait_text("copilot").await;
    tui.type_text("read a.txt").await;
    tui.enter().await;
    let screen = tui.wait_text("session budget reached").await;
    assert!(screen.contains("/budget USD"), "{screen}");
    let screen = tui.wait_text("BUDGET $0.012/$0.010").await;
    assert!(screen.contains("paused"), "{screen}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        mock.requests().len(),
        1,
        "nothing more is asked while paused"
    );
    assert!(!tui.screen().contains("All read."));

    tui.type_text("/budget 1").await;
    tui.enter().await;
    let screen = tui.wait_text("All read.").await;
    assert!(screen.contains("session budget set to $1.00"), "{screen}");
    assert!(!screen.contains("BUDGET"), "{screen}");
    assert_eq!(mock.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn esc_esc_lists_the_messages_and_rewinds_the_files_and_the_conversation() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("a.txt", "as the user left it\n");
    mock.push_all([
        MockResponse::tool_call(
            "w1",
            "write_file",
            &json!({"path": "a.txt", "content": "squad's bad edit\n"}).to_string(),
        ),
        MockResponse::text("Rewrote a.txt."),
    ]);
    let tui = Tui::spawn(&sb, &mock.base_url(), &["--approval", "auto"], 30, 100);
    tui.wait_text("copilot").await;
    tui.type_text("rewrite a.txt").await;
    tui.enter().await;
    tui.wait_text("Rewrote a.txt.").await;
    assert_eq!(sb.read("a.txt"), "squad's bad edit\n");

    tui.send(b"\x1b");
    tokio::time::sleep(Duration::from_millis(150)).await;
    tui.send(b"\x1b");
    let screen = tui.wait_text("Back to before which message?").await;
    assert!(screen.contains("rewrite a.txt"), "{screen}");
    let screen = tui.wait_text("1 file changed since: M a.txt").await;
    assert!(screen.contains("1  rewrite a.txt"), "{screen}");
    tui.enter().await;
    tui.wait_text("Restore the files and the conversation")
        .await;
    tui.enter().await;
    let screen = tui.wait_text("rewound to before message 1").await;
    assert_eq!(sb.read("a.txt"), "as the user left it\n");
    // The message is back in the composer, to be edited and sent again.
    assert!(screen.contains("┃rewrite a.txt"), "{screen}");
}

/// `/model` with no name lists the models the server serves (the core asks it); `↓` and
/// `Enter` pick one, and the persona's next call uses it.
#[tokio::test(flavor = "multi_thread")]
async fn slash_model_alone_lists_the_servers_models_to_pick() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_models(["alpha-7b", "beta-coder-32b"]);
    mock.push(MockResponse::text("Beta here."));
    let tui = Tui::spawn(&sb, &mock.base_url(), &[], 30, 100);
    tui.wait_text("copilot").await;
    tui.type_text("/model").await;
    tui.enter().await;
    let screen = tui.wait_text("beta-coder-32b").await;
    assert!(screen.contains("alpha-7b"), "{screen}");
    tui.send(b"\x1b[B");
    tokio::time::sleep(Duration::from_millis(150)).await;
    tui.enter().await;
    tui.wait_text("model: beta-coder-32b").await;
    tui.type_text("hello").await;
    tui.enter().await;
    tui.wait_text("Beta here.").await;
    assert_eq!(mock.requests()[0].body["model"], "beta-coder-32b");
}

/// A worker its supervisor named (`spawn_agent`'s `name`) goes by that name on the real
/// binary: in the spawn's approval, in its row of the tree and in its own approvals.
#[tokio::test(flavor = "multi_thread")]
async fn a_named_worker_goes_by_its_name_in_the_tree_and_its_approvals() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_worker(body) {
            if tool_messages(body).is_empty() {
                let args = json!({"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"});
                return MockResponse::tool_call("w", "write_file", &args.to_string());
            }
            let result = json!({"result": {"status": "success", "summary": "add fixed",
                "artifacts": [{"file_path": "calc.py", "description": "add", "change_type": "created"}],
                "known_issues": []}});
            return MockResponse::tool_call("r", "return_results", &result.to_string());
        }
        match tool_messages(body).len() {
            0 => MockResponse::tool_call(
                "s",
                "spawn_agent",
                &json!({"role_name": "agentic_coder", "name": "calc fix",
                        "task_prompt": "Fix add() in calc.py so that it adds"})
                .to_string(),
            ),
            1 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            _ => MockResponse::text("Calculator fixed."),
        }
    });
    let tui = Tui::spawn(&sb, &mock.base_url(), &[], 40, 120);
    tui.wait_text("copilot").await;
    tui.type_text("fix the calculator").await;
    tui.enter().await;
    // The spawn's approval says the name the worker will go by.
    let dialog = tui.wait_text("Fix add() in calc.py").await;
    assert!(
        dialog
            .lines()
            .any(|l| l.contains("name") && l.contains("calc fix")),
        "{dialog}"
    );
    tokio::time::sleep(::squad::tui::APPROVAL_GUARD + Duration::from_millis(100)).await;
    tui.send(b"y");
    // Its own approval is titled with its role, short id and name; its row shows the name.
    let screen = tui
        .wait_for("the worker's approval", |s| {
            s.contains("approval · agentic_coder") && s.contains("calc.py")
        })
        .await;
    let title = screen
        .lines()
        .find(|l| l.contains("approval · agentic_coder"))
        .unwrap();
    assert!(title.contains("calc fix"), "{screen}");
    assert!(
        screen
            .lines()
            .any(|l| l.contains("─ ") && l.contains("agentic_coder") && l.contains("calc fix")),
        "no tree row with the name: {screen}"
    );
    tokio::time::sleep(::squad::tui::APPROVAL_GUARD + Duration::from_millis(100)).await;
    tui.send(b"y");
    tui.wait_text("Calculator fixed.").await;
    assert!(sb.read("calc.py").contains("return a + b"));
}

/// `squad --demo`, as the README's first screen has a newcomer try it: the empty screen
/// says the two words the demo model answers, and `team`'s two workers go by the names
/// their supervisor gave them.
#[tokio::test(flavor = "multi_thread")]
async fn the_demo_says_what_to_type_and_its_workers_go_by_their_names() {
    let sb = Sandbox::new();
    let tui = Tui::spawn(&sb, "", &["--demo"], 40, 120);
    tui.wait_text("Demo model: type write or team").await;
    tui.type_text("team").await;
    tui.enter().await;
    for _ in 0..2 {
        tui.wait_text("wants to spawn a worker").await;
        tokio::time::sleep(::squad::tui::APPROVAL_GUARD + Duration::from_millis(100)).await;
        tui.send(b"y");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let screen = tui.wait_text("Both workers are done").await;
    let rows: Vec<&str> = screen
        .lines()
        .filter(|l| l.contains("─ ") && l.contains("code_reviewer"))
        .collect();
    assert_eq!(rows.len(), 2, "{screen}");
    assert!(rows[1].contains("docs"), "{screen}");
    assert!(rows[0].contains(" top"), "{screen}");
}
