//! Placed workers (issue 52): `spawn_agent`'s `environment` runs a worker's tools on the far
//! side of a real ssh login (the harness's sshd) or in a real Podman container, its base
//! carried there and its change brought back into the merge queue; the real binary
//! (`squad exec`) against the mock model server, on real git repositories.
#![cfg(target_os = "linux")]
// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::*;
use common::podman::{IMAGE, Podman};
use common::squad::squad_bin;
use common::sshd::Sshd;
use common::*;
use serde_json::{Value, json};
use std::path::Path;

fn repo(config: &str) -> Sandbox {
    let sb = Sandbox::new();
    sb.workspace_config(config);
    git(sb.ws(), &["init", "-q"]);
    sb.write("hello.txt", "hello world\n");
    sb.write("src/lib.rs", "pub fn one() -> u32 { 1 }\n");
    git(sb.ws(), &["add", "-A"]);
    git(sb.ws(), &["commit", "-qm", "start"]);
    sb
}

fn ssh_env(name: &str, sshd: &Sshd, far: &Path) -> String {
    format!(
        "[environments.{name}]\nkind = \"ssh\"\nhost = \"{host}\"\nworkdir = \"{far}\"\n\
         squad = \"{squad}\"\nssh_config = \"{cfg}\"\n",
        host = Sshd::HOST,
        far = far.display(),
        squad = squad_bin().display(),
        cfg = sshd.ssh_config.display(),
    )
}

fn container_env(name: &str, podman: &Podman) -> String {
    // The binary under test on both sides (`SQUAD_TEST_BIN` may name an older one).
    let mounts: Vec<String> = Podman::squad_mounts(&squad_bin());
    format!(
        "[environments.{name}]\nkind = \"container\"\nimage = \"{IMAGE}\"\nsocket = \"{sock}\"\n\
         squad = \"/usr/local/bin/squad\"\nmounts = {mounts:?}\n",
        sock = podman.socket,
    )
}

