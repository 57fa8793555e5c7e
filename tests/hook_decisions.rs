//! What a Claude Code hook decides, on the real binary: `updatedInput` changes the call
//! (Claude's names mapped back to squad's, checked against the tool's schema; a bad one
//! is an error for the model and the session goes on), `permissionDecision: "allow"`
//! skips the approval prompt and `"ask"` forces it, and a `UserPromptSubmit` hook that
//! blocks keeps the message from the model.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::*;
use common::*;
use serde_json::{Value, json};

fn user_config(sb: &Sandbox, toml: &str) {
    std::fs::create_dir_all(sb.config_dir()).unwrap();
    std::fs::write(sb.config_dir().join("config.toml"), toml).unwrap();
}

fn call_tool(id: &str, name: &str, args: Value) -> MockResponse {
    MockResponse::tool_call(id, name, &args.to_string())
}

fn result_of(body: &Value, id: &str) -> String {
    tool_messages(body)
        .into_iter()
        .find(|(call, _)| call == id)
        .map(|(_, out)| out)
        .unwrap_or_default()
}

/// A hook script written as Claude Code's are: it reads the call on stdin and answers
/// JSON on stdout. Kept in the user's home, as most are.
fn install_hook(sb: &Sandbox, name: &str, python: &str) -> String {
    let dir = sb.home.path().join(".claude/hooks");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, python).unwrap();
    format!("python3 {}", path.display())
}

const REWRITER: &str = r#"
import json, os, sys
data = json.load(sys.stdin)
name, inp = data["tool_name"], data["tool_input"]
out = None
if name == "Bash" and "--force" in inp.get("command", ""):
    inp["command"] = inp["command"].replace(" --force", "")
    out = inp
elif name == "Write" and inp["file_path"].endswith("/config.json"):
    # Claude Code's absolute path, moved next to the original.
    out = {"file_path": os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "config.local.json"),
           "content": inp["content"]}
elif name == "Write" and inp["file_path"].endswith("broken.txt"):
    out = {"content": 42}
if out is not None:
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": "allow", "updatedInput": out}}))
"#;

#[tokio::test(flavor = "multi_thread")]
async fn updated_input_changes_the_call_and_a_bad_one_is_an_error_for_the_model() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    let cmd = install_hook(&sb, "rewrite.py", REWRITER);
    user_config(
        &sb,
        &format!(
            "[[hooks]]\nevent = \"PreToolUse\"\nmatcher = \"Bash|Write\"\ncommand = '{cmd}'\n"
        ),
    );
    mock.set_responder(|body| match tool_count(body) {
        0 => call_tool(
            "c1",
            "run_command",
            json!({"command": "echo ran $@ > out.txt --force"}),
        ),
        1 => call_tool(
            "c2",
            "write_file",
            json!({"path": "config.json", "content": "{\"debug\": true}\n"}),
        ),
        2 => call_tool(
            "c3",
            "write_file",
            json!({"path": "broken.txt", "content": "x\n"}),
        ),
        3 => call_tool(
            "c4",
            "write_file",
            json!({"path": "after.txt", "content": "still going\n"}),
        ),
        _ => MockResponse::text("done"),
    });
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "configure"])
        .await;
    run.assert_ok();
    let reqs = mock.requests();
    let last = &reqs[reqs.len() - 1].body;

    // The command ran as the hook changed it.
    assert_eq!(sb.read("out.txt"), "ran\n");
    let c1 = result_of(last, "c1");
    assert!(c1.contains("a pre_tool_use hook changed"), "{c1}");
    // An absolute file_path came back as squad's relative path.
    assert_eq!(sb.read("config.local.json"), "{\"debug\": true}\n");
    assert!(!sb.ws().join("config.json").exists());
    // A bad updatedInput: nothing written, the model told why, the session went on.
    let c3 = result_of(last, "c3");
    assert!(
        c3.contains("updatedInput") && c3.contains("content"),
        "{c3}"
    );
    assert!(!sb.ws().join("broken.txt").exists());
    assert_eq!(sb.read("after.txt"), "still going\n");
    let events = run.events();
    let changed = of_type(&events, "hook_ran")
        .into_iter()
        .filter(|e| {
            e["outcome"]
                .as_str()
                .is_some_and(|o| o.contains("changed the call's input"))
        })
        .count();
    assert_eq!(changed, 3, "{events:?}");
}

