//! Claude Code's `SessionEnd`, `PreCompact` and `Notification` hooks (and squad's
//! snake_case names for them) run on the real binary, with Claude Code's payload fields:
//! a logger hook, written as public ones are, appends every payload under the home folder.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::acp::Client;
use common::agents::*;
use common::*;
use serde_json::{Value, json};

const LOGGER: &str = r#"
import json, os, sys
data = json.load(sys.stdin)
log = os.path.expanduser("~/.claude/logs/events.jsonl")
os.makedirs(os.path.dirname(log), exist_ok=True)
with open(log, "a") as f:
    f.write(json.dumps(data) + "\n")
"#;

/// The logger hooked on `events` (each `(event, matcher)`), in the user's config.
fn install_logger(sb: &Sandbox, events: &[(&str, Option<&str>)]) {
    let dir = sb.home.path().join(".claude/hooks");
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("log_event.py");
    std::fs::write(&script, LOGGER).unwrap();
    let mut toml = String::new();
    for (event, matcher) in events {
        toml.push_str(&format!("[[hooks]]\nevent = \"{event}\"\n"));
        if let Some(m) = matcher {
            toml.push_str(&format!("matcher = \"{m}\"\n"));
        }
        toml.push_str(&format!("command = 'python3 {}'\n\n", script.display()));
    }
    std::fs::create_dir_all(sb.config_dir()).unwrap();
    std::fs::write(sb.config_dir().join("config.toml"), toml).unwrap();
}

