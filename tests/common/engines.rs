//! The engines the environment tests run against (OpenSSH's server, Podman, busybox),
//! installed from Debian by `.ci/engines` when missing: `.ci/run` calls it first; here it
//! runs once per test binary, so a lone `cargo test --test NAME` has them too.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

/// Runs `.ci/engines` once per test binary; what it cannot install, the tests skip.
pub fn install() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/engines");
        let _ = Command::new("bash").arg(&script).status();
    });
}
