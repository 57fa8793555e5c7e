//! An environment checked from here (`squad doctor`) and one command run there
//! (`squad sandbox --env NAME`): both reach the far side's tool server the way a worker
//! would, so what they say holds for a worker.

use super::{EnvError, Remote, protocol::Init};
use crate::config::{EnvKind, EnvironmentConfig};
use crate::sandbox::Level;
use crate::tools::ToolSettings;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// One environment's state, as a doctor line: what was found, and the fix when it fails.
#[derive(Clone, Debug, PartialEq)]
pub struct Probe {
    pub ok: bool,
    pub message: String,
    pub fix: Option<String>,
}

/// Where an environment is, in a few words: `ssh me@box:/srv/w`, `container debian:12`.
pub fn place(config: &EnvironmentConfig) -> String {
    match config.kind {
        Some(EnvKind::Ssh) => format!(
            "ssh {}:{}",
            config.host.as_deref().unwrap_or("?"),
            config.workdir_or_default()
        ),
        Some(EnvKind::Container) => format!(
            "container {} (network {})",
            config.image.as_deref().unwrap_or("?"),
            config.network_mode()
        ),
        Some(EnvKind::Local) | None => "this machine".to_string(),
    }
}

/// One word of a command line, quoted for the far side's shell.
pub fn shell_word(word: &str) -> String {
    super::ssh::quote(word)
}

/// Reaches the environment's tool server and asks it for `git --version`.
pub async fn probe(name: &str, config: &EnvironmentConfig, level: Level) -> Probe {
    let head = format!("environment {name} ({})", place(config));
    if matches!(config.kind, Some(EnvKind::Local) | None) {
        return Probe {
            ok: true,
            message: format!("{head}: tools run in this process"),
            fix: None,
        };
    }
    // A container's squad: from the image, or copied in (its platform checked first).
    let squad = match config.kind {
        Some(EnvKind::Container) => match super::container::squad_there(name, config).await {
            Ok(note) => format!(", {note}"),
            Err(e) => {
                return Probe {
                    ok: false,
                    message: format!("{head}: {}", e.reason),
                    fix: Some(fix_for(config, &e.reason)),
                };
            }
        },
        _ => String::new(),
    };
    let remote = match connect(name, config, level).await {
        Ok(remote) => remote,
        Err(e) => {
            return Probe {
                ok: false,
                message: format!("{head}: {}", e.reason),
                fix: Some(fix_for(config, &e.reason)),
            };
        }
    };
    let hello = remote.hello().clone();
    let git = run(&remote, "git --version").await;
    remote.close().await;
    let found = format!(
        "{head}: squad {} runs there{squad}; root {}; {}",
        hello.squad, hello.root, hello.sandbox
    );
    match git {
        Ok((0, out)) => Probe {
            ok: true,
            message: format!("{found}; {}", last_line(&out)),
            fix: None,
        },
        Ok(_) | Err(_) => Probe {
            ok: false,
            message: format!("{found}; git does not run there"),
            fix: Some(match config.kind {
                Some(EnvKind::Container) => "install git in the image".to_string(),
                _ => "install git on that host".to_string(),
            }),
        },
    }
}

/// Runs one shell command line there, in the worker's root with its sandbox; returns its
/// exit code (1 when it did not exit by itself) and the tool's output.
pub async fn run_there(
    name: &str,
    config: &EnvironmentConfig,
    level: Level,
    command: &str,
) -> Result<(i32, String), EnvError> {
    let remote = connect(name, config, level).await?;
    let ran = run(&remote, command).await;
    remote.close().await;
    ran.map_err(|e| EnvError::new(name, e.to_string()))
}

/// Whether environment `name` is this machine (`kind = "local"`): its commands run here.
pub fn runs_here(config: &crate::config::Config, name: &str) -> bool {
    config
        .environments
        .get(name)
        .is_some_and(|e| e.kind == Some(EnvKind::Local))
}

/// `squad sandbox --env NAME -- CMD`: the command run there as a worker's `run_command`
/// would be; its exit code and output.
pub async fn sandbox_command(
    config: &crate::config::Config,
    name: &str,
    level: Level,
    argv: &[std::ffi::OsString],
) -> Result<(i32, String), EnvError> {
    let Some(env) = config.environments.get(name) else {
        let known: Vec<&str> = config.environments.keys().map(String::as_str).collect();
        let known = match known.is_empty() {
            true => "none configured: add an [environments.NAME] table".to_string(),
            false => format!("known: {}", known.join(", ")),
        };
        return Err(EnvError::new(name, format!("not in the config ({known})")));
    };
    let line = argv
        .iter()
        .map(|a| shell_word(&a.to_string_lossy()))
        .collect::<Vec<_>>()
        .join(" ");
    run_there(name, env, level, &line).await
}

async fn connect(name: &str, config: &EnvironmentConfig, level: Level) -> Result<Remote, EnvError> {
    let init = Init::new(config.workdir_or_default(), level, &ToolSettings::default());
    super::connect(name, config, &init).await
}

async fn run(remote: &Remote, command: &str) -> Result<(i32, String), crate::tools::ToolError> {
    let out = remote
        .call(
            crate::tools::RUN_COMMAND,
            json!({ "command": command }),
            &CancellationToken::new(),
        )
        .await?;
    let code = out
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("exit code: "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|c| c.parse().ok())
        .unwrap_or(1);
    Ok((code, out))
}

fn last_line(out: &str) -> String {
    out.lines()
        .rev()
        .find(|l| l.trim_start().starts_with("git version"))
        .unwrap_or("git runs")
        .trim()
        .to_string()
}

/// The fix for a failure to reach the tool server, by where it failed.
fn fix_for(config: &EnvironmentConfig, reason: &str) -> String {
    let squad = config.squad_or_default();
    match config.kind {
        Some(EnvKind::Container) if reason.contains("engine") => format!(
            "start the engine (`podman system service`, or Docker) or set `socket` (tried {})",
            super::container::socket(config)
        ),
        Some(EnvKind::Container) if reason.contains("cannot create a container") => format!(
            "pull or build the image (`podman pull {}`)",
            config.image.as_deref().unwrap_or("IMAGE")
        ),
        Some(EnvKind::Container) if reason.contains("cannot be copied in") => {
            "see above: an image of this machine's platform, or `squad` set to one built for it"
                .to_string()
        }
        Some(EnvKind::Container) if config.squad.is_none() => {
            "this squad is copied in and did not start there: put squad in the image or \
             mount it (`mounts`), and set `squad` to its path there"
                .to_string()
        }
        Some(EnvKind::Container) => format!(
            "put squad in the image or mount it (`mounts`), and set `squad` to its path there (now {squad})"
        ),
        _ => format!(
            "check that `ssh {} {squad} --version` works from your shell without a prompt (a key or your agent), or set `squad` to its path there",
            config.host.as_deref().unwrap_or("HOST")
        ),
    }
}
