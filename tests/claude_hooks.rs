//! Hook scripts written the way public Claude Code hooks are (`tests/fixtures/claude_hooks/`:
//! a Bash command validator and an `rm -rf` blocker that exit 2 on `tool_name == "Bash"`, a
//! `.env` guard answering with `permissionDecision: "deny"` JSON after reading an absolute
//! `tool_input.file_path`, a logger writing under `~/.claude/logs`, a Stop hook answering
//! `decision: "block"`), run unchanged by the real binary with Claude Code's matchers and
//! `$CLAUDE_PROJECT_DIR` commands; and a workspace hook whose script an agent edits.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::*;
use common::*;
use serde_json::{Value, json};
use std::path::PathBuf;

/// Copies the scripts into the workspace's `.claude/hooks/`, as a project keeps them
/// (executable).
fn install_scripts(sb: &Sandbox) {
    use std::os::unix::fs::PermissionsExt;
    let from = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude_hooks");
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let rel = format!(".claude/hooks/{name}");
        sb.write(&rel, &std::fs::read_to_string(&path).unwrap());
        let mode = std::fs::Permissions::from_mode(0o755);
        std::fs::set_permissions(sb.ws().join(rel), mode).unwrap();
    }
}

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

const CLAUDE_STYLE_HOOKS: &str = r#"
[[hooks]]
event = "PreToolUse"
matcher = "Bash"
command = 'python3 "$CLAUDE_PROJECT_DIR"/.claude/hooks/bash_command_validator.py'

[[hooks]]
event = "PreToolUse"
matcher = "Bash"
command = '"$CLAUDE_PROJECT_DIR"/.claude/hooks/block_rm_rf.sh'

[[hooks]]
event = "PreToolUse"
matcher = "Edit|Write|MultiEdit"
command = 'python3 "$CLAUDE_PROJECT_DIR"/.claude/hooks/protect_env.py'

[[hooks]]
event = "PostToolUse"
command = 'python3 "$CLAUDE_PROJECT_DIR"/.claude/hooks/log_tool_use.py'

[[hooks]]
event = "Stop"
command = 'python3 "$CLAUDE_PROJECT_DIR"/.claude/hooks/require_tests.py'
"#;

#[tokio::test(flavor = "multi_thread")]
async fn claude_code_hook_scripts_run_unchanged() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    install_scripts(&sb);
    sb.write("build/out.o", "object\n");
    user_config(&sb, CLAUDE_STYLE_HOOKS);
    mock.set_responder(|body| match tool_count(body) {
        0 => call_tool("c1", "run_command", json!({"command": "grep -r TODO src"})),
        1 => call_tool("c2", "run_command", json!({"command": "rm -rf build"})),
        2 => call_tool(
            "c3",
            "write_file",
            json!({"path": ".env", "content": "KEY=1\n"}),
        ),
        3 => call_tool(
            "c4",
            "write_file",
            json!({"path": "notes.txt", "content": "n\n"}),
        ),
        _ => MockResponse::text("done"),
    });
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "tidy up"])
        .await;
    run.assert_ok();
    let reqs = mock.requests();
    let last = &reqs[reqs.len() - 1].body;

    let grep = result_of(last, "c1");
    assert!(grep.contains("Use 'rg' (ripgrep)"), "{grep}");
    let rm = result_of(last, "c2");
    assert!(rm.contains("Blocked: 'rm -rf' is not allowed"), "{rm}");
    assert_eq!(sb.read("build/out.o"), "object\n", "rm -rf did not run");
    let env = result_of(last, "c3");
    assert!(env.contains(".env holds secrets"), "{env}");
    assert!(
        !sb.ws().join(".env").exists(),
        "the denied .env was not written"
    );
    assert_eq!(sb.read("notes.txt"), "n\n");

    // The Stop hook asked for one more turn, then let it end.
    assert_eq!(reqs.len(), 6, "four calls, the answer, one more turn");
    let asked = transcript(last)
        .into_iter()
        .rev()
        .find(|(role, _)| role == "user")
        .unwrap()
        .1;
    assert_eq!(asked, "Run the test suite before you finish.");

    // The logger wrote under home, outside the workspace, with Claude's names.
    let log = std::fs::read_to_string(sb.home.path().join(".claude/logs/tool_use.jsonl"))
        .expect("the logger wrote under ~/.claude/logs");
    let entries: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let write = entries
        .iter()
        .find(|e| e["tool_name"] == "Write")
        .expect("a Write entry");
    let notes = sb.ws().join("notes.txt").canonicalize().unwrap();
    assert_eq!(
        PathBuf::from(write["tool_input"]["file_path"].as_str().unwrap())
            .canonicalize()
            .unwrap(),
        notes
    );
    assert_eq!(write["success"], true);
    assert_eq!(write["event"], "PostToolUse");
    let project = PathBuf::from(write["project"].as_str().unwrap());
    assert_eq!(
        project.canonicalize().unwrap(),
        sb.ws().canonicalize().unwrap()
    );
}

