//! Environments (issue 52): a worker's tools served on the far side by `squad tool-server`,
//! reached through each transport, against real engines: OpenSSH's `sshd` and Podman's
//! Docker-compatible API, both started by the harness (tests/common/sshd.rs, podman.rs).
#![cfg(target_os = "linux")]
// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::podman::{IMAGE, Podman};
use common::sshd::Sshd;

#[test]
fn the_harness_sshd_accepts_the_generated_key_and_marks_its_logins() {
    let Some(sshd) = Sshd::start("the_harness_sshd_accepts_the_generated_key") else {
        return;
    };
    let out = sshd.ssh("echo far=$SQUAD_FAR_SIDE");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "far=ssh");
    assert_eq!(std::env::var("SQUAD_FAR_SIDE").ok(), None);
}

#[test]
fn the_harness_podman_serves_the_docker_api_and_its_image_runs_without_network() {
    let Some(podman) = Podman::start("the_harness_podman_serves_the_docker_api") else {
        return;
    };
    let out = podman
        .cli()
        .args([
            "--url",
            &podman.socket,
            "run",
            "--rm",
            "--network",
            "none",
            IMAGE,
        ])
        .args([
            "sh",
            "-c",
            "cat /etc/squad-far-side; nc -w 2 10.0.2.2 80 </dev/null; echo rc=$?",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.starts_with("container\n"), "{stdout}");
    assert!(
        stdout.trim_end().ends_with("rc=1"),
        "a connect must fail: {stdout}"
    );
}

use ::squad::config::{EnvKind, EnvironmentConfig, SandboxMode};
use ::squad::environments::child::tool_server_command;
use ::squad::environments::protocol::Init;
use ::squad::environments::{Remote, placed_tools};
use ::squad::sandbox::Level;
use ::squad::tools::{ToolError, ToolSettings};
use serde_json::json;
use std::path::Path;
use tokio_util::sync::CancellationToken;

const SQUAD: &str = env!("CARGO_BIN_EXE_squad");

fn init(root: &Path, mode: SandboxMode, network: bool) -> Init {
    let settings = ToolSettings {
        test_command: Some("test -f hello.txt".into()),
        ..ToolSettings::default()
    };
    Init::new(
        &root.display().to_string(),
        Level { mode, network },
        &settings,
    )
}

async fn call(remote: &Remote, tool: &str, args: serde_json::Value) -> Result<String, ToolError> {
    remote.call(tool, args, &CancellationToken::new()).await
}

async fn ok(remote: &Remote, tool: &str, args: serde_json::Value) -> String {
    call(remote, tool, args.clone())
        .await
        .unwrap_or_else(|e| panic!("{tool} {args}: {e}"))
}

/// Every coding tool once through `remote`, in the far root (which holds `far-only.txt`,
/// written there by the test, never in this process's folder).
async fn every_tool(remote: &Remote) {
    ok(
        remote,
        "write_file",
        json!({"path": "hello.txt", "content": "hi there\n"}),
    )
    .await;
    assert!(
        ok(remote, "read_file", json!({"path": "hello.txt"}))
            .await
            .contains("hi there")
    );
    ok(
        remote,
        "edit_file",
        json!({"path": "hello.txt", "old_text": "there", "new_text": "far"}),
    )
    .await;
    let patch = "*** Begin Patch\n*** Add File: added.txt\n+patched\n*** End Patch\n";
    ok(remote, "apply_patch", json!({ "patch": patch })).await;
    let listed = ok(remote, "list_files", json!({})).await;
    for name in ["hello.txt", "added.txt", "far-only.txt"] {
        assert!(listed.contains(name), "{name} in {listed}");
    }
    let found = ok(remote, "search_files", json!({"pattern": "hi far"})).await;
    assert!(found.contains("hello.txt"), "{found}");
    let ran = ok(
        remote,
        "run_command",
        json!({"command": "cat far-only.txt added.txt"}),
    )
    .await;
    assert!(ran.contains("far side") && ran.contains("patched"), "{ran}");
    let tests = ok(remote, "run_tests", json!({})).await;
    assert!(tests.starts_with(::squad::tools::TESTS_PASSED), "{tests}");
    // An error reads as a local one does.
    let err = call(remote, "read_file", json!({"path": "nope.txt"}))
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::NotFound(_)), "{err}");
    let action = remote
        .describe(
            "write_file",
            &json!({"path": "hello.txt", "content": "x\n"}),
        )
        .await
        .unwrap();
    assert!(format!("{action:?}").contains("-hi far"), "{action:?}");
}