const PERMISSION: &str = r#"
import json, sys
data = json.load(sys.stdin)
path = data["tool_input"].get("file_path", "")
decision = "allow" if path.endswith("allowed.txt") else "ask" if path.endswith("asked.txt") else None
if decision:
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": decision, "permissionDecisionReason": "policy"}}))
"#;

/// `exec` has nobody to ask: under `ask` a write is refused unless a hook allowed it;
/// under `auto` a write runs unless a hook asks for the user.
#[tokio::test(flavor = "multi_thread")]
async fn permission_allow_skips_the_prompt_and_ask_forces_it() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    let cmd = install_hook(&sb, "permission.py", PERMISSION);
    user_config(
        &sb,
        &format!("[[hooks]]\nevent = \"PreToolUse\"\nmatcher = \"Write\"\ncommand = '{cmd}'\n"),
    );
    let writes = |body: &Value| match tool_count(body) {
        0 => call_tool(
            "a",
            "write_file",
            json!({"path": "allowed.txt", "content": "a\n"}),
        ),
        1 => call_tool(
            "b",
            "write_file",
            json!({"path": "asked.txt", "content": "b\n"}),
        ),
        2 => call_tool(
            "c",
            "write_file",
            json!({"path": "plain.txt", "content": "c\n"}),
        ),
        _ => MockResponse::text("done"),
    };
    mock.set_responder(writes);
    sb.exec(&mock, &["--approval", "ask", "write"])
        .await
        .assert_ok();
    assert_eq!(sb.read("allowed.txt"), "a\n", "allowed without a prompt");
    assert!(!sb.ws().join("asked.txt").exists());
    assert!(!sb.ws().join("plain.txt").exists(), "`ask` as ever");
    let reqs = mock.requests();
    let last = &reqs[reqs.len() - 1].body;
    assert!(
        result_of(last, "b").contains("nobody can answer"),
        "{}",
        result_of(last, "b")
    );

    std::fs::remove_file(sb.ws().join("allowed.txt")).unwrap();
    mock.set_responder(writes);
    sb.exec(&mock, &["--approval", "auto", "write"])
        .await
        .assert_ok();
    assert_eq!(sb.read("plain.txt"), "c\n", "`auto` as ever");
    assert_eq!(sb.read("allowed.txt"), "a\n");
    assert!(
        !sb.ws().join("asked.txt").exists(),
        "the hook asked for the user, under auto too"
    );
    let reqs = mock.requests();
    let asked = result_of(&reqs[reqs.len() - 1].body, "b");
    assert!(
        asked.contains("a pre_tool_use hook asks for the user's approval"),
        "{asked}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_blocking_user_prompt_submit_hook_keeps_the_message_from_the_model() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    let cmd = install_hook(
        &sb,
        "prompt_guard.py",
        r#"
import json, sys
data = json.load(sys.stdin)
if "password" in data["prompt"]:
    print(json.dumps({"decision": "block", "reason": "prompts must not carry secrets"}))
"#,
    );
    user_config(
        &sb,
        &format!("[[hooks]]\nevent = \"UserPromptSubmit\"\ncommand = '{cmd}'\n"),
    );
    mock.push_all([MockResponse::text("should not be asked")]);
    let run = sb
        .exec(&mock, &["--json", "my password is hunter2, log in"])
        .await;
    assert!(mock.requests().is_empty(), "the model was never asked");
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("prompts must not carry secrets"),
        "{}",
        run.stderr
    );
    let events = run.events();
    let told = of_type(&events, "error")
        .into_iter()
        .filter_map(|e| e["message"].as_str())
        .any(|m| m.contains("not sent") && m.contains("prompts must not carry secrets"));
    assert!(told, "{}", run.stdout);
    assert!(items_of_kind(&events, "user").is_empty(), "{events:?}");

    // A message the hook lets through is answered.
    let ok = sb.exec(&mock, &["--json", "hello"]).await;
    ok.assert_ok();
    assert_eq!(mock.requests().len(), 1);
}