/// A worker that writes `file`, records where its commands ran, and returns.
fn worker(body: &Value, file: &str, mark_cmd: &str) -> MockResponse {
    match tool_count(body) {
        0 => MockResponse::tool_call(
            "w",
            "write_file",
            &json!({"path": file, "content": format!("written by {file}\n")}).to_string(),
        ),
        1 => MockResponse::tool_call(
            "m",
            "run_command",
            &json!({ "command": format!("( {mark_cmd} ) > {file}.where 2>&1") }).to_string(),
        ),
        _ => MockResponse::tool_call("r", "return_results", &good_result(file).to_string()),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_placed_over_ssh_edits_there_and_its_change_is_merged_here() {
    let Some(sshd) = Sshd::start("a_worker_placed_over_ssh_edits_there") else {
        return;
    };
    let far = tempfile::tempdir().unwrap();
    let mock = MockServer::start().await;
    let config = format!(
        "[verify]\nenabled = false\n{}",
        ssh_env("far", &sshd, far.path())
    );
    let sb = repo(&config);
    mock.set_responder(move |body| {
        if is_worker(body) {
            return worker(body, "remote.txt", "echo $SQUAD_FAR_SIDE");
        }
        match tool_count(body) {
            0 => MockResponse::tool_call(
                "s",
                "spawn_agent",
                &json!({"role_name": "implementer", "task_prompt": "write remote.txt",
                        "environment": "far"})
                .to_string(),
            ),
            1 => MockResponse::tool_call("wa", "wait_for_agents", "{}"),
            _ => MockResponse::text("done"),
        }
    });
    let run = sb.exec(&mock, &["--approval", "auto", "place one"]).await;
    run.assert_ok();
    if !sb.ws().join("remote.txt").exists() {
        let log = std::fs::read_dir(sb.data_dir()).unwrap().count();
        panic!("no remote.txt ({log}):\n{}\n{}", run.stdout, run.stderr);
    }
    assert_eq!(sb.read("remote.txt"), "written by remote.txt\n");
    // Only the sshd's login sets the mark: the command ran there.
    assert_eq!(sb.read("remote.txt.where"), "ssh\n");
    // Its root there is gone; the store there holds the base for the next worker.
    let left: Vec<String> = std::fs::read_dir(far.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, vec![".squad-store.git".to_string()], "{left:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_placed_in_a_container_edits_there_without_network_and_its_change_is_merged() {
    let Some(podman) = Podman::start("a_worker_placed_in_a_container_edits_there") else {
        return;
    };
    let mock = MockServer::start().await;
    let config = format!(
        "[verify]\nenabled = false\n{}",
        container_env("boxed", &podman)
    );
    let sb = repo(&config);
    mock.set_responder(move |body| {
        if is_worker(body) {
            let mark = "cat /etc/squad-far-side; nc -w 2 10.0.2.2 80 </dev/null; echo rc=$?";
            return worker(body, "boxed.txt", mark);
        }
        match tool_count(body) {
            0 => MockResponse::tool_call(
                "s",
                "spawn_agent",
                &json!({"role_name": "implementer", "task_prompt": "write boxed.txt",
                        "environment": "boxed"})
                .to_string(),
            ),
            1 => MockResponse::tool_call("wa", "wait_for_agents", "{}"),
            _ => MockResponse::text("done"),
        }
    });
    let run = sb.exec(&mock, &["--approval", "auto", "place one"]).await;
    run.assert_ok();
    assert!(
        sb.ws().join("boxed.txt").exists(),
        "{}\n{}",
        run.stdout,
        run.stderr
    );
    assert_eq!(sb.read("boxed.txt"), "written by boxed.txt\n");
    // Only the image has the marker; the network is none: the connect failed.
    let wher = sb.read("boxed.txt.where");
    assert!(wher.starts_with("container\n"), "{wher}");
    assert!(wher.trim_end().ends_with("rc=1"), "{wher}");
    assert!(
        podman.containers_named("squad-boxed-").is_empty(),
        "the worker's container is removed when it ends"
    );
}

/// The copilot spawns into `env` and ends with what the spawn answered.
fn spawn_into(env: &'static str) -> impl Fn(&Value) -> MockResponse {
    move |body| {
        if is_worker(body) {
            return MockResponse::tool_call("r", "return_results", &good_result("x").to_string());
        }
        match tool_count(body) {
            0 => MockResponse::tool_call(
                "s",
                "spawn_agent",
                &json!({"role_name": "implementer", "task_prompt": "anything",
                        "environment": env})
                .to_string(),
            ),
            _ => MockResponse::text("done"),
        }
    }
}

/// What the copilot read back from its spawn.
fn spawn_answer(mock: &MockServer) -> String {
    let requests = mock.requests();
    let last = requests.iter().rev().find(|r| !is_worker(&r.body)).unwrap();
    tool_messages(&last.body)
        .into_iter()
        .find(|(id, _)| id == "s")
        .map(|(_, out)| out)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_spawn_may_name_only_an_environment_the_config_defines() {
    let mock = MockServer::start().await;
    let sb = repo(
        "[environments.gpu]\nkind = \"ssh\"\nhost = \"nowhere.invalid\"\nworkdir = \"/w\"\n\
         [environments.box]\nkind = \"container\"\nimage = \"x\"\n",
    );
    mock.set_responder(spawn_into("nope"));
    sb.exec(&mock, &["--approval", "auto", "place"])
        .await
        .assert_ok();
    let answer = spawn_answer(&mock);
    assert!(
        answer.contains("no environment named `nope`: the config defines: box, gpu"),
        "{answer}"
    );
    assert!(
        !mock.requests().iter().any(|r| is_worker(&r.body)),
        "no worker started"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_spawn_into_a_missing_image_fails_naming_the_environment_and_leaves_nothing() {
    let Some(podman) = Podman::start("a_spawn_into_a_missing_image_fails") else {
        return;
    };
    let mock = MockServer::start().await;
    let config = container_env("nobox", &podman).replace(IMAGE, "localhost/squad-no-such:1");
    let sb = repo(&config);
    mock.set_responder(spawn_into("nobox"));
    sb.exec(&mock, &["--approval", "auto", "place"])
        .await
        .assert_ok();
    let answer = spawn_answer(&mock);
    assert!(
        answer.contains(
            "cannot start the worker: environment 'nobox': cannot create a container from \
             localhost/squad-no-such:1"
        ),
        "{answer}"
    );
    assert!(!mock.requests().iter().any(|r| is_worker(&r.body)));
    assert!(podman.containers_named("squad-nobox-").is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_spawn_to_an_unreachable_host_fails_naming_the_environment_and_leaves_nothing() {
    let far = tempfile::tempdir().unwrap();
    let mock = MockServer::start().await;
    // A port nobody listens on: the connect is refused at once.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let cfg = far.path().join("ssh_config");
    std::fs::write(
        &cfg,
        format!("Host deadhost\n  HostName 127.0.0.1\n  Port {port}\n  BatchMode yes\n"),
    )
    .unwrap();
    let sb = repo(&format!(
        "[environments.dead]\nkind = \"ssh\"\nhost = \"deadhost\"\nworkdir = \"{}\"\n\
         ssh_config = \"{}\"\n",
        far.path().join("w").display(),
        cfg.display()
    ));
    mock.set_responder(spawn_into("dead"));
    sb.exec(&mock, &["--approval", "auto", "place"])
        .await
        .assert_ok();
    let answer = spawn_answer(&mock);
    assert!(
        answer.contains("cannot start the worker: environment 'dead':"),
        "{answer}"
    );
    assert!(answer.contains("Connection refused"), "{answer}");
    assert!(!mock.requests().iter().any(|r| is_worker(&r.body)));
    assert!(!far.path().join("w").exists(), "nothing made there");
}

/// The copilot spawns one worker into `env` that runs `sleep 60` there, then waits.
fn sleeper_into(env: &'static str) -> impl Fn(&Value) -> MockResponse {
    move |body| {
        if is_worker(body) {
            return match tool_count(body) {
                0 => MockResponse::tool_call("z", "run_command", r#"{"command": "sleep 60"}"#),
                _ => MockResponse::tool_call("r", "return_results", &good_result("x").to_string()),
            };
        }
        match tool_count(body) {
            0 => MockResponse::tool_call(
                "s",
                "spawn_agent",
                &json!({"role_name": "implementer", "task_prompt": "sleep there",
                        "environment": env})
                .to_string(),
            ),
            1 => MockResponse::tool_call("wa", "wait_for_agents", "{}"),
            _ => MockResponse::text("done"),
        }
    }
}

/// Waits until a container named `prefix…` runs and the worker's command has begun.
async fn container_running(podman: &Podman, mock: &MockServer, prefix: &str) -> String {
    let start = std::time::Instant::now();
    loop {
        let names = podman.containers_named(prefix);
        let asked = mock
            .requests()
            .iter()
            .filter(|r| is_worker(&r.body))
            .count();
        if let (Some(name), true) = (names.first(), asked >= 1) {
            // The sleep has been sent there by now.
            tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
            return name.clone();
        }
        assert!(start.elapsed().as_secs() < 60, "no container {prefix}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_placed_workers_container_killed_mid_task_ends_it_failed_with_the_reason() {
    let Some(podman) = Podman::start("a_placed_workers_container_killed_mid_task") else {
        return;
    };
    let mock = MockServer::start().await;
    let sb = repo(&format!(
        "[verify]\nenabled = false\n{}",
        container_env("doomed", &podman)
    ));
    mock.set_responder(sleeper_into("doomed"));
    let run = sb.exec(&mock, &["--approval", "auto", "place"]);
    let kill = async {
        let name = container_running(&podman, &mock, "squad-doomed-").await;
        let out = podman.cli().args(["rm", "-f", &name]).output().unwrap();
        assert!(out.status.success());
    };
    let (run, ()) = tokio::join!(run, kill);
    let out = format!("{}{}", run.stdout, run.stderr);
    assert!(
        out.contains("failed: environment 'doomed': connection lost"),
        "{out}"
    );
    assert!(out.contains("none of its change had come back"), "{out}");
    // The supervisor was told why.
    let requests = mock.requests();
    let last = requests.iter().rev().find(|r| !is_worker(&r.body)).unwrap();
    let told = tool_messages(&last.body)
        .into_iter()
        .find(|(id, _)| id == "wa")
        .map(|(_, out)| out)
        .unwrap();
    assert!(
        told.contains("environment 'doomed': connection lost"),
        "{told}"
    );
    assert!(podman.containers_named("squad-doomed-").is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn containers_a_killed_squad_left_are_swept_at_the_next_start_and_no_other() {
    let Some(podman) = Podman::start("containers_a_killed_squad_left_are_swept") else {
        return;
    };
    // Names of this run's own: the engine's containers outlive a failed run.
    let env: &'static str = Box::leak(format!("sw{}", std::process::id()).into_boxed_str());
    let prefix = format!("squad-{env}-");
    let mock = MockServer::start().await;
    let sb = repo(&format!(
        "[verify]\nenabled = false\n{}",
        container_env(env, &podman)
    ));
    mock.set_responder(sleeper_into(env));
    let mut cmd = sb.command(Some(&mock));
    cmd.args(["exec", "--approval", "auto", "place"]);
    let mut child = cmd.spawn().unwrap();
    let left = container_running(&podman, &mock, &prefix).await;
    child.start_kill().unwrap();
    let _ = child.wait().await;
    assert_eq!(podman.containers_named(&prefix), vec![left.clone()]);
    // Two containers squad did not start: one unlabelled, one of another data dir.
    let (plain, other) = (format!("{prefix}plain"), format!("{prefix}not-ours"));
    let label = "--label=squad.data=/somewhere/else";
    for args in [
        vec!["create", "--name", plain.as_str(), IMAGE, "true"],
        vec![
            "create",
            "--name",
            other.as_str(),
            label,
            "--label=squad.session=x",
            IMAGE,
            "true",
        ],
    ] {
        let out = podman
            .cli()
            .arg("--url")
            .arg(&podman.socket)
            .args(&args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mock2 = MockServer::start().await;
    mock2.set_responder(|_| MockResponse::text("hello"));
    sb.exec(&mock2, &["hi"]).await.assert_ok();
    let mut names = podman.containers_named(&prefix);
    for name in &names {
        let _ = podman.cli().args(["rm", "-f", name]).output();
    }
    names.sort();
    assert_eq!(names, vec![other, plain]);
}

/// The worker's task, which names it.
fn task_of(body: &Value) -> String {
    transcript(body)
        .into_iter()
        .find(|(role, _)| role == "user")
        .map(|(_, text)| text)
        .unwrap_or_default()
}

/// A scenario worker: writes its file, records where its commands ran, claims the file.
fn scenario_worker(body: &Value) -> MockResponse {
    let task = task_of(body);
    let (file, mark) = match task.split(':').next().unwrap_or_default() {
        "far" => ("remote.txt", "echo $SQUAD_FAR_SIDE"),
        "boxed" => (
            "boxed.txt",
            "cat /etc/squad-far-side; nc -w 2 10.0.2.2 80 </dev/null; echo rc=$?",
        ),
        "doomed" => {
            return match tool_count(body) {
                0 => MockResponse::tool_call("z", "run_command", r#"{"command": "sleep 60"}"#),
                _ => MockResponse::tool_call("r", "return_results", &good_result("x").to_string()),
            };
        }
        _ => ("local.txt", "echo here"),
    };
    if tool_count(body) < 2 {
        return worker(body, file, mark);
    }
    let artifacts = json!([{"file_path": file, "description": "written", "change_type": "created"},
                           {"file_path": format!("{file}.where"), "description": "where it ran",
                            "change_type": "created"}]);
    MockResponse::tool_call(
        "r",
        "return_results",
        &json!({"result": {"status": "success", "summary": file, "artifacts": artifacts,
                           "known_issues": []}})
        .to_string(),
    )
}

/// The issue's scenario: the copilot spawns four implementers at once, one here, one in a
/// container, one over ssh, and one in a container that is killed mid-task; three merge
/// verified, the fourth ends failed with the reason.
#[tokio::test(flavor = "multi_thread")]
async fn scenario_three_workers_here_in_a_container_and_over_ssh_merge_verified_a_fourth_killed() {
    let test = "scenario_three_workers_here_in_a_container_and_over_ssh";
    let (Some(sshd), Some(podman)) = (Sshd::start(test), Podman::start(test)) else {
        return;
    };
    let far = tempfile::tempdir().unwrap();
    let mock = MockServer::start().await;
    let sb = repo(&format!(
        "{}{}{}",
        ssh_env("far", &sshd, far.path()),
        container_env("boxed", &podman),
        container_env("doomed", &podman)
    ));
    mock.set_responder(|body| {
        if is_worker(body) {
            return scenario_worker(body);
        }
        let spawn = |id: &str, name: &str, env: Option<&str>| {
            let mut args = json!({"role_name": "implementer",
                                  "task_prompt": format!("{name}: write your file")});
            if let Some(env) = env {
                args["environment"] = json!(env);
            }
            call(id, "spawn_agent", args)
        };
        match tool_count(body) {
            0 => MockResponse::tool_calls(vec![
                spawn("s1", "local", None),
                spawn("s2", "boxed", Some("boxed")),
                spawn("s3", "far", Some("far")),
                spawn("s4", "doomed", Some("doomed")),
            ]),
            4 => MockResponse::tool_call("wa", "wait_for_agents", "{}"),
            n if n < 8 => MockResponse::tool_call(&format!("w{n}"), "wait_for_agents", "{}"),
            _ => MockResponse::text("done"),
        }
    });
    let run = sb.exec(&mock, &["--json", "--approval", "auto", "four workers"]);
    let kill = async {
        let name = container_running(&podman, &mock, "squad-doomed-").await;
        let out = podman.cli().args(["rm", "-f", &name]).output().unwrap();
        assert!(out.status.success());
    };
    let (run, ()) = tokio::join!(run, kill);
    run.assert_ok();
    // All three changes merged into the workspace, each made where it was placed.
    assert_eq!(sb.read("local.txt"), "written by local.txt\n");
    assert_eq!(sb.read("remote.txt"), "written by remote.txt\n");
    assert_eq!(sb.read("boxed.txt"), "written by boxed.txt\n");
    assert_eq!(sb.read("remote.txt.where"), "ssh\n");
    let boxed = sb.read("boxed.txt.where");
    assert!(boxed.starts_with("container\n"), "{boxed}");
    assert!(
        boxed.trim_end().ends_with("rc=1"),
        "no network there: {boxed}"
    );
    assert_eq!(sb.read("local.txt.where"), "here\n");
    // Each of the three was verified, and passed.
    let events = run.events();
    let verdicts = of_type(&events, "verification");
    let passed = verdicts.iter().filter(|v| v["passed"] == true).count();
    assert_eq!(passed, 3, "{verdicts:?}");
    // The fourth ended failed with the reason, and its container is gone.
    let out = format!("{}{}", run.stdout, run.stderr);
    assert!(
        out.contains("environment 'doomed': connection lost"),
        "{out}"
    );
    assert!(podman.containers_named("squad-doomed-").is_empty());
    assert!(podman.containers_named("squad-boxed-").is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn sandbox_env_of_a_local_environment_runs_the_command_here() {
    let sb = repo("[environments.here]\nkind = \"local\"\n");
    let run = sb
        .run(
            None,
            &[
                "sandbox",
                "--env",
                "here",
                "--",
                "sh",
                "-c",
                "echo ran-here; exit 4",
            ],
        )
        .await;
    assert_eq!(run.code, 4, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("ran-here"), "{}", run.stdout);
}

#[tokio::test(flavor = "multi_thread")]
async fn squad_is_copied_to_an_ssh_host_of_this_platform_when_none_is_configured() {
    let Some(sshd) = Sshd::start("squad_is_copied_to_an_ssh_host") else {
        return;
    };
    let far = tempfile::tempdir().unwrap();
    let mock = MockServer::start().await;
    // No `squad = …`, and none on the login's PATH: this squad goes there.
    let squad = squad_bin();
    let config = ssh_env("far", &sshd, far.path())
        .replace(&format!("squad = \"{}\"\n", squad.display()), "");
    assert!(!config.contains("squad ="), "{config}");
    let sb = repo(&format!("[verify]\nenabled = false\n{config}"));
    mock.set_responder(move |body| {
        if is_worker(body) {
            return worker(body, "copied.txt", "echo $SQUAD_FAR_SIDE");
        }
        match tool_count(body) {
            0 => MockResponse::tool_call(
                "s",
                "spawn_agent",
                &json!({"role_name": "implementer", "task_prompt": "write copied.txt",
                        "environment": "far"})
                .to_string(),
            ),
            1 => MockResponse::tool_call("wa", "wait_for_agents", "{}"),
            _ => MockResponse::text("done"),
        }
    });
    sb.exec(&mock, &["--approval", "auto", "place one"])
        .await
        .assert_ok();
    assert_eq!(sb.read("copied.txt.where"), "ssh\n");
    let copied = far.path().join(".squad-bin/squad-0.1.0");
    assert!(copied.is_file(), "squad was copied there");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_placed_spawn_refused_after_its_far_side_was_made_leaves_no_root_there() {
    let Some(sshd) = Sshd::start("a_placed_spawn_refused_after_its_far_side_was_made") else {
        return;
    };
    let far = tempfile::tempdir().unwrap();
    let mock = MockServer::start().await;
    // Room for one worker: both spawns of one response pass the first check, each far
    // side is made, and the second is refused when it would be counted.
    let sb = repo(&format!(
        "[verify]\nenabled = false\n[limits]\nmax_live_agents = 2\n{}",
        ssh_env("far", &sshd, far.path())
    ));
    mock.set_responder(|body| {
        if is_worker(body) {
            return MockResponse::tool_call("r", "return_results", &good_result("x").to_string());
        }
        let spawn = |id: &str| {
            call(
                id,
                "spawn_agent",
                json!({"role_name": "implementer", "task_prompt": "anything",
                       "environment": "far"}),
            )
        };
        match tool_count(body) {
            0 => MockResponse::tool_calls(vec![spawn("s1"), spawn("s2")]),
            2 => MockResponse::tool_call("wa", "wait_for_agents", "{}"),
            _ => MockResponse::text("done"),
        }
    });
    sb.exec(&mock, &["--approval", "auto", "two"])
        .await
        .assert_ok();
    let requests = mock.requests();
    let last = requests.iter().rev().find(|r| !is_worker(&r.body)).unwrap();
    let answers: Vec<String> = tool_messages(&last.body)
        .into_iter()
        .filter(|(id, _)| id.starts_with('s'))
        .map(|(_, out)| out)
        .collect();
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert!(
        answers
            .iter()
            .any(|a| a.contains("live agent limit reached")),
        "{answers:?}"
    );
    // Neither root is left there: the refused one's went when it was refused.
    let left: Vec<String> = std::fs::read_dir(far.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, vec![".squad-store.git".to_string()], "{left:?}");
    let trees = std::process::Command::new("git")
        .args(["worktree", "list"])
        .current_dir(far.path().join(".squad-store.git"))
        .output()
        .unwrap();
    let trees = String::from_utf8_lossy(&trees.stdout).into_owned();
    assert_eq!(trees.lines().count(), 1, "only the store itself: {trees}");
}

/// A worker that writes `before.txt`, then runs a long command there (the kill comes
/// during it); continued, writes `after.txt`, records where its commands ran, returns.
fn resumed_worker(body: &Value) -> MockResponse {
    let write = |id: &str, file: &str| {
        let args = json!({"path": file, "content": format!("{file} written there\n")});
        MockResponse::tool_call(id, "write_file", &args.to_string())
    };
    match tool_count(body) {
        0 => write("w1", "before.txt"),
        1 => MockResponse::tool_call("z", "run_command", r#"{"command": "sleep 60"}"#),
        2 => write("w2", "after.txt"),
        3 => {
            let mark =
                "( cat /etc/squad-far-side; echo \"ssh=$SQUAD_FAR_SIDE\" ) > after.txt.where 2>&1";
            MockResponse::tool_call("m", "run_command", &json!({ "command": mark }).to_string())
        }
        _ => MockResponse::tool_call("r", "return_results", &good_result("after.txt").to_string()),
    }
}

/// The copilot spawns one `resumed_worker` into `env` and waits for it.
fn resumed_into(env: &'static str) -> impl Fn(&Value) -> MockResponse {
    move |body| {
        if is_worker(body) {
            return resumed_worker(body);
        }
        match tool_count(body) {
            0 => MockResponse::tool_call(
                "s",
                "spawn_agent",
                &json!({"role_name": "implementer", "task_prompt": "write two files",
                        "environment": env})
                .to_string(),
            ),
            1 => MockResponse::tool_call("wa", "wait_for_agents", "{}"),
            _ => MockResponse::text("done"),
        }
    }
}

/// Runs `squad exec` until the worker's long command has begun there, then kills it with
/// SIGKILL: nothing of squad's own ending runs.
async fn killed_mid_task(sb: &Sandbox, mock: &MockServer) {
    let mut cmd = sb.command(Some(mock));
    cmd.args(["exec", "--approval", "auto", "place"]);
    let mut child = cmd.spawn().unwrap();
    let start = std::time::Instant::now();
    while !mock
        .requests()
        .iter()
        .any(|r| is_worker(&r.body) && tool_count(&r.body) == 1)
    {
        assert!(start.elapsed().as_secs() < 60, "the worker never wrote");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // The sleep has been sent there by now.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    child.start_kill().unwrap();
    let _ = child.wait().await;
}

/// A unique environment name, so tests running at once never share containers.
fn unique_env(stem: &str) -> &'static str {
    Box::leak(format!("{stem}{}", std::process::id()).into_boxed_str())
}

/// A session whose copilot places a `resumed_into` worker in a container environment of
/// its own (named from `stem`): the prefix of its containers' names, the mock, the sandbox.
async fn resumable_in_a_container(podman: &Podman, stem: &str) -> (String, MockServer, Sandbox) {
    let env = unique_env(stem);
    let mock = MockServer::start().await;
    let sb = repo(&format!(
        "[verify]\nenabled = false\n{}",
        container_env(env, podman)
    ));
    mock.set_responder(resumed_into(env));
    (format!("squad-{env}-"), mock, sb)
}

#[tokio::test(flavor = "multi_thread")]
async fn continue_reattaches_a_placed_worker_whose_container_still_runs() {
    let Some(podman) = Podman::start("continue_reattaches_a_placed_worker") else {
        return;
    };
    let (prefix, mock, sb) = resumable_in_a_container(&podman, "re").await;
    killed_mid_task(&sb, &mock).await;
    let left = podman.containers_named(&prefix);
    assert_eq!(left.len(), 1, "the killed squad's container still runs");
    let run = sb.exec(&mock, &["--approval", "auto", "--continue"]).await;
    run.assert_ok();
    let out = format!("{}{}", run.stdout, run.stderr);
    // What it wrote there before the kill came back: its root there was reattached.
    assert!(sb.ws().join("before.txt").exists(), "{out}");
    assert_eq!(sb.read("before.txt"), "before.txt written there\n");
    assert_eq!(sb.read("after.txt"), "after.txt written there\n");
    let wher = sb.read("after.txt.where");
    assert!(wher.starts_with("container\n"), "it ran there: {wher}");
    assert!(
        podman.containers_named(&prefix).is_empty(),
        "its container is removed when it ends"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn continue_restarts_a_placed_worker_whose_container_is_gone_there_from_its_last_commit() {
    let Some(podman) = Podman::start("continue_restarts_a_placed_worker") else {
        return;
    };
    let (prefix, mock, sb) = resumable_in_a_container(&podman, "rs").await;
    killed_mid_task(&sb, &mock).await;
    let left = podman.containers_named(&prefix);
    assert_eq!(left.len(), 1, "{left:?}");
    let out = podman.cli().args(["rm", "-f", &left[0]]).output().unwrap();
    assert!(out.status.success());
    let run = sb.exec(&mock, &["--approval", "auto", "--continue"]).await;
    run.assert_ok();
    let out = format!("{}{}", run.stdout, run.stderr);
    // Started there again from its base (nothing had come back): its later change merges,
    // made in a new container; the file it wrote in the removed one went with it.
    assert!(sb.ws().join("after.txt").exists(), "{out}");
    assert_eq!(sb.read("after.txt"), "after.txt written there\n");
    let wher = sb.read("after.txt.where");
    assert!(wher.starts_with("container\n"), "it ran there: {wher}");
    assert!(!sb.ws().join("before.txt").exists());
    assert!(podman.containers_named(&prefix).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn continue_fails_a_placed_worker_whose_environment_left_the_config_naming_it() {
    let Some(sshd) = Sshd::start("continue_fails_a_placed_worker") else {
        return;
    };
    let far = tempfile::tempdir().unwrap();
    let mock = MockServer::start().await;
    let sb = repo(&format!(
        "[verify]\nenabled = false\n{}",
        ssh_env("far", &sshd, far.path())
    ));
    mock.set_responder(resumed_into("far"));
    killed_mid_task(&sb, &mock).await;
    // The environment is gone from the config now (and no other is there).
    sb.workspace_config("[verify]\nenabled = false\n");
    let run = sb.exec(&mock, &["--approval", "auto", "--continue"]).await;
    let out = format!("{}{}", run.stdout, run.stderr);
    assert!(
        out.contains("environment 'far': it is no longer in the config"),
        "{out}"
    );
    assert!(out.contains("none of its change had come back"), "{out}");
    let root = far.path().display().to_string();
    assert!(out.contains(&format!("is in {root}/squad-")), "{out}");
    // Nothing of it ran here.
    assert!(!sb.ws().join("after.txt").exists());
    assert!(!sb.ws().join("after.txt.where").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn continue_reattaches_a_placed_worker_whose_root_over_ssh_is_still_there() {
    let Some(sshd) = Sshd::start("continue_reattaches_a_placed_worker_over_ssh") else {
        return;
    };
    let far = tempfile::tempdir().unwrap();
    let mock = MockServer::start().await;
    let sb = repo(&format!(
        "[verify]\nenabled = false\n{}",
        ssh_env("far", &sshd, far.path())
    ));
    mock.set_responder(resumed_into("far"));
    killed_mid_task(&sb, &mock).await;
    let run = sb.exec(&mock, &["--approval", "auto", "--continue"]).await;
    run.assert_ok();
    let out = format!("{}{}", run.stdout, run.stderr);
    // Its worktree there held what it wrote before the kill: reattached, it came back.
    assert!(sb.ws().join("before.txt").exists(), "{out}");
    assert_eq!(sb.read("after.txt"), "after.txt written there\n");
    let wher = sb.read("after.txt.where");
    assert!(wher.ends_with("ssh=ssh\n"), "it ran there: {wher}");
    let left: Vec<String> = std::fs::read_dir(far.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, vec![".squad-store.git".to_string()], "{left:?}");
}

// Nothing lost when a placed worker goes (issue 52 part 4): what it wrote there and had not
// yet returned comes back first, and is kept as a local worker's change is kept.

/// A worker that writes `before.txt`, then runs a long command there (it goes during it).
fn interrupted_worker(body: &Value, sleeping: &std::sync::atomic::AtomicBool) -> MockResponse {
    match tool_count(body) {
        0 => MockResponse::tool_call(
            "w1",
            "write_file",
            r#"{"path": "before.txt", "content": "before.txt written there\n"}"#,
        ),
        1 => {
            sleeping.store(true, std::sync::atomic::Ordering::SeqCst);
            MockResponse::tool_call("z", "run_command", r#"{"command": "sleep 60"}"#)
        }
        _ => MockResponse::tool_call("r", "return_results", &good_result("x").to_string()),
    }
}

/// The copilot spawns one `interrupted_worker` into `env` and despawns it once its long
/// command runs there, `before` just before.
fn despawned_from(
    env: &'static str,
    before: impl Fn() + Send + Sync + 'static,
) -> (
    impl Fn(&Value) -> MockResponse + Send + Sync + 'static,
    std::sync::Arc<std::sync::atomic::AtomicBool>,
) {
    let sleeping = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = sleeping.clone();
    let responder = move |body: &Value| {
        if is_worker(body) {
            return interrupted_worker(body, &seen);
        }
        if tool_messages(body).iter().any(|(id, _)| id == "d") {
            return MockResponse::text("done");
        }
        if tool_count(body) == 0 {
            return MockResponse::tool_call(
                "s",
                "spawn_agent",
                &json!({"role_name": "implementer", "task_prompt": "write a file",
                        "environment": env})
                .to_string(),
            );
        }
        if !seen.load(std::sync::atomic::Ordering::SeqCst) {
            return MockResponse::tool_call("wa", "wait_for_agents", r#"{"timeout_s": 1}"#);
        }
        // The long command has had time to begin there.
        std::thread::sleep(std::time::Duration::from_millis(1500));
        before();
        let id = spawned_ids(body).pop().unwrap();
        MockResponse::tool_call("d", "despawn_agent", &json!({ "agent_id": id }).to_string())
    };
    (responder, sleeping)
}

/// The one root there of a worker (`squad-ID`) under `far`.
fn root_there(far: &Path) -> Option<std::path::PathBuf> {
    std::fs::read_dir(far)
        .ok()?
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with("squad-"))
        .map(|e| e.path())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_placed_worker_despawned_mid_task_keeps_what_it_wrote_there_on_its_branch() {
    let Some(sshd) = Sshd::start("a_placed_worker_despawned_mid_task") else {
        return;
    };
    let far = tempfile::tempdir().unwrap();
    let mock = MockServer::start().await;
    let sb = repo(&format!(
        "[verify]\nenabled = false\n{}",
        ssh_env("far", &sshd, far.path())
    ));
    let (responder, sleeping) = despawned_from("far", || {});
    mock.set_responder(responder);
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "despawn"])
        .await;
    run.assert_ok();
    let out = format!("{}{}", run.stdout, run.stderr);
    assert!(sleeping.load(std::sync::atomic::Ordering::SeqCst), "{out}");
    // As a local worker's change when it is despawned: kept on its branch, not merged.
    let branches = git(
        sb.ws(),
        &["branch", "--list", "squad/*", "--format=%(refname:short)"],
    );
    let branch = branches.lines().next().unwrap_or_default().to_string();
    assert!(
        branch.starts_with("squad/"),
        "no kept branch: {branches:?}\n{out}"
    );
    let kept = git(sb.ws(), &["show", &format!("{branch}:before.txt")]);
    assert_eq!(kept, "before.txt written there\n");
    assert!(!sb.ws().join("before.txt").exists(), "not merged: {out}");
    // Its root there went, once its work was here.
    assert_eq!(root_there(far.path()), None);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_placed_worker_whose_work_cannot_come_back_as_it_goes_names_where_it_is() {
    let Some(sshd) = Sshd::start("a_placed_worker_whose_work_cannot_come_back") else {
        return;
    };
    let far = tempfile::tempdir().unwrap();
    let mock = MockServer::start().await;
    let sb = repo(&format!(
        "[verify]\nenabled = false\n{}",
        ssh_env("far", &sshd, far.path())
    ));
    // Its root there is no longer a worktree of the store: nothing can be collected.
    let far_dir = far.path().to_path_buf();
    let (responder, _) = despawned_from("far", move || {
        let root = root_there(&far_dir).unwrap();
        std::fs::remove_file(root.join(".git")).unwrap();
    });
    mock.set_responder(responder);
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "despawn"])
        .await;
    let out = format!("{}{}", run.stdout, run.stderr);
    let root = root_there(far.path()).expect("its root there stays");
    assert_eq!(
        std::fs::read_to_string(root.join("before.txt")).unwrap(),
        "before.txt written there\n"
    );
    assert!(
        out.contains("before its work in environment 'far' could come back"),
        "{out}"
    );
    assert!(out.contains("none of its change had come back"), "{out}");
    assert!(
        out.contains(&format!("stays in {} there", root.display())),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_placed_worker_stopped_by_ctrl_c_mid_task_brings_its_work_back_and_continue_merges_it() {
    let Some(podman) = Podman::start("a_placed_worker_stopped_by_ctrl_c") else {
        return;
    };
    let (prefix, mock, sb) = resumable_in_a_container(&podman, "cc").await;
    let mut cmd = sb.command(Some(&mock));
    cmd.args(["exec", "--approval", "auto", "place"]);
    let mut child = cmd.spawn().unwrap();
    let start = std::time::Instant::now();
    while !mock
        .requests()
        .iter()
        .any(|r| is_worker(&r.body) && tool_count(&r.body) == 1)
    {
        assert!(start.elapsed().as_secs() < 60, "the worker never wrote");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    // The user's Ctrl+C: a clean shutdown.
    let pid = child.id().unwrap() as i32;
    unsafe { libc::kill(pid, libc::SIGINT) };
    let ended = tokio::time::timeout(std::time::Duration::from_secs(60), child.wait()).await;
    assert!(ended.is_ok(), "squad did not end after Ctrl+C");
    assert!(
        podman.containers_named(&prefix).is_empty(),
        "its container goes at the shutdown"
    );
    let run = sb.exec(&mock, &["--approval", "auto", "--continue"]).await;
    run.assert_ok();
    let out = format!("{}{}", run.stdout, run.stderr);
    // What it wrote before the Ctrl+C came back at the shutdown and merges with the rest.
    assert!(sb.ws().join("before.txt").exists(), "{out}");
    assert_eq!(sb.read("before.txt"), "before.txt written there\n");
    assert_eq!(sb.read("after.txt"), "after.txt written there\n");
    assert!(podman.containers_named(&prefix).is_empty());
}

/// The first file named `name` under `dir`, a few levels down.
fn find_file(dir: &Path, name: &str, depth: usize) -> Option<std::path::PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if entry.file_name() == name {
            return Some(path);
        }
        if depth > 0
            && path.is_dir()
            && let Some(found) = find_file(&path, name, depth - 1)
        {
            return Some(found);
        }
    }
    None
}

/// A worker into `far` that writes `before.txt` there and returns it.
fn returning_into_far(body: &Value) -> MockResponse {
    if is_worker(body) {
        return match tool_count(body) {
            0 => MockResponse::tool_call(
                "w1",
                "write_file",
                r#"{"path": "before.txt", "content": "before.txt written there\n"}"#,
            ),
            _ => MockResponse::tool_call("r", "return_results", &good_result("x").to_string()),
        };
    }
    match tool_count(body) {
        0 => MockResponse::tool_call(
            "s",
            "spawn_agent",
            &json!({"role_name": "implementer", "task_prompt": "write a file",
                    "environment": "far"})
            .to_string(),
        ),
        1 => MockResponse::tool_call("wa", "wait_for_agents", "{}"),
        _ => MockResponse::text("done"),
    }
}

/// The last `far_side` event of the one session log under `data`.
fn last_far_side(data: &Path) -> Value {
    let dir = data.join("sessions");
    let log = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().ends_with(".jsonl"))
        .unwrap()
        .path();
    let text = std::fs::read_to_string(log).unwrap();
    text.lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "far_side")
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_placed_workers_change_applied_here_as_squad_is_killed_comes_back_once() {
    let Some(sshd) = Sshd::start("a_placed_workers_change_applied_as_killed") else {
        return;
    };
    // A few tries: the kill must fall after the apply and before the log says it came back.
    for _ in 0..4 {
        let far = tempfile::tempdir().unwrap();
        let Some((sb, mock, _)) = killed_as_applied(&sshd, far.path(), returning_into_far).await
        else {
            continue;
        };
        let run = sb.exec(&mock, &["--approval", "auto", "--continue"]).await;
        let out = format!("{}{}", run.stdout, run.stderr);
        assert!(!out.contains("does not apply"), "{out}");
        run.assert_ok();
        assert_eq!(sb.read("before.txt"), "before.txt written there\n", "{out}");
        return;
    }
    panic!("the kill never fell between the apply here and its record");
}

/// `exec place` into `far` over ssh with `responder`, killed the moment its worker's change
/// is in its worktree here: its sandbox, mock and last `far_side` when the kill fell after
/// that apply and before the log said it came back (its `applying` told), else None.
async fn killed_as_applied(
    sshd: &Sshd,
    far: &Path,
    responder: fn(&Value) -> MockResponse,
) -> Option<(Sandbox, MockServer, Value)> {
    let mock = MockServer::start().await;
    let sb = repo(&format!(
        "[verify]\nenabled = false\n[limits]\nmax_iterations = 8\n{}",
        ssh_env("far", sshd, far)
    ));
    mock.set_responder(responder);
    let mut cmd = sb.command(Some(&mock));
    cmd.args(["exec", "--approval", "auto", "place"]);
    let mut child = cmd.spawn().unwrap();
    let worktrees = sb.data_dir().join("worktrees");
    let start = std::time::Instant::now();
    while find_file(&worktrees, "before.txt", 3).is_none() {
        assert!(start.elapsed().as_secs() < 60, "its change never came back");
        std::thread::sleep(std::time::Duration::from_micros(500));
    }
    child.start_kill().unwrap();
    let _ = child.wait().await;
    let far_side = last_far_side(&sb.data_dir());
    if far_side["applied"] != far_side["base"] || far_side["applying"].is_null() {
        eprintln!("the kill did not fall between the apply and its record: once more");
        return None;
    }
    Some((sb, mock, far_side))
}

/// A worker into `far` that writes `before.txt` there and returns it; after a resume it
/// rewrites that file there and returns again.
fn rewriting_after_resume(body: &Value) -> MockResponse {
    if is_worker(body) {
        return match tool_count(body) {
            0 => MockResponse::tool_call(
                "w1",
                "write_file",
                r#"{"path": "before.txt", "content": "before.txt written there\n"}"#,
            ),
            1 => MockResponse::tool_call("r", "return_results", &good_result("x").to_string()),
            2 => MockResponse::tool_call(
                "w2",
                "write_file",
                r#"{"path": "before.txt", "content": "before.txt rewritten after the resume\n"}"#,
            ),
            _ => MockResponse::tool_call("r2", "return_results", &good_result("x").to_string()),
        };
    }
    returning_into_far(body)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_change_applied_as_squad_is_killed_is_the_base_of_a_worker_started_there_again() {
    let Some(sshd) = Sshd::start("a_change_applied_as_killed_restarted") else {
        return;
    };
    // The kill must fall after the apply here and before the log says it came back; its
    // root there is then removed, so --continue must start the worker there again.
    for _ in 0..4 {
        let far = tempfile::tempdir().unwrap();
        let Some((sb, mock, far_side)) =
            killed_as_applied(&sshd, far.path(), rewriting_after_resume).await
        else {
            continue;
        };
        std::fs::remove_dir_all(far_side["root"].as_str().unwrap()).unwrap();
        let run = sb.exec(&mock, &["--approval", "auto", "--continue"]).await;
        let out = format!("{}{}", run.stdout, run.stderr);
        assert!(!out.contains("does not apply"), "{out}");
        run.assert_ok();
        assert_eq!(
            sb.read("before.txt"),
            "before.txt rewritten after the resume\n",
            "{out}"
        );
        return;
    }
    panic!("the kill never fell between the apply here and its record");
}
