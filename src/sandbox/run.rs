//! `squad sandbox -- CMD`: one command in the sandbox an agent at the workspace root would
//! get, with the terminal's stdin, stdout and stderr, so users can try their build in it.

use super::{Level, Sandbox, SandboxError};
use std::ffi::OsString;
use std::path::Path;

/// Runs `argv` (a program and its arguments) confined as an agent at `level` whose root is
/// `root` would be; returns its exit code (128 + the signal that killed it).
pub fn run_one(
    sandbox: &Sandbox,
    level: Level,
    root: &Path,
    argv: &[OsString],
) -> Result<i32, SandboxError> {
    let Some((program, args)) = argv.split_first() else {
        return Err(SandboxError::Unavailable("no command given".into()));
    };
    let confined = sandbox.for_agent(level, root);
    if confined.is_none()
        && level.mode != crate::config::SandboxMode::Off
        && let Some(why) = &sandbox.support().unavailable
    {
        return Err(SandboxError::Unavailable(why.clone()));
    }
    let jail = confined
        .as_deref()
        .map(super::Confined::prepare)
        .transpose()?;
    let mut cmd = std::process::Command::new(program);
    cmd.args(args).current_dir(root);
    if let Some(jail) = &jail {
        jail.apply(&mut cmd);
    }
    let status = cmd.status().map_err(|source| SandboxError::Io {
        what: format!("starting {}", program.to_string_lossy()),
        source,
    })?;
    Ok(status.code().unwrap_or_else(|| {
        128 + std::os::unix::process::ExitStatusExt::signal(&status).unwrap_or(0)
    }))
}