fn logged(sb: &Sandbox) -> Vec<Value> {
    std::fs::read_to_string(sb.home.path().join(".claude/logs/events.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn of_event<'a>(log: &'a [Value], name: &str) -> Vec<&'a Value> {
    log.iter()
        .filter(|e| e["hook_event_name"] == name)
        .collect()
}

/// A window of 20,000 tokens for the default model; compaction at 16,000.
const SMALL_WINDOW: &str =
    "[context_windows]\n\"gpt-4.1\" = 20000\n[provider]\nretry_base_ms = 10\n";

#[tokio::test(flavor = "multi_thread")]
async fn session_end_and_pre_compact_hooks_run_with_claude_codes_fields() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config(SMALL_WINDOW);
    install_logger(&sb, &[("SessionEnd", None), ("pre_compact", Some("auto"))]);
    let line = format!("FILE-MARKER {}\n", "x".repeat(60));
    for i in 1..=4 {
        sb.write(&format!("f{i}.txt"), &line.repeat(7000 / line.len()));
    }
    let read = |i: usize| {
        MockResponse::tool_call(
            &format!("c{i}"),
            "read_file",
            &json!({"path": format!("f{i}.txt")}).to_string(),
        )
    };
    mock.push_all([
        read(1).with_usage(5000, 10),
        read(2).with_usage(9000, 10),
        read(3).with_usage(13000, 10),
        // Past 16,000 before the next call: compacted first.
        read(4).with_usage(17000, 10),
        MockResponse::text("SUMMARY").with_usage(12000, 30),
        MockResponse::text("done").with_usage(9000, 5),
    ]);
    let run = sb
        .exec(
            &mock,
            &["--json", "--approval", "auto", "read the four files"],
        )
        .await;
    run.assert_ok();
    assert_eq!(of_type(&run.events(), "compacted").len(), 1);
    let log = logged(&sb);
    let compact = of_event(&log, "PreCompact");
    assert_eq!(compact.len(), 1, "{log:?}");
    assert_eq!(compact[0]["trigger"], "auto");
    assert_eq!(compact[0]["custom_instructions"], "");
    let end = of_event(&log, "SessionEnd");
    assert_eq!(end.len(), 1, "{log:?}");
    assert_eq!(end[0]["reason"], "other");
    assert!(end[0]["session_id"].as_str().is_some_and(|s| !s.is_empty()));
    assert!(end[0]["transcript_path"].is_string());
    assert_eq!(
        log.last().unwrap()["hook_event_name"],
        "SessionEnd",
        "the session's last hook"
    );
}

/// An editor (ACP) can answer: waiting on the user for an approval or a question tells
/// the `Notification` hooks, each with its type.
#[tokio::test(flavor = "multi_thread")]
async fn notification_hooks_hear_an_approval_and_a_question_waiting() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("b.txt", "old\n");
    install_logger(&sb, &[("Notification", None)]);
    mock.set_responder(|body| match tool_count(body) {
        0 => MockResponse::tool_call(
            "e1",
            "edit_file",
            &json!({"path": "b.txt", "old_text": "old", "new_text": "new"}).to_string(),
        ),
        1 => MockResponse::tool_call(
            "q1",
            "ask_user",
            &json!({"question": "Which style?", "options": ["short", "long"]}).to_string(),
        ),
        _ => MockResponse::text("fine"),
    });
    let mut c = Client::start(&sb, &mock, &["--approval", "ask"]);
    c.initialize().await;
    let session = c.new_session(&sb).await;
    c.prompt(2, &session, "edit and ask").await;
    for _ in 0..2 {
        let ask = c
            .until(|m| m["method"] == "session/request_permission")
            .await;
        let first = ask["params"]["options"][0]["optionId"].clone();
        c.send(json!({"jsonrpc": "2.0", "id": ask["id"],
            "result": {"outcome": {"outcome": "selected", "optionId": first}}}))
            .await;
    }
    let done = c.response(2).await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    c.close().await;
    assert_eq!(sb.read("b.txt"), "new\n");
    let log = logged(&sb);
    let told = of_event(&log, "Notification");
    let kinds: Vec<&str> = told
        .iter()
        .map(|e| e["notification_type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["permission_prompt", "elicitation_dialog"],
        "{log:?}"
    );
    assert!(
        told[0]["message"].as_str().unwrap().contains("edit_file"),
        "{:?}",
        told[0]
    );
    assert!(
        told[1]["message"]
            .as_str()
            .unwrap()
            .contains("Which style?")
    );
}

/// A workspace hook whose script an agent edited is put to the user again where someone
/// can answer (here an editor, over ACP), showing the script as it is now: a no keeps it
/// from running for the rest of the session (not asked twice); a yes in a later session
/// approves it as it is, and it runs.
#[tokio::test(flavor = "multi_thread")]
async fn a_changed_workspace_hook_is_put_to_the_user_again() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write(
        ".claude/hooks/log.sh",
        "mkdir -p \"$HOME/.claude/logs\"\necho ran >> \"$HOME/.claude/logs/ws-hook.log\"\n",
    );
    sb.workspace_config(
        "[[hooks]]\nevent = \"PostToolUse\"\nmatcher = \"Bash\"\ncommand = 'sh \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/log.sh'\n",
    );
    sb.run(None, &["hooks", "trust"]).await.assert_ok();
    let evil = "printf 'echo pwned > \"$HOME/pwned.txt\"\\n' > .claude/hooks/log.sh";
    mock.set_responder(move |body| {
        let call = |id: &str, cmd: &str| {
            MockResponse::tool_call(id, "run_command", &json!({ "command": cmd }).to_string())
        };
        match (transcript(body)[1].1.as_str(), tool_count(body)) {
            ("edit it", 0) => call("c1", "echo hi"),
            ("edit it", 1) => call("c2", evil),
            ("edit it", 2) => call("c3", "echo again"),
            ("once more", 0) => call("d1", "echo hi"),
            _ => MockResponse::text("done"),
        }
    });
    let log = || {
        std::fs::read_to_string(sb.home.path().join(".claude/logs/ws-hook.log")).unwrap_or_default()
    };
    let mut c = Client::start(&sb, &mock, &["--approval", "auto"]);
    c.initialize().await;
    let session = c.new_session(&sb).await;
    c.prompt(2, &session, "edit it").await;
    let ask = c
        .until(|m| m["method"] == "session/request_permission")
        .await;
    let shown = ask["params"]["toolCall"].to_string();
    assert!(shown.contains("workspace hook"), "{shown}");
    assert!(shown.contains("pwned"), "the script as it is now: {shown}");
    c.send(json!({"jsonrpc": "2.0", "id": ask["id"],
        "result": {"outcome": {"outcome": "selected", "optionId": "reject"}}}))
        .await;
    let done = c.response(2).await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let asked = c
        .seen
        .iter()
        .filter(|m| m["method"] == "session/request_permission")
        .count();
    assert_eq!(asked, 1, "a no holds for the session");
    c.close().await;
    assert_eq!(log(), "ran\n", "the approved script ran once");
    assert!(!sb.home.path().join("pwned.txt").exists());

    let mut c = Client::start(&sb, &mock, &["--approval", "auto"]);
    c.initialize().await;
    let session = c.new_session(&sb).await;
    c.prompt(2, &session, "once more").await;
    let ask = c
        .until(|m| m["method"] == "session/request_permission")
        .await;
    c.send(json!({"jsonrpc": "2.0", "id": ask["id"],
        "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}}}))
        .await;
    c.response(2).await;
    c.close().await;
    assert!(
        sb.home.path().join("pwned.txt").exists(),
        "approved by the user, it ran as it is now"
    );
    let listed = sb.run(None, &["hooks"]).await;
    assert!(
        listed.stdout.contains("runs (approved)"),
        "{}",
        listed.stdout
    );
}
