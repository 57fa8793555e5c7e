//! `cargo bench --bench environments`: what running a worker's tools elsewhere costs, per
//! transport, against the same real engines as tests/environments.rs (an sshd on loopback
//! and `podman system service`, started here):
//!
//! a. spawn to first tool result: connecting (child started, ssh login, container created
//!    and started and the tool server exec'd) plus one `read_file`;
//! b. per-call overhead: `read_file` of a small file, N calls one after another, median and
//!    p90, against the in-process handler;
//! c. `WORKERS` container workers connected at once, each with one call: wall time;
//! d. a placed worker's spawn to first tool result: connecting, its base sent (this
//!    repository's src/, docs/ and tests/ as one commit: over ssh a git bundle, first to
//!    an empty store, then again to a store that holds an earlier base; into a container
//!    the engine's archive upload), and one `read_file`.
//!
//! `ENV_BENCH_CALLS` (default 200) and `ENV_BENCH_WORKERS` (default 20) change the sizes.
//! A transport whose engine cannot run here is left out with one line.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/common/engines.rs"]
pub mod engines;
#[path = "../tests/common/podman.rs"]
mod podman;
#[path = "../tests/common/sshd.rs"]
mod sshd;
/// The harness's own path to the installer (`crate::common::engines`).
mod common {
    pub use super::engines;
}

use podman::{IMAGE, Podman};
use serde_json::json;
use squad::config::{EnvKind, EnvironmentConfig, SandboxMode};
use squad::environments::Remote;
use squad::environments::protocol::Init;
use squad::protocol::AgentId;
use squad::sandbox::Level;
use squad::tools::{ReadFile, ToolContext, ToolHandler, ToolSettings};
use squad::workspace::Workspace;
use sshd::Sshd;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const SQUAD: &str = env!("CARGO_BIN_EXE_squad");

