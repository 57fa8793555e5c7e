//! User hooks (`[[hooks]]`), through the real `squad exec` binary against the mock server:
//! a `pre_tool_use` hook blocks a command, a `post_tool_use` hook reads the output, a
//! `stop` hook keeps the persona working once, a hanging hook is killed at its time limit,
//! and a hook that came with the workspace runs only once the user approved it.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::*;
use common::*;
use serde_json::{Value, json};
use std::time::Duration;

/// Writes the user's own `config.toml` (hooks there run without an approval). Hooks run in
/// the agent's sandbox: the folder the tests' hooks report into ([`out`]) is made writable.
fn user_config(sb: &Sandbox, toml: &str) {
    std::fs::create_dir_all(sb.config_dir()).unwrap();
    let out = out(sb, "");
    let toml = format!("{toml}\n[sandbox]\nwritable = [\"{}\"]\n", out.display());
    std::fs::write(sb.config_dir().join("config.toml"), toml).unwrap();
}

/// `name` in the folder outside the workspace where the tests' hooks write what they saw.
fn out(sb: &Sandbox, name: &str) -> std::path::PathBuf {
    let dir = sb.home.path().join("out");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn run_command(id: &str, command: &str) -> MockResponse {
    MockResponse::tool_call(
        id,
        "run_command",
        &json!({ "command": command }).to_string(),
    )
}

/// The output the model was given for the call `id`.
fn result_of(body: &Value, id: &str) -> String {
    tool_messages(body)
        .into_iter()
        .find(|(call, _)| call == id)
        .map(|(_, out)| out)
        .unwrap_or_default()
}

fn hook_runs(events: &[Value]) -> Vec<&Value> {
    of_type(events, "hook_ran")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pre_tool_use_hook_blocks_rm_rf_and_the_model_reads_its_reason() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("keep.txt", "precious\n");
    user_config(
        &sb,
        r#"
[[hooks]]
event = "pre_tool_use"
matcher = "run_command"
command = """
input=$(cat)
case "$input" in
  *'rm -rf'*) echo "rm -rf is not allowed here; delete files one by one" >&2; exit 2 ;;
esac
exit 0
"""
"#,
    );
    mock.set_responder(|body| match tool_count(body) {
        0 => run_command("c1", "rm -rf keep.txt"),
        1 => run_command("c2", "echo fine > ok.txt"),
        _ => MockResponse::text("done"),
    });
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "clean up"])
        .await;
    run.assert_ok();
    assert_eq!(sb.read("keep.txt"), "precious\n", "the command did not run");
    assert_eq!(sb.read("ok.txt"), "fine\n", "the next command did");
    let reqs = mock.requests();
    let blocked = result_of(&reqs[1].body, "c1");
    assert!(
        blocked.contains("blocked by a pre_tool_use hook")
            && blocked.contains("rm -rf is not allowed here"),
        "{blocked}"
    );
    let events = run.events();
    let runs = hook_runs(&events);
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(runs[0]["event"], "pre_tool_use");
    assert_eq!(runs[0]["exit"], 2);
    assert!(
        runs[0]["outcome"]
            .as_str()
            .unwrap()
            .contains("blocked the call")
    );
    assert_eq!(runs[1]["exit"], 0);
    assert!(runs[1].get("outcome").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_post_tool_use_hook_receives_the_call_and_its_output_in_claude_codes_fields() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    let seen = out(&sb, "seen.json");
    user_config(
        &sb,
        &format!(
            r#"
[[hooks]]
event = "post_tool_use"
matcher = "run_*"
command = "cat > '{}'"
"#,
            seen.display()
        ),
    );
    mock.set_responder(|body| match tool_count(body) {
        0 => run_command("c1", "echo hello from the tool"),
        _ => MockResponse::text("done"),
    });
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "say hello"])
        .await;
    run.assert_ok();
    let got: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(got["hook_event_name"], "PostToolUse");
    assert_eq!(got["tool_name"], "Bash", "Claude Code's name");
    assert_eq!(got["squad_tool_name"], "run_command", "squad's beside it");
    assert_eq!(got["tool_input"]["command"], "echo hello from the tool");
    assert_eq!(got["permission_mode"], "bypassPermissions");
    assert!(
        got["transcript_path"].as_str().unwrap().ends_with(".jsonl"),
        "{got}"
    );
    assert!(
        got["tool_response"]["output"]
            .as_str()
            .unwrap()
            .contains("hello from the tool"),
        "{got}"
    );
    assert_eq!(got["tool_response"]["is_error"], false);
    assert_eq!(got["role"], "copilot");
    assert_eq!(
        std::path::Path::new(got["cwd"].as_str().unwrap()),
        sb.ws().canonicalize().unwrap()
    );
    let events = run.events();
    let started = of_type(&events, "session_started");
    assert_eq!(got["session_id"], started[0]["session_id"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stop_hook_that_blocks_once_makes_the_persona_take_one_more_turn() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    let flag = out(&sb, "asked-once");
    user_config(
        &sb,
        &format!(
            r#"
[[hooks]]
event = "stop"
command = """
if [ -e '{flag}' ]; then exit 0; fi
touch '{flag}'
echo "run the tests before you stop" >&2
exit 2
"""
"#,
            flag = flag.display()
        ),
    );
    mock.set_responder(|body| {
        let users = transcript(body)
            .into_iter()
            .filter(|(role, _)| role == "user")
            .count();
        MockResponse::text(if users == 1 {
            "first answer"
        } else {
            "tests ran, really done"
        })
    });
    let run = sb.exec(&mock, &["--json", "do it"]).await;
    run.assert_ok();
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2, "exactly one more turn");
    let last_user = transcript(&reqs[1].body)
        .into_iter()
        .rev()
        .find(|(role, _)| role == "user")
        .unwrap()
        .1;
    assert_eq!(last_user, "run the tests before you stop");
    assert!(run.stdout.contains("tests ran, really done"));
    let events = run.events();
    let runs = hook_runs(&events);
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["exit"], 2);
    assert_eq!(runs[1]["exit"], 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stop_hook_that_always_blocks_is_obeyed_three_times_in_a_row_then_the_turn_ends() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    user_config(
        &sb,
        r#"
[[hooks]]
event = "stop"
command = "echo 'keep going' >&2; exit 2"
"#,
    );
    mock.set_responder(|_| MockResponse::text("answer"));
    let run = sb.exec(&mock, &["--json", "do it"]).await;
    run.assert_ok();
    assert_eq!(mock.requests().len(), 4, "the turn and three more");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hanging_hook_is_killed_at_its_timeout_and_the_call_goes_on_with_a_warning() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    let pid_file = out(&sb, "hook.pid");
    user_config(
        &sb,
        &format!(
            r#"
[[hooks]]
event = "pre_tool_use"
timeout_s = 1
command = "sleep 60 & echo $! > '{}'; wait"
"#,
            pid_file.display()
        ),
    );
    mock.set_responder(|body| match tool_count(body) {
        0 => run_command("c1", "echo went on > after.txt"),
        _ => MockResponse::text("done"),
    });
    let started = std::time::Instant::now();
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "go"])
        .await;
    run.assert_ok();
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_eq!(sb.read("after.txt"), "went on\n", "the call went on");
    let events = run.events();
    let runs = hook_runs(&events);
    assert_eq!(runs[0]["timed_out"], true);
    assert!(runs[0]["exit"].is_null());
    assert!(runs[0]["outcome"].as_str().unwrap().contains("killed"));
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    assert!(
        stat.is_empty() || stat.split(") ").nth(1).is_some_and(|r| r.starts_with('Z')),
        "the hook's child still runs: {stat}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_workspace_hook_runs_only_after_the_user_approved_that_file() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    let config = r#"
[[hooks]]
event = "post_tool_use"
command = "echo ran >> hook-ran.txt"
"#;
    sb.workspace_config(config);
    mock.set_responder(|body| match tool_count(body) {
        0 => run_command("c1", "true"),
        _ => MockResponse::text("done"),
    });
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "go"])
        .await;
    run.assert_ok();
    assert!(
        !sb.ws().join("hook-ran.txt").exists(),
        "not approved: not run"
    );
    let notices = of_type(&run.events(), "notice")
        .iter()
        .map(|e| e["message"].as_str().unwrap().to_string())
        .collect::<Vec<_>>();
    assert!(
        notices.iter().any(|m| m.contains("squad hooks trust")),
        "{notices:?}"
    );

    let listed = sb.run(None, &["hooks"]).await;
    listed.assert_ok();
    assert!(
        listed.stdout.contains("waits for `squad hooks trust`"),
        "{}",
        listed.stdout
    );
    sb.run(None, &["hooks", "trust"]).await.assert_ok();
    let listed = sb.run(None, &["hooks"]).await;
    assert!(
        listed.stdout.contains("runs (approved)"),
        "{}",
        listed.stdout
    );

    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "go"])
        .await;
    run.assert_ok();
    assert_eq!(sb.read("hook-ran.txt"), "ran\n");

    // A changed file needs a new approval.
    sb.workspace_config(&config.replace("echo ran", "echo changed"));
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "go"])
        .await;
    run.assert_ok();
    assert_eq!(
        sb.read("hook-ran.txt"),
        "ran\n",
        "the changed hook did not run"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn agent_start_and_agent_stop_hooks_run_for_a_worker_with_its_result() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    let log = out(&sb, "lifecycle.jsonl");
    user_config(
        &sb,
        &format!(
            r#"
[[hooks]]
event = "agent_start"
command = "cat >> '{log}'; echo >> '{log}'"

[[hooks]]
event = "agent_stop"
role = "agentic_coder"
command = "cat >> '{log}'; echo >> '{log}'"

[[hooks]]
event = "agent_stop"
role = "some_other_role"
command = "echo wrong >> '{log}'"
"#,
            log = log.display()
        ),
    );
    mock.set_responder(|body| {
        if is_worker(body) {
            return MockResponse::tool_call(
                "r",
                "return_results",
                &json!({"result": {"status": "success", "summary": "looked around",
                    "artifacts": [], "known_issues": []}})
                .to_string(),
            );
        }
        match tool_count(body) {
            0 => spawn("agentic_coder", "look around"),
            1 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            _ => MockResponse::text("done"),
        }
    });
    sb.exec(&mock, &["--json", "--approval", "auto", "go"])
        .await
        .assert_ok();
    let lines: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["hook_event_name"], "SubagentStart");
    assert_eq!(lines[0]["role"], "agentic_coder");
    assert_eq!(lines[1]["hook_event_name"], "SubagentStop");
    assert_eq!(lines[1]["result"]["summary"], "looked around");
    assert_eq!(lines[0]["agent_id"], lines[1]["agent_id"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_completed_hook_hears_the_board_task_a_worker_finished() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    let log = out(&sb, "tasks.jsonl");
    user_config(
        &sb,
        &format!(
            "[[hooks]]\nevent = \"task_completed\"\ncommand = \"cat >> '{}'\"\n",
            log.display()
        ),
    );
    mock.set_responder(|body| {
        if is_worker(body) {
            return MockResponse::tool_call(
                "r",
                "return_results",
                &json!({"result": {"status": "success", "summary": "t1 done",
                    "artifacts": [], "known_issues": []}})
                .to_string(),
            );
        }
        match tool_count(body) {
            0 => MockResponse::tool_call(
                "p",
                "plan_tasks",
                &json!({"tasks": [{"id": "t1", "title": "the first task"}]}).to_string(),
            ),
            1 => MockResponse::tool_call(
                "s",
                "spawn_agent",
                &json!({"role_name": "agentic_coder", "task_prompt": "do t1", "task_id": "t1"})
                    .to_string(),
            ),
            2 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            _ => MockResponse::text("done"),
        }
    });
    sb.exec(&mock, &["--json", "--approval", "auto", "go"])
        .await
        .assert_ok();
    let got: Value = serde_json::from_str(std::fs::read_to_string(&log).unwrap().trim()).unwrap();
    assert_eq!(got["hook_event_name"], "TaskCompleted");
    assert_eq!(got["task"]["id"], "t1");
    assert_eq!(got["task"]["title"], "the first task");
    assert_eq!(got["task"]["status"], "done");
}

/// A hook is the user's own policy: it runs with the user's rights, outside the agent's
/// sandbox, in the project folder, as Claude Code's and Codex's do (most log under home).
#[tokio::test(flavor = "multi_thread")]
async fn a_hook_runs_with_the_users_rights_not_in_the_agents_sandbox() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    user_config(
        &sb,
        r#"
[[hooks]]
event = "post_tool_use"
matcher = "run_command"
command = "mkdir -p \"$HOME/.claude/logs\" && echo x > \"$HOME/.claude/logs/hook.log\"; echo x > hook-in-root.txt"
"#,
    );
    mock.set_responder(|body| match tool_count(body) {
        0 => run_command("c1", "echo hi > \"$HOME/agent-escaped.txt\""),
        _ => MockResponse::text("done"),
    });
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "say hi"])
        .await;
    run.assert_ok();
    assert_eq!(hook_runs(&run.events()).len(), 1);
    assert_eq!(sb.read("hook-in-root.txt"), "x\n", "it runs in the project");
    assert!(
        sb.home.path().join(".claude/logs/hook.log").exists(),
        "the hook wrote its log under home"
    );
    assert!(
        !sb.home.path().join("agent-escaped.txt").exists(),
        "the agent's own command stays in its sandbox"
    );
}
