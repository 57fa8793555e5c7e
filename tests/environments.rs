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
