//! The OS sandbox of agents' commands, end to end on Linux: the real `squad exec` against
//! the mock server (and the runtime's API where the user must answer). A sandboxed
//! `run_command` writes only in its agent's root and `$TMPDIR`, reaches no listener on
//! 127.0.0.1 unless `[sandbox] network = true`, is told in plain words when the sandbox
//! refused it, and leaves the sandbox only with the user's approval; without a sandbox
//! every command asks, and the start line says why.
#![cfg(target_os = "linux")]
// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use ::squad::protocol::{ApprovalAction, ApprovalDecision, ApprovalPolicy, EventKind, Op};
use common::agents::*;
use common::engine::*;
use common::*;
use serde_json::{Value, json};
use std::path::Path;

/// A shell line that tries to write `path` and prints `WROTE name` or `DENIED name`.
fn attempt(path: &str, name: &str) -> String {
    format!(
        "if echo x > \"{path}\" 2>/dev/null; then echo WROTE {name}; else echo DENIED {name}; fi; "
    )
}

fn run(id: &str, command: &str) -> MockResponse {
    MockResponse::tool_call(
        id,
        "run_command",
        &json!({ "command": command }).to_string(),
    )
}

/// The output of the last tool result the agent was given.
fn last_result(body: &Value) -> String {
    tool_messages(body)
        .last()
        .map(|(_, c)| c.clone())
        .unwrap_or_default()
}

/// The result of the persona's `n`th call, read from its next request.
fn result_of_call(mock: &MockServer, n: usize) -> String {
    mock.requests()
        .iter()
        .map(|r| &r.body)
        .find(|b| !is_worker(b) && tool_count(b) == n)
        .map(last_result)
        .unwrap_or_default()
}

/// A file under /etc no test run shares, removed if a broken sandbox let it be written.
struct EtcFile(String);

impl EtcFile {
    fn new() -> Self {
        Self(format!("/etc/squad-sandbox-test-{}", uuid::Uuid::new_v4()))
    }
}