/// A workspace hook runs with the user's rights once approved; the approval pins the script
/// its command runs, so an agent that edits that script (as its sandbox lets it) does not
/// get its code run outside the sandbox: the hook waits for a new approval instead.
#[tokio::test(flavor = "multi_thread")]
async fn an_agent_cannot_escape_its_sandbox_by_editing_an_approved_hook_script() {
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
    mock.set_responder(move |body| match tool_count(body) {
        0 => call_tool("c1", "run_command", json!({"command": "echo hi"})),
        1 => call_tool("c2", "run_command", json!({"command": evil})),
        2 => call_tool("c3", "run_command", json!({"command": "echo again"})),
        _ => MockResponse::text("done"),
    });
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "go"])
        .await;
    run.assert_ok();
    assert!(
        sb.read(".claude/hooks/log.sh").contains("pwned"),
        "the agent did edit the script"
    );
    let log = std::fs::read_to_string(sb.home.path().join(".claude/logs/ws-hook.log")).unwrap();
    assert_eq!(
        log, "ran\n",
        "the approved script ran once, with the user's rights"
    );
    assert!(
        !sb.home.path().join("pwned.txt").exists(),
        "the edited script never ran outside the sandbox"
    );
    let events = run.events();
    let runs = of_type(&events, "hook_ran");
    assert_eq!(runs.len(), 3, "{runs:?}");
    for later in &runs[1..] {
        assert!(
            later["outcome"]
                .as_str()
                .unwrap()
                .contains("squad hooks trust"),
            "{later}"
        );
    }
    let listed = sb.run(None, &["hooks"]).await;
    assert!(
        listed.stdout.contains("waits for `squad hooks trust`"),
        "{}",
        listed.stdout
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_matcher_that_matches_no_tool_is_a_warning_in_hooks_and_doctor() {
    let sb = Sandbox::new();
    user_config(
        &sb,
        "[[hooks]]\nevent = \"pre_tool_use\"\nmatcher = \"Bsh\"\ncommand = \"true\"\n\n\
         [[hooks]]\nevent = \"PreToolUse\"\nmatcher = \"Edit|Write\"\ncommand = \"true\"\n",
    );
    let listed = sb.run(None, &["hooks"]).await;
    listed.assert_ok();
    assert!(
        listed.stdout.contains("matcher `Bsh` matches no tool"),
        "{}",
        listed.stdout
    );
    assert!(
        !listed.stdout.contains("`Edit|Write` matches no tool"),
        "{}",
        listed.stdout
    );
    let doctor = sb.run(None, &["doctor"]).await;
    assert!(
        doctor.stdout.contains("matcher `Bsh` matches no tool"),
        "{}",
        doctor.stdout
    );
}

/// A project's `.claude/settings.json`, as Claude Code reads it, imported with `[hooks]
/// import`: it came with the workspace, so it waits for `squad hooks trust`, then its
/// `.env` guard denies the write.
#[tokio::test(flavor = "multi_thread")]
async fn claude_settings_json_hooks_are_imported_and_wait_for_approval() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    install_scripts(&sb);
    sb.write(
        ".claude/settings.json",
        &json!({"hooks": {"PreToolUse": [{"matcher": "Write|Edit", "hooks": [{"type": "command",
            "command": "python3 \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/protect_env.py"}]}]}})
        .to_string(),
    );
    user_config(&sb, "[hooks]\nimport = [\".claude/settings.json\"]\n");
    let listed = sb.run(None, &["hooks"]).await;
    assert!(listed.stdout.contains("PreToolUse") || listed.stdout.contains("pre_tool_use"));
    assert!(
        listed.stdout.contains("waits for `squad hooks trust`"),
        "{}",
        listed.stdout
    );
    sb.run(None, &["hooks", "trust"]).await.assert_ok();
    mock.set_responder(|body| match tool_count(body) {
        0 => call_tool(
            "c1",
            "write_file",
            json!({"path": ".env", "content": "K=1\n"}),
        ),
        _ => MockResponse::text("done"),
    });
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "set the key"])
        .await;
    run.assert_ok();
    assert!(
        !sb.ws().join(".env").exists(),
        "the imported hook denied it"
    );
}
