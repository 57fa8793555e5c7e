//! squad copied into a container whose image does not hold it (issue 52 part 3): with no
//! `squad` set, this squad, its shared libraries and its loader go in by the engine's
//! archive upload, into an image that holds only a static busybox; an image of another
//! platform is refused before any container is made, naming both platforms. Real Podman
//! (tests/common/podman.rs), the real binary against the mock model server.
#![cfg(target_os = "linux")]
// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::*;
use common::podman::{IMAGE, Podman};
use common::*;
use serde_json::{Value, json};

fn repo(config: &str) -> Sandbox {
    let sb = Sandbox::new();
    sb.workspace_config(config);
    git(sb.ws(), &["init", "-q"]);
    sb.write("hello.txt", "hello world\n");
    git(sb.ws(), &["add", "-A"]);
    git(sb.ws(), &["commit", "-qm", "start"]);
    sb
}

/// A container environment with no `squad` and no mounts: the image holds no squad.
fn bare_env(name: &str, image: &str, podman: &Podman) -> String {
    format!(
        "[environments.{name}]\nkind = \"container\"\nimage = \"{image}\"\nsocket = \"{sock}\"\n",
        sock = podman.socket,
    )
}

/// The copilot spawns one worker into `env` that writes `file`, records where its command
/// ran, and returns; then it waits for it.
fn spawn_writer(env: &'static str, file: &'static str) -> impl Fn(&Value) -> MockResponse {
    move |body| {
        if is_worker(body) {
            return match tool_count(body) {
                0 => MockResponse::tool_call(
                    "w",
                    "write_file",
                    &json!({"path": file, "content": "written in the container\n"}).to_string(),
                ),
                1 => {
                    let mark = format!("cat /etc/squad-far-side > {file}.where 2>&1");
                    MockResponse::tool_call(
                        "m",
                        "run_command",
                        &json!({ "command": mark }).to_string(),
                    )
                }
                _ => MockResponse::tool_call("r", "return_results", &good_result(file).to_string()),
            };
        }
        match tool_count(body) {
            0 => MockResponse::tool_call(
                "s",
                "spawn_agent",
                &json!({"role_name": "implementer", "task_prompt": "write a file",
                        "environment": env})
                .to_string(),
            ),
            1 => MockResponse::tool_call("wa", "wait_for_agents", "{}"),
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

fn unique_env(stem: &str) -> &'static str {
    Box::leak(format!("{stem}{}", std::process::id()).into_boxed_str())
}

#[tokio::test(flavor = "multi_thread")]
async fn squad_is_copied_into_a_busybox_only_image_and_the_workers_change_merges() {
    let Some(podman) = Podman::start("squad_is_copied_into_a_busybox_only_image") else {
        return;
    };
    let env = unique_env("cp");
    let mock = MockServer::start().await;
    let sb = repo(&format!(
        "[verify]\nenabled = false\n{}",
        bare_env(env, IMAGE, &podman)
    ));
    mock.set_responder(spawn_writer(env, "copied.txt"));
    let run = sb.exec(&mock, &["--approval", "auto", "place one"]).await;
    run.assert_ok();
    let out = format!("{}{}\n{}", run.stdout, run.stderr, spawn_answer(&mock));
    assert!(sb.ws().join("copied.txt").exists(), "{out}");
    assert_eq!(sb.read("copied.txt"), "written in the container\n");
    // Only the image has the marker: its command ran there.
    assert_eq!(sb.read("copied.txt.where"), "container\n");
    assert!(
        podman.containers_named(&format!("squad-{env}-")).is_empty(),
        "the worker's container is removed when it ends"
    );

    // doctor says squad is copied in (the busybox image has no git: a ✗ for that).
    let run = sb.run(None, &["doctor", "--demo"]).await;
    let line = run
        .stdout
        .lines()
        .find(|l| l.contains(&format!("environment {env} (")))
        .unwrap_or_else(|| panic!("no line for {env}:\n{}", run.stdout))
        .to_string();
    assert!(
        line.contains("squad 0.1.0 runs there, copied in: this squad with its loader and"),
        "{line}"
    );
}

/// An image of another platform than this machine's, built offline: `FROM scratch` with
/// one file, for linux/arm64 (linux/amd64 on an arm64 machine).
fn foreign_image(podman: &Podman) -> Result<(&'static str, &'static str), String> {
    let arch = if cfg!(target_arch = "aarch64") {
        "amd64"
    } else {
        "arm64"
    };
    let tag: &'static str = Box::leak(format!("localhost/squad-test-{arch}:1").into_boxed_str());
    let ctx = podman.dir().join("foreign");
    std::fs::create_dir_all(&ctx).unwrap();
    std::fs::write(ctx.join("hello"), "another platform\n").unwrap();
    std::fs::write(
        ctx.join("Containerfile"),
        "FROM scratch\nCOPY hello /hello\n",
    )
    .unwrap();
    let out = podman
        .cli()
        .args(["build", "-q", "--network", "none", "--platform"])
        .arg(format!("linux/{arch}"))
        .args(["-t", tag])
        .arg(&ctx)
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    Ok((tag, arch))
}

#[tokio::test(flavor = "multi_thread")]
async fn an_image_of_another_platform_refuses_the_spawn_naming_both_platforms() {
    let Some(podman) = Podman::start("an_image_of_another_platform_refuses_the_spawn") else {
        return;
    };
    let (image, arch) = match foreign_image(&podman) {
        Ok(built) => built,
        Err(why) => {
            eprintln!("skipped an_image_of_another_platform: podman cannot build it here: {why}");
            return;
        }
    };
    let env = unique_env("arm");
    let mock = MockServer::start().await;
    let sb = repo(&format!(
        "[verify]\nenabled = false\n{}",
        bare_env(env, image, &podman)
    ));
    mock.set_responder(spawn_writer(env, "never.txt"));
    sb.exec(&mock, &["--approval", "auto", "place one"])
        .await
        .assert_ok();
    let answer = spawn_answer(&mock);
    let here = if arch == "arm64" { "amd64" } else { "arm64" };
    assert!(
        answer.contains(&format!(
            "environment '{env}': the image {image} is linux/{arch} and this squad is \
             linux/{here}"
        )),
        "{answer}"
    );
    assert!(
        answer.contains(&format!(
            "set `squad = \"/path/to/squad\"` in [environments.{env}]"
        )),
        "{answer}"
    );
    assert!(
        !mock.requests().iter().any(|r| is_worker(&r.body)),
        "no worker ran"
    );
    assert!(podman.containers_named(&format!("squad-{env}-")).is_empty());
}

/// A worker that writes `before.txt`, then runs a long command (the kill comes during
/// it); continued, writes `after.txt`, records where it ran, returns.
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
            let mark = "cat /etc/squad-far-side > after.txt.where 2>&1";
            MockResponse::tool_call("m", "run_command", &json!({ "command": mark }).to_string())
        }
        _ => MockResponse::tool_call("r", "return_results", &good_result("after.txt").to_string()),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn continue_reattaches_a_worker_whose_copied_squad_still_runs_in_its_container() {
    let Some(podman) = Podman::start("continue_reattaches_a_worker_whose_copied_squad") else {
        return;
    };
    let env = unique_env("cr");
    let prefix = format!("squad-{env}-");
    let mock = MockServer::start().await;
    let sb = repo(&format!(
        "[verify]\nenabled = false\n{}",
        bare_env(env, IMAGE, &podman)
    ));
    mock.set_responder(move |body| {
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
    });
    // Killed (SIGKILL) while its long command runs there.
    let mut cmd = sb.command(Some(&mock));
    cmd.args(["exec", "--approval", "auto", "place"]);
    let mut child = cmd.spawn().unwrap();
    let start = std::time::Instant::now();
    while !mock
        .requests()
        .iter()
        .any(|r| is_worker(&r.body) && tool_count(&r.body) == 1)
    {
        assert!(start.elapsed().as_secs() < 90, "the worker never wrote");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    child.start_kill().unwrap();
    let _ = child.wait().await;
    assert_eq!(
        podman.containers_named(&prefix).len(),
        1,
        "its container still runs"
    );
    // Its base is kept here under a ref while it may be resumed.
    assert!(!squad_refs(&sb).is_empty(), "its base is kept");

    let run = sb.exec(&mock, &["--approval", "auto", "--continue"]).await;
    run.assert_ok();
    let out = format!("{}{}", run.stdout, run.stderr);
    // What it wrote there before the kill came back: the new exec beside the first
    // process started the copied squad through its loader, in the same container.
    assert_eq!(sb.read("before.txt"), "before.txt written there\n", "{out}");
    assert_eq!(sb.read("after.txt"), "after.txt written there\n");
    assert_eq!(sb.read("after.txt.where"), "container\n");
    assert!(podman.containers_named(&prefix).is_empty());
    // Its change merged and its session ended: the next start prunes the refs it kept.
    assert!(!squad_refs(&sb).is_empty(), "kept until then");
    mock.set_responder(|_| MockResponse::text("nothing to do"));
    sb.exec(&mock, &["--approval", "auto", "hello"])
        .await
        .assert_ok();
    assert_eq!(squad_refs(&sb), Vec::<String>::new());
}

/// The refs squad keeps here for placed workers.
fn squad_refs(sb: &Sandbox) -> Vec<String> {
    let out = std::process::Command::new("git")
        .args(["for-each-ref", "--format=%(refname)"])
        .args(["refs/squad/carried/", "refs/squad/returned/"])
        .current_dir(sb.ws())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}