fn size(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn init(root: &str) -> Init {
    let level = Level {
        mode: SandboxMode::Off,
        network: true,
    };
    Init::new(root, level, &ToolSettings::default())
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

/// Median and p90 of `calls` one after another.
async fn per_call<F, Fut>(calls: usize, mut one: F) -> (Duration, Duration)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut times = Vec::with_capacity(calls);
    for _ in 0..calls {
        let start = Instant::now();
        one().await;
        times.push(start.elapsed());
    }
    times.sort();
    (times[calls / 2], times[calls * 9 / 10])
}

async fn read(remote: &Remote) {
    let out = remote
        .call(
            "read_file",
            json!({"path": "small.txt"}),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(out.contains("hello"));
}

/// Spawn to first result, then per-call figures, of one transport; prints one row.
async fn transport<C, Fut>(label: &str, calls: usize, connect: C)
where
    C: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Remote>,
{
    let start = Instant::now();
    let remote = connect().await;
    read(&remote).await;
    let first = start.elapsed();
    let (p50, p90) = per_call(calls, || read(&remote)).await;
    println!(
        "{label:<28} {:>12} {:>12} {:>12}",
        ms(first),
        ms(p50),
        ms(p90)
    );
    remote.close().await;
}

fn container_env(podman: &Podman) -> EnvironmentConfig {
    EnvironmentConfig {
        kind: Some(EnvKind::Container),
        image: Some(IMAGE.into()),
        socket: Some(podman.socket.clone()),
        squad: Some("/usr/local/bin/squad".into()),
        mounts: Podman::squad_mounts(Path::new(SQUAD)),
        ..Default::default()
    }
}

async fn in_container(env: &EnvironmentConfig, name: &str) -> Remote {
    // The container's own folder (the config's default workdir), not one of this machine.
    let remote = squad::environments::connect(name, env, &init(env.workdir_or_default()))
        .await
        .unwrap();
    let write = json!({"path": "small.txt", "content": "hello\n"});
    remote
        .call("write_file", write, &CancellationToken::new())
        .await
        .unwrap();
    remote
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let calls = size("ENV_BENCH_CALLS", 200);
    let workers = size("ENV_BENCH_WORKERS", 20);
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("small.txt"), "hello\n").unwrap();
    let root_str = root.path().display().to_string();
    println!("read_file of a 6-byte file, {calls} calls one after another");
    println!(
        "{:<28} {:>12} {:>12} {:>12}",
        "transport", "spawn→first", "call p50", "call p90"
    );

    let ctx = ToolContext {
        agent_id: AgentId::new(),
        workspace: Arc::new(Workspace::new(root.path()).unwrap()),
        settings: Arc::new(ToolSettings::default()),
        cancel: CancellationToken::new(),
        sandbox: None,
        editor: None,
    };
    let (p50, p90) = per_call(calls, || async {
        let out = ReadFile
            .call(&ctx, json!({"path": "small.txt"}))
            .await
            .unwrap();
        assert!(out.contains("hello"));
    })
    .await;
    println!(
        "{:<28} {:>12} {:>12} {:>12}",
        "in-process (default)",
        "-",
        ms(p50),
        ms(p90)
    );

    transport("child process", calls, || async {
        let cmd = squad::environments::child::tool_server_command(Path::new(SQUAD));
        squad::environments::child::connect("child", cmd, &init(&root_str))
            .await
            .unwrap()
    })
    .await;

    match Sshd::start("environments bench: ssh") {
        Some(sshd) => {
            let env = EnvironmentConfig {
                kind: Some(EnvKind::Ssh),
                host: Some(Sshd::HOST.into()),
                workdir: Some(root_str.clone()),
                squad: Some(SQUAD.into()),
                ssh_config: Some(sshd.ssh_config.display().to_string()),
                ..Default::default()
            };
            for label in ["ssh loopback (first login)", "ssh loopback (multiplexed)"] {
                transport(label, calls, || async {
                    squad::environments::connect("far", &env, &init(&root_str))
                        .await
                        .unwrap()
                })
                .await;
            }
        }
        None => println!("ssh: left out (no sshd)"),
    }

    let repo = source_repo();
    let tree = git(repo.path(), &["rev-parse", "HEAD^{tree}"]);
    let (files, bytes) = (
        git(repo.path(), &["ls-files"]).lines().count(),
        dir_bytes(repo.path()),
    );
    println!(
        "placed worker, base of {files} files ({:.1} MB): spawn→first tool result",
        bytes as f64 / 1e6
    );
    let placed = |label: &'static str, env: EnvironmentConfig, root: String| {
        let (repo, tree) = (repo.path().to_path_buf(), tree.clone());
        async move {
            let start = Instant::now();
            let remote = squad::environments::connect("placed", &env, &init(&root))
                .await
                .unwrap();
            let store = format!("{}/.squad-store.git", env.workdir_or_default());
            let carried = squad::environments::carry::send_base(&remote, &repo, &tree, &store)
                .await
                .unwrap();
            let out = remote
                .call(
                    "read_file",
                    json!({"path": "src/lib.rs"}),
                    &CancellationToken::new(),
                )
                .await
                .unwrap();
            assert!(!out.is_empty());
            println!(
                "{label:<44} {:>12}  ({:?})",
                ms(start.elapsed()),
                carried.way
            );
            remote.close().await;
        }
    };
    if let Some(sshd) = Sshd::start("environments bench: placed ssh") {
        let far = tempfile::tempdir().unwrap();
        let env = EnvironmentConfig {
            kind: Some(EnvKind::Ssh),
            host: Some(Sshd::HOST.into()),
            workdir: Some(far.path().display().to_string()),
            squad: Some(SQUAD.into()),
            ssh_config: Some(sshd.ssh_config.display().to_string()),
            ..Default::default()
        };
        let root = |n: u32| format!("{}/w{n}", far.path().display());
        placed("ssh, bundle to an empty store", env.clone(), root(1)).await;
        placed("ssh, the store holds an earlier base", env, root(2)).await;
    }

    let Some(podman) = Podman::start("environments bench: container") else {
        println!("container: left out (no podman)");
        return;
    };
    let env = container_env(&podman);
    transport("container (podman, runc)", calls, || {
        in_container(&env, "bench")
    })
    .await;

    let start = Instant::now();
    let all = futures::future::join_all((0..workers).map(|i| {
        let env = env.clone();
        async move {
            let remote = in_container(&env, &format!("bench{i}")).await;
            read(&remote).await;
            remote
        }
    }))
    .await;
    let wall = start.elapsed();
    futures::future::join_all(all.iter().map(|r| r.close())).await;
    println!(
        "{workers} container workers at once: {} from the first create to every first result",
        ms(wall)
    );
    let env = container_env(&podman);
    let root = format!("{}/w", env.workdir_or_default());
    placed("container, the engine's archive upload", env, root).await;
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// This repository's src/, docs/ and tests/ at HEAD, one commit of a new repository.
fn source_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tar = std::process::Command::new("git")
        .args(["archive", "--format=tar", "HEAD", "src", "docs", "tests"])
        .current_dir(here)
        .output()
        .unwrap()
        .stdout;
    let tar_file = dir.path().join("../squad-bench-base.tar");
    std::fs::write(&tar_file, tar).unwrap();
    let ok = std::process::Command::new("tar")
        .arg("-xf")
        .arg(&tar_file)
        .arg("-C")
        .arg(dir.path())
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let _ = std::fs::remove_file(&tar_file);
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "-A"]);
    git(
        dir.path(),
        &[
            "-c",
            "user.name=b",
            "-c",
            "user.email=b@b",
            "commit",
            "-qm",
            "base",
        ],
    );
    dir
}

fn dir_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let meta = entry.metadata().unwrap();
        if entry.file_name() == ".git" {
            continue;
        }
        total += if meta.is_dir() {
            dir_bytes(&entry.path())
        } else {
            meta.len()
        };
    }
    total
}