fn far_root() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("far-only.txt"), "far side\n").unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_runs_in_a_child_tool_server_inside_its_root() {
    let root = far_root();
    let remote = ::squad::environments::child::connect(
        "child",
        tool_server_command(Path::new(SQUAD)),
        &init(root.path(), SandboxMode::WorkspaceWrite, false),
    )
    .await
    .unwrap();
    assert_eq!(
        Path::new(&remote.hello().root),
        root.path().canonicalize().unwrap()
    );
    every_tool(&remote).await;
    assert_eq!(
        std::fs::read_to_string(root.path().join("hello.txt")).unwrap(),
        "hi far\n"
    );
    // The far side's sandbox holds: a write outside the root is refused there.
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("escaped");
    let cmd = format!("echo x > {} || echo REFUSED", target.display());
    let ran = ok(&remote, "run_command", json!({ "command": cmd })).await;
    if ::squad::sandbox::support().available() {
        assert!(!target.exists(), "{ran}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_runs_on_the_far_side_of_a_real_ssh_login() {
    let Some(sshd) = Sshd::start("every_tool_runs_on_the_far_side_of_a_real_ssh_login") else {
        return;
    };
    let root = far_root();
    let env = EnvironmentConfig {
        kind: Some(EnvKind::Ssh),
        host: Some(Sshd::HOST.into()),
        workdir: Some(root.path().display().to_string()),
        squad: Some(SQUAD.into()),
        ssh_config: Some(sshd.ssh_config.display().to_string()),
        ..Default::default()
    };
    let init = init(root.path(), SandboxMode::WorkspaceWrite, false);
    let remote = ::squad::environments::connect("far", &env, &init)
        .await
        .unwrap();
    every_tool(&remote).await;
    // Only a command run through the sshd's login has its mark.
    let ran = ok(
        &remote,
        "run_command",
        json!({"command": "echo mark=$SQUAD_FAR_SIDE"}),
    )
    .await;
    assert!(ran.contains("mark=ssh"), "{ran}");
    // A second worker on the same host shares the one connection (ControlMaster).
    let other = ::squad::environments::connect("far", &env, &init)
        .await
        .unwrap();
    assert!(
        ok(&other, "read_file", json!({"path": "hello.txt"}))
            .await
            .contains("hi far")
    );
    // The placed tools are the same tools, their calls going there.
    let tools = placed_tools(std::sync::Arc::new(other));
    let read = tools.iter().find(|t| t.spec().name == "read_file").unwrap();
    let names: Vec<String> = tools.iter().map(|t| t.spec().name).collect();
    let local: Vec<String> = ::squad::tools::coding_tools()
        .iter()
        .map(|t| t.spec().name)
        .collect();
    assert_eq!(names, local);
    assert_eq!(read.effect(), ::squad::tools::ToolEffect::ReadOnly);
}

fn container_env(podman: &Podman) -> EnvironmentConfig {
    EnvironmentConfig {
        kind: Some(EnvKind::Container),
        image: Some(IMAGE.into()),
        socket: Some(podman.socket.clone()),
        squad: Some("/usr/local/bin/squad".into()),
        mounts: Podman::squad_mounts(Path::new(SQUAD)),
        memory: Some("256m".into()),
        cpus: Some(1.0),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_runs_in_a_podman_container_without_network_and_it_is_removed_after() {
    let Some(podman) = Podman::start("every_tool_runs_in_a_podman_container") else {
        return;
    };
    let env = container_env(&podman);
    // Sandbox off: the container alone keeps the network out.
    let init = init(Path::new("/work"), SandboxMode::Off, true);
    let remote = ::squad::environments::connect("tools-box", &env, &init)
        .await
        .unwrap();
    assert_eq!(remote.hello().root, "/work");
    ok(
        &remote,
        "run_command",
        json!({"command": "echo far side > far-only.txt"}),
    )
    .await;
    every_tool(&remote).await;
    let ran = ok(
        &remote,
        "run_command",
        json!({"command": "cat /etc/squad-far-side"}),
    )
    .await;
    assert!(ran.contains("container"), "{ran}");
    let cmd = "nc -w 2 10.0.2.2 80 </dev/null; echo rc=$?; tail -n +3 /proc/net/dev | cut -d: -f1";
    let ran = ok(&remote, "run_command", json!({ "command": cmd })).await;
    assert!(ran.contains("rc=1"), "a connect must fail: {ran}");
    assert!(!ran.contains("eth0"), "only a loopback: {ran}");
    let names = podman.containers_named("squad-tools-box-");
    assert_eq!(names.len(), 1, "{names:?}");
    drop(remote);
    let start = std::time::Instant::now();
    while !podman.containers_named("squad-tools-box-").is_empty() {
        assert!(
            start.elapsed().as_secs() < 20,
            "the worker's container is left"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_image_fails_naming_the_environment_and_leaves_no_container() {
    let Some(podman) = Podman::start("a_missing_image_fails_naming_the_environment") else {
        return;
    };
    let env = EnvironmentConfig {
        image: Some("localhost/squad-no-such-image:1".into()),
        ..container_env(&podman)
    };
    let init = init(Path::new("/work"), SandboxMode::Off, true);
    let err = ::squad::environments::connect("nobox", &env, &init)
        .await
        .err()
        .expect("no image, no worker");
    let msg = err.to_string();
    assert!(
        msg.starts_with(
            "environment 'nobox': cannot create a container from localhost/squad-no-such-image:1"
        ),
        "{msg}"
    );
    assert!(podman.containers_named("squad-nobox-").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_checks_each_environment_and_sandbox_env_runs_a_command_there() {
    let test = "doctor_checks_each_environment";
    let (Some(sshd), Some(podman)) = (Sshd::start(test), Podman::start(test)) else {
        return;
    };
    let far = far_root();
    let mounts: Vec<String> = Podman::squad_mounts(Path::new(SQUAD));
    let sb = common::Sandbox::new();
    sb.workspace_config(&format!(
        "[environments.far]\nkind = \"ssh\"\nhost = \"{host}\"\nworkdir = \"{far}\"\n\
         squad = \"{SQUAD}\"\nssh_config = \"{cfg}\"\n\
         [environments.box]\nkind = \"container\"\nimage = \"{IMAGE}\"\nsocket = \"{sock}\"\n\
         squad = \"/usr/local/bin/squad\"\nmounts = {mounts:?}\n\
         [environments.nobox]\nkind = \"container\"\nimage = \"localhost/squad-no-such:1\"\n\
         socket = \"{sock}\"\n",
        host = Sshd::HOST,
        far = far.path().display(),
        cfg = sshd.ssh_config.display(),
        sock = podman.socket,
    ));
    let run = sb.run(None, &["doctor", "--demo"]).await;
    let line = |name: &str| {
        run.stdout
            .lines()
            .find(|l| l.contains(&format!("environment {name} (")))
            .unwrap_or_else(|| panic!("no line for {name}:\n{}", run.stdout))
            .to_string()
    };
    let far_line = line("far");
    assert!(
        far_line.starts_with("✓ environment far (ssh squad-test-sshd:"),
        "{far_line}"
    );
    assert!(
        far_line.contains("squad 0.1.0 runs there") && far_line.contains("git version"),
        "{far_line}"
    );
    // The busybox image has no git: the line says so, with the fix.
    let box_line = line("box");
    assert!(
        box_line.starts_with("✗ environment box (container"),
        "{box_line}"
    );
    assert!(
        box_line.contains("git does not run there — install git in the image"),
        "{box_line}"
    );
    let nobox = line("nobox");
    assert!(
        nobox.contains("cannot create a container from localhost/squad-no-such:1"),
        "{nobox}"
    );
    assert!(
        nobox.contains("— pull or build the image (`podman pull localhost/squad-no-such:1`)"),
        "{nobox}"
    );
    assert_eq!(run.code, 1, "a failed check fails the doctor");
    assert!(
        podman.containers_named("squad-box-").is_empty(),
        "doctor leaves no container"
    );

    let run = sb
        .run(
            None,
            &[
                "sandbox",
                "--env",
                "far",
                "--",
                "sh",
                "-c",
                "echo $SQUAD_FAR_SIDE; cat far-only.txt; exit 3",
            ],
        )
        .await;
    assert_eq!(run.code, 3, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("ssh\nfar side"), "{}", run.stdout);
    let run = sb
        .run(
            None,
            &[
                "sandbox",
                "--env",
                "box",
                "--",
                "cat",
                "/etc/squad-far-side",
            ],
        )
        .await;
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("container"), "{}", run.stdout);
    let run = sb
        .run(None, &["sandbox", "--env", "nope", "--", "true"])
        .await;
    assert_ne!(run.code, 0);
    assert!(
        run.stderr
            .contains("environment 'nope': not in the config (known: box, far, nobox)"),
        "{}",
        run.stderr
    );
}