impl Drop for EtcFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_persona_writes_only_in_its_root_and_tmpdir_and_is_told_it_was_the_sandbox() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    let etc = EtcFile::new();
    let home = sb.home.path().display().to_string();
    let script = [
        attempt("$HOME/home.txt", "home"),
        attempt(&etc.0, "etc"),
        attempt("in-root.txt", "root"),
        attempt("$TMPDIR/t.txt", "tmp"),
        "echo x > \"$HOME/last.txt\"".to_string(),
    ]
    .concat();
    mock.push_all([run("c1", &script), MockResponse::text("done")]);
    let run = sb
        .exec(&mock, &["--approval", "auto", "try the sandbox"])
        .await;
    run.assert_ok();
    let out = result_of_call(&mock, 1);
    for line in ["DENIED home", "DENIED etc", "WROTE root", "WROTE tmp"] {
        assert!(out.contains(line), "{line}: {out}");
    }
    assert!(out.contains("exit code: 1"), "{out}");
    assert!(
        out.contains("[squad] The sandbox blocked this")
            && out.contains("escalate: true")
            && out.contains(&sb.ws().canonicalize().unwrap().display().to_string()),
        "the model is told it was the sandbox: {out}"
    );
    assert_eq!(sb.read("in-root.txt"), "x\n");
    assert!(!Path::new(&home).join("home.txt").exists());
    assert!(!Path::new(&home).join("last.txt").exists());
    assert!(!Path::new(&etc.0).exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn no_listener_on_loopback_is_reachable_unless_the_network_is_allowed() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect =
        format!("if exec 3<>/dev/tcp/127.0.0.1/{port}; then echo CONNECTED; else echo REFUSED; fi");
    for (config, expected) in [
        ("", "REFUSED"),
        ("[sandbox]\nnetwork = true\n", "CONNECTED"),
    ] {
        let mock = MockServer::start().await;
        let sb = Sandbox::new();
        sb.workspace_config(config);
        mock.push_all([run("c1", &connect), MockResponse::text("done")]);
        sb.exec(&mock, &["--approval", "auto", "connect"])
            .await
            .assert_ok();
        let out = result_of_call(&mock, 1);
        assert!(out.contains(expected), "{config:?}: {out}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_writes_in_its_worktree_not_in_the_workspace_a_siblings_worktree_home_or_etc() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    git(sb.ws(), &["init", "-q"]);
    sb.write("a.txt", "a\n");
    git(sb.ws(), &["add", "-A"]);
    git(sb.ws(), &["commit", "-qm", "start"]);
    let etc = EtcFile::new();
    let ws = sb.ws().canonicalize().unwrap().display().to_string();
    let worktrees = sb.data_dir().join("worktrees").display().to_string();
    // Every worktree but its own ($PWD): the first worker's is still there.
    let siblings = format!(
        "for d in {worktrees}/*/*/; do [ \"${{d%/}}\" = \"$PWD\" ] && continue; {} done; ",
        attempt("${d}sibling.txt", "sibling")
    );
    let script = [
        attempt(&format!("{ws}/from-worker.txt"), "workspace"),
        siblings,
        attempt("$HOME/home.txt", "home"),
        attempt(&etc.0, "etc"),
        attempt("inside.txt", "worktree"),
        attempt("$TMPDIR/t.txt", "tmp"),
    ]
    .concat();
    mock.set_responder(move |body| {
        let task = transcript(body)
            .into_iter()
            .find(|(role, _)| role == "user")
            .map(|(_, t)| t)
            .unwrap_or_default();
        if is_worker(body) {
            let first = task.contains("task A");
            return match (first, tool_count(body)) {
                (true, 0) => MockResponse::tool_call(
                    "w",
                    "write_file",
                    &json!({"path": "a.txt", "content": "a by A\n"}).to_string(),
                ),
                (false, 0) => run("c", &script),
                (first, _) => {
                    let file = if first { "a.txt" } else { "inside.txt" };
                    MockResponse::tool_call(
                        "r",
                        "return_results",
                        &json!({"result": {"status": "success", "summary": "done",
                            "artifacts": [{"file_path": file, "description": "it",
                                "change_type": if first { "modified" } else { "created" }}],
                            "known_issues": []}})
                        .to_string(),
                    )
                }
            };
        }
        match tool_count(body) {
            0 => spawn("implementer", "task A"),
            1 | 3 => MockResponse::tool_call("wait", "wait_for_agents", "{}"),
            2 => spawn("implementer", "task B"),
            _ => MockResponse::text("done"),
        }
    });
    sb.exec(&mock, &["--approval", "auto", "two workers"])
        .await
        .assert_ok();
    let out = mock
        .requests()
        .iter()
        .map(|r| &r.body)
        .find(|b| is_worker(b) && tool_count(b) == 1 && last_result(b).contains("WROTE"))
        .map(last_result)
        .expect("the second worker's command ran");
    for line in [
        "DENIED workspace",
        "DENIED sibling",
        "DENIED home",
        "DENIED etc",
        "WROTE worktree",
        "WROTE tmp",
    ] {
        assert!(out.contains(line), "{line}: {out}");
    }
    assert!(!out.contains("WROTE sibling"), "{out}");
    assert!(!sb.ws().join("from-worker.txt").exists());
    assert!(!Path::new(&etc.0).exists());
    // Its own file reached the workspace the ordinary way, by the merge.
    assert_eq!(sb.read("inside.txt"), "x\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn under_ask_a_sandboxed_command_runs_without_a_prompt_and_without_a_sandbox_every_command_asks()
 {
    for unavailable in [false, true] {
        let mock = MockServer::start().await;
        let sb = Sandbox::new();
        mock.push_all([run("c1", "echo ran > ran.txt"), MockResponse::text("done")]);
        let mut cmd = sb.command(Some(&mock));
        if unavailable {
            cmd.env("SQUAD_SANDBOX_UNAVAILABLE", "1");
        }
        let out = cmd
            .args(["exec", "--approval", "ask", "run it"])
            .stdin(std::process::Stdio::null())
            .output()
            .await
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        // Without a sandbox the one command was refused: nothing could change (exit 3).
        let code = if unavailable { 3 } else { 0 };
        assert_eq!(out.status.code(), Some(code), "{stderr}");
        let result = result_of_call(&mock, 1);
        if unavailable {
            assert!(
                stderr.contains("no sandbox for commands: Landlock is unavailable (SQUAD_SANDBOX_UNAVAILABLE is set); every command asks"),
                "{stderr}"
            );
            // `exec` has nobody to answer: the question is a refusal.
            assert!(result.contains("nobody can answer"), "{result}");
            assert!(!sb.ws().join("ran.txt").exists());
        } else {
            assert!(!stderr.contains("no sandbox"), "{stderr}");
            assert!(result.contains("exit code: 0"), "{result}");
            assert_eq!(sb.read("ran.txt"), "ran\n");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn auto_will_not_start_without_a_sandbox_unless_it_is_turned_off() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.push_all([run("c1", "echo ran > ran.txt"), MockResponse::text("done")]);
    let mut cmd = sb.command(Some(&mock));
    cmd.env("SQUAD_SANDBOX_UNAVAILABLE", "1")
        .args(["exec", "--approval", "auto", "run it"])
        .stdin(std::process::Stdio::null());
    let out = cmd.output().await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("there is none here: Landlock is unavailable")
            && stderr.contains("--sandbox off"),
        "{stderr}"
    );
    assert!(mock.requests().is_empty(), "nothing was sent");

    let mut cmd = sb.command(Some(&mock));
    cmd.env("SQUAD_SANDBOX_UNAVAILABLE", "1")
        .args(["exec", "--approval", "auto", "--sandbox", "off", "run it"])
        .stdin(std::process::Stdio::null());
    let out = cmd.output().await.unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(sb.read("ran.txt"), "ran\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn escalate_asks_the_user_naming_the_reason_and_runs_outside_once_approved() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("escalated.txt");
    let command = format!("echo out > {}", target.display());
    mock.push_all([
        MockResponse::tool_call(
            "c1",
            "run_command",
            &json!({"command": command, "escalate": true,
                "reason": "writes the report outside the workspace"})
            .to_string(),
        ),
        MockResponse::text("done"),
    ]);
    // `auto`: routine commands are not asked about, leaving the sandbox is.
    let mut handle = start_engine(&mock, &sb, ApprovalPolicy::Auto).await;
    say(&handle, "write the report");
    let mut seen = Vec::new();
    let asked = next_event(&mut handle, &mut seen, |e| {
        matches!(e.kind, EventKind::ApprovalRequested { .. })
    })
    .await;
    let EventKind::ApprovalRequested {
        request_id, action, ..
    } = asked.kind
    else {
        unreachable!()
    };
    assert_eq!(
        action,
        ApprovalAction::Escalation {
            command,
            reason: "writes the report outside the workspace".into()
        }
    );
    assert!(!target.exists(), "nothing runs before the answer");
    handle
        .ops
        .send(Op::Approval {
            request_id,
            decision: ApprovalDecision::Approve,
        })
        .unwrap();
    next_event(&mut handle, &mut seen, |e| {
        matches!(e.kind, EventKind::Idle)
    })
    .await;
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "out\n");
    assert!(result_of_call(&mock, 1).contains("exit code: 0"));
}

/// A worker commits in its own worktree under the sandbox (git writes the worktree's
/// folder in `.git/worktrees`, the object store and its branch's ref), while the user's
/// checkout and the rest of their `.git` stay closed; the commit reaches the workspace by
/// the merge, and the user's HEAD does not move.
#[tokio::test(flavor = "multi_thread")]
async fn a_worker_commits_in_its_worktree_under_the_sandbox_but_cannot_touch_the_users_git() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    git(sb.ws(), &["init", "-q"]);
    sb.write("a.txt", "a\n");
    git(sb.ws(), &["add", "-A"]);
    git(sb.ws(), &["commit", "-qm", "start"]);
    let head = git(sb.ws(), &["rev-parse", "HEAD"]);
    let ws = sb.ws().canonicalize().unwrap().display().to_string();
    let script = [
        "git add new.txt && git -c user.name=worker -c user.email=w@example.com \
         -c commit.gpgsign=false commit -qm 'by the worker' && echo COMMITTED; "
            .to_string(),
        attempt(&format!("{ws}/.git/config"), "dotgit"),
        attempt(&format!("{ws}/.git/refs/heads/user-branch"), "userref"),
        attempt(&format!("{ws}/user-file.txt"), "workspace"),
    ]
    .concat();
    mock.set_responder(move |body| {
        if is_worker(body) {
            return match tool_count(body) {
                0 => MockResponse::tool_call(
                    "w",
                    "write_file",
                    &json!({"path": "new.txt", "content": "by the worker\n"}).to_string(),
                ),
                1 => run("c", &script),
                _ => MockResponse::tool_call(
                    "r",
                    "return_results",
                    &json!({"result": {"status": "success", "summary": "committed",
                        "artifacts": [{"file_path": "new.txt", "description": "it",
                            "change_type": "created"}],
                        "known_issues": []}})
                    .to_string(),
                ),
            };
        }
        match tool_count(body) {
            0 => spawn("implementer", "commit a file"),
            1 => MockResponse::tool_call("wait", "wait_for_agents", "{}"),
            _ => MockResponse::text("done"),
        }
    });
    sb.exec(&mock, &["--approval", "auto", "commit"])
        .await
        .assert_ok();
    let out = mock
        .requests()
        .iter()
        .map(|r| &r.body)
        .find(|b| is_worker(b) && tool_count(b) == 2)
        .map(last_result)
        .expect("the worker's command ran");
    for line in [
        "COMMITTED",
        "DENIED dotgit",
        "DENIED userref",
        "DENIED workspace",
    ] {
        assert!(out.contains(line), "{line}: {out}");
    }
    assert_eq!(sb.read("new.txt"), "by the worker\n", "merged");
    assert_eq!(git(sb.ws(), &["rev-parse", "HEAD"]), head);
    assert!(!sb.ws().join("user-file.txt").exists());
    assert!(!sb.ws().join(".git/refs/heads/user-branch").exists());
}

/// The `squad-sandbox-*` dirs in the binary's temp folder.
fn command_dirs(sb: &Sandbox) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(sb.tmp.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("squad-sandbox-"))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_command_dir_left_by_a_killed_squad_is_removed_by_the_next_squad() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config("[verify]\nenabled = false\n");
    mock.push(run("slow", "sleep 30"));
    let mut cmd = sb.command(Some(&mock));
    cmd.args(["exec", "--approval", "auto", "the slow thing"]);
    let mut child = cmd.spawn().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    // Its lock in place, not only the dir: a dir killed before its lock is renamed in has
    // no lock file, and the sweep rightly leaves such a dir alone.
    while !command_dirs(&sb)
        .iter()
        .any(|d| d.join(".squad-lock").exists())
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the command never started"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    let left = command_dirs(&sb);
    assert_eq!(
        left.len(),
        1,
        "a SIGKILL leaves its command's dir: {left:?}"
    );

    mock.push_all([run("quick", "echo quick"), MockResponse::text("done")]);
    sb.exec(&mock, &["--approval", "auto", "the quick thing"])
        .await
        .assert_ok();
    assert!(result_of_call(&mock, 1).contains("quick"));
    assert_eq!(
        command_dirs(&sb),
        Vec::<std::path::PathBuf>::new(),
        "the next squad removed the dead one's dir, and its own when its command ended"
    );
}
