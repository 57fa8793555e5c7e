//! `squad` on an ssh host (issue 52 part 3): the configured path, else `squad` on its
//! `PATH`, else this very binary copied there, once per version, into
//! `<workdir>/.squad-bin/`, when the host's platform (`uname -sm`) is this one's. A host of
//! another platform, or where the copy does not run (an older C library), gets a clear
//! error naming what to set.

use super::EnvError;
use super::ssh::{quote, shell};
use crate::config::EnvironmentConfig;
use std::borrow::Cow;
use std::process::Stdio;
use tokio::io::AsyncWriteExt;

/// The environment with `squad` set to a program that runs there.
pub async fn squad_there<'a>(
    env: &str,
    config: &'a EnvironmentConfig,
) -> Result<Cow<'a, EnvironmentConfig>, EnvError> {
    if config.squad.is_some() || run(env, config, "squad --version").await.is_ok() {
        return Ok(Cow::Borrowed(config));
    }
    let here = local_platform().map_err(|e| EnvError::new(env, e))?;
    let there = run(env, config, "uname -sm").await?;
    if there.trim() != here.trim() {
        return Err(EnvError::new(
            env,
            format!(
                "squad is not on its PATH and this squad ({}) cannot run there ({}): install \
                 squad there and set `squad` to its path",
                here.trim(),
                there.trim()
            ),
        ));
    }
    let version = env!("CARGO_PKG_VERSION");
    let dir = format!(
        "{}/.squad-bin",
        config.workdir_or_default().trim_end_matches('/')
    );
    let target = format!("{dir}/squad-{version}");
    if run(env, config, &format!("{} --version", quote(&target)))
        .await
        .is_err()
    {
        copy(env, config, &dir, &target).await?;
        run(env, config, &format!("{} --version", quote(&target)))
            .await
            .map_err(|e| {
                EnvError::new(
                    env,
                    format!(
                        "squad copied to {target} does not run there ({}): install squad \
                         there and set `squad` to its path",
                        e.reason
                    ),
                )
            })?;
    }
    Ok(Cow::Owned(EnvironmentConfig {
        squad: Some(target),
        ..config.clone()
    }))
}

/// This machine as `uname -sm` says it.
fn local_platform() -> Result<String, String> {
    let out = std::process::Command::new("uname")
        .arg("-sm")
        .output()
        .map_err(|e| format!("cannot run uname here: {e}"))?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs `script` there; its standard output, or why it failed.
async fn run(env: &str, config: &EnvironmentConfig, script: &str) -> Result<String, EnvError> {
    let out = shell(env, config, script)?
        .stdin(Stdio::null())
        .output()
        .await
        .map_err(|e| EnvError::new(env, format!("cannot run ssh: {e}")))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(EnvError::new(
            env,
            format!("`{script}` failed there: {err}"),
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// This binary, streamed over the connection into `target` (written aside, then moved).
async fn copy(
    env: &str,
    config: &EnvironmentConfig,
    dir: &str,
    target: &str,
) -> Result<(), EnvError> {
    let fail = |why: String| EnvError::new(env, format!("cannot copy squad there: {why}"));
    let exe = std::env::current_exe().map_err(|e| fail(e.to_string()))?;
    let bytes = tokio::fs::read(&exe)
        .await
        .map_err(|e| fail(e.to_string()))?;
    let part = format!("{target}.part-{}", std::process::id());
    let script = format!(
        "mkdir -p {d} && cat > {p} && chmod 755 {p} && mv -f {p} {t}",
        d = quote(dir),
        p = quote(&part),
        t = quote(target)
    );
    let mut child = shell(env, config, &script)?
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| fail(e.to_string()))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(&bytes)
            .await
            .map_err(|e| fail(e.to_string()))?;
    }
    let out = child
        .wait_with_output()
        .await
        .map_err(|e| fail(e.to_string()))?;
    if !out.status.success() {
        return Err(fail(
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        ));
    }
    Ok(())
}
