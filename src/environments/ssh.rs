//! The ssh transport: the user's own `ssh`, so their `~/.ssh/config`, agent, keys and
//! ProxyJump apply as in their shell. Every connection to one host shares one TCP and SSH
//! session (`ControlMaster=auto`), through a socket in a folder only the user can use; the
//! master lingers a minute after the last worker left (`ControlPersist`).

use super::EnvError;
use super::client::Remote;
use super::protocol::Init;
use crate::config::EnvironmentConfig;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use tokio::process::Command;

/// Connects to `squad tool-server` on the environment's host.
pub async fn connect(
    env: &str,
    config: &EnvironmentConfig,
    init: &Init,
) -> Result<Remote, EnvError> {
    let command = command(env, config, &["tool-server"])?;
    super::child::connect(env, command, init).await
}

/// `ssh … HOST -- SQUAD ARGS…` with the shared connection's options; `squad_args` are
/// passed to the far side's squad, quoted for its shell.
pub fn command(
    env: &str,
    config: &EnvironmentConfig,
    squad_args: &[&str],
) -> Result<Command, EnvError> {
    let mut remote = vec![quote(config.squad_or_default())];
    remote.extend(squad_args.iter().map(|a| quote(a)));
    shell(env, config, &format!("exec {}", remote.join(" ")))
}

/// `ssh … HOST -- SCRIPT`: `script` run by the far side's shell, over the shared connection.
pub fn shell(env: &str, config: &EnvironmentConfig, script: &str) -> Result<Command, EnvError> {
    let host = config
        .host
        .as_deref()
        .ok_or_else(|| EnvError::new(env, "an ssh environment needs `host`"))?;
    let dir = control_dir().map_err(|e| EnvError::new(env, e))?;
    let mut cmd = Command::new("ssh");
    if let Some(file) = &config.ssh_config {
        cmd.arg("-F").arg(expand_home(file));
    }
    cmd.args(["-T", "-o", "BatchMode=yes", "-o", "ConnectTimeout=15"])
        .args(["-o", "ControlMaster=auto"])
        .arg("-o")
        .arg(format!("ControlPath={}/%C", dir.display()))
        .args(["-o", "ControlPersist=60", host, "--"]);
    cmd.arg(script);
    Ok(cmd)
}

/// The user's folder for ssh's control sockets, `/tmp/squad-ssh-UID`, made once with mode
/// 0700 and refused unless it is the user's own and no one else's: one fixed folder, so no
/// process leaves one behind, and squad processes of one user share a host's connection.
fn control_dir() -> Result<&'static Path, String> {
    static DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    DIR.get_or_init(|| {
        use std::os::unix::fs::{DirBuilderExt, MetadataExt};
        // SAFETY: getuid has no preconditions and cannot fail.
        let uid = unsafe { libc::getuid() };
        // Short: a unix socket's path must fit in about 100 bytes (`%C` adds 40).
        let dir = PathBuf::from(format!("/tmp/squad-ssh-{uid}"));
        let made = std::fs::DirBuilder::new().mode(0o700).create(&dir);
        if let Err(e) = made
            && !dir.is_dir()
        {
            return Err(format!("cannot make {} for ssh's shared connection: {e}", dir.display()));
        }
        let meta = std::fs::symlink_metadata(&dir).map_err(|e| e.to_string())?;
        if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o077 != 0 {
            return Err(format!(
                "{} is not a folder only you can use; remove it (ssh's shared connection lives there)",
                dir.display()
            ));
        }
        Ok(dir)
    })
    .as_ref()
    .map(PathBuf::as_path)
    .map_err(Clone::clone)
}

/// `'text'` for a POSIX shell.
pub fn quote(text: &str) -> String {
    if !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@".contains(c))
    {
        return text.to_string();
    }
    format!("'{}'", text.replace('\'', "'\\''"))
}

fn expand_home(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => Path::new(&home).join(rest),
        _ => PathBuf::from(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn far_side_words_are_quoted_for_its_shell() {
        assert_eq!(quote("/usr/bin/squad"), "/usr/bin/squad");
        assert_eq!(quote("my squad"), "'my squad'");
        assert_eq!(quote("it's"), "'it'\\''s'");
        assert_eq!(quote(""), "''");
    }
}
