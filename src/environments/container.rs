//! The container transport: the engine's Docker API (Docker, or Podman's
//! `podman system service`, which serves the same API) through `bollard`. One container per
//! worker, started from the environment's image with its network (default none) and limits,
//! its first process `squad tool-server --hold` (the image's squad at the configured path,
//! or this squad copied in: [`super::copy_in`]); the worker's tool server is an exec beside
//! it, started the same way, speaking over the exec's attached stdin and stdout. The container is removed when
//! the connection is dropped. Every container squad starts carries the label
//! [`LABEL`], so a later start can find the ones a kill left behind.

use super::EnvError;
use super::client::{Remote, StderrTail};
use super::copy_in::{self, Launch};
use super::protocol::Init;
use crate::config::EnvironmentConfig;
use bollard::Docker;
use bollard::container::LogOutput;
use bollard::exec::{CreateExecOptions, StartExecResults};
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    CreateContainerOptions, DownloadFromContainerOptions, RemoveContainerOptions,
    UploadToContainerOptions,
};
use futures::StreamExt;
use std::collections::HashMap;
use std::sync::OnceLock;
use tokio::io::AsyncWriteExt;

/// The label on every container squad starts (its value: the environment's name).
pub const LABEL: &str = "squad.environment";

/// The label naming the data dir of the session that started a container.
pub const OWNER_DATA: &str = "squad.data";
/// The label naming that session.
pub const OWNER_SESSION: &str = "squad.session";

static OWNER: OnceLock<(String, String)> = OnceLock::new();

/// This process's session: the containers it starts carry it (one session a process).
pub fn set_owner(data: &std::path::Path, session: &str) {
    let _ = OWNER.set((data.display().to_string(), session.to_string()));
}

/// This process's session as [`set_owner`] set it: its data dir and id.
pub fn owner() -> Option<(String, String)> {
    OWNER.get().cloned()
}

/// The owner labels of a container started now.
fn owner_labels(env: &str) -> HashMap<String, String> {
    let mut labels = HashMap::from([(LABEL.to_string(), env.to_string())]);
    if let Some((data, session)) = OWNER.get() {
        labels.insert(OWNER_DATA.into(), data.clone());
        labels.insert(OWNER_SESSION.into(), session.clone());
    }
    labels
}

/// The engine at the environment's socket, checked to answer.
pub async fn engine(env: &str, config: &EnvironmentConfig) -> Result<Docker, EnvError> {
    let socket = socket(config);
    let docker = Docker::connect_with_unix(&socket, 120, bollard::API_DEFAULT_VERSION)
        .map_err(|e| EnvError::new(env, format!("cannot reach the engine at {socket}: {e}")))?;
    docker
        .version()
        .await
        .map_err(|e| EnvError::new(env, format!("the engine at {socket} does not answer: {e}")))?;
    Ok(docker)
}

/// The socket: the config's, else `DOCKER_HOST`, else Docker's, else Podman's (root's, or
/// the user's under `XDG_RUNTIME_DIR`).
pub fn socket(config: &EnvironmentConfig) -> String {
    if let Some(s) = &config.socket {
        return s.clone();
    }
    if let Ok(host) = std::env::var("DOCKER_HOST")
        && host.starts_with("unix://")
    {
        return host;
    }
    let docker = "/var/run/docker.sock";
    if std::path::Path::new(docker).exists() {
        return format!("unix://{docker}");
    }
    match std::env::var("XDG_RUNTIME_DIR") {
        Ok(dir) if !is_root() => format!("unix://{dir}/podman/podman.sock"),
        _ => "unix:///run/podman/podman.sock".to_string(),
    }
}

fn is_root() -> bool {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() == 0 }
}

/// Starts a worker's container and connects to the tool server exec'd in it.
pub async fn connect(
    env: &str,
    config: &EnvironmentConfig,
    init: &Init,
) -> Result<Remote, EnvError> {
    let docker = engine(env, config).await?;
    let launch = launch(&docker, env, config).await?;
    let id = start(&docker, env, config, &launch).await?;
    let guard = ContainerGuard {
        docker: docker.clone(),
        id: id.clone(),
    };
    // From here on, a failure removes the container (the guard drops).
    serve_in(&docker, env, guard, &launch.argv, init).await
}

/// How squad will start in the environment's containers, checked without making one
/// (`squad doctor`): from the image, or copied in (then the image's platform is checked).
pub async fn squad_there(env: &str, config: &EnvironmentConfig) -> Result<String, EnvError> {
    let docker = engine(env, config).await?;
    Ok(launch(&docker, env, config).await?.note())
}

/// The image inspected (a missing one fails here, before any container is made), and how
/// squad starts in it.
async fn launch(
    docker: &Docker,
    env: &str,
    config: &EnvironmentConfig,
) -> Result<Launch, EnvError> {
    let image = config
        .image
        .as_deref()
        .ok_or_else(|| EnvError::new(env, "a container environment needs `image`"))?;
    let inspected = docker
        .inspect_image(image)
        .await
        .map_err(|e| EnvError::new(env, format!("cannot create a container from {image}: {e}")))?;
    copy_in::launch(env, config, &inspected).await
}

/// Connects again to the worker's container `id` (a resumed session's): a new tool server
/// exec'd beside its first process. `None` when it no longer runs (removed, stopped), or
/// the exec fails there (then it is removed).
pub async fn reattach(
    env: &str,
    config: &EnvironmentConfig,
    id: &str,
    init: &Init,
) -> Result<Option<Remote>, EnvError> {
    let docker = engine(env, config).await?;
    let inspected = docker.inspect_container(id, None).await;
    let running = inspected
        .as_ref()
        .ok()
        .and_then(|c| c.state.as_ref())
        .and_then(|s| s.running)
        .unwrap_or(false);
    if !running {
        return Ok(None);
    }
    // Started as its first process was: the image's squad, or the one copied in.
    let first = inspected.ok().and_then(|c| c.config).and_then(|c| c.cmd);
    let argv = match first.as_deref() {
        Some([argv @ .., serve, hold]) if serve == "tool-server" && hold == "--hold" => {
            argv.to_vec()
        }
        _ => vec![config.squad_or_default().to_string()],
    };
    let guard = ContainerGuard {
        docker: docker.clone(),
        id: id.to_string(),
    };
    match serve_in(&docker, env, guard, &argv, init).await {
        Ok(remote) => Ok(Some(remote)),
        Err(e) => {
            tracing::info!("no reattaching to container {id}: {e}");
            Ok(None)
        }
    }
}

/// The worker's tool server exec'd in the container `guard` holds, connected.
async fn serve_in(
    docker: &Docker,
    env: &str,
    guard: ContainerGuard,
    argv: &[String],
    init: &Init,
) -> Result<Remote, EnvError> {
    let id = guard.id.clone();
    let mut cmd = argv.to_vec();
    cmd.push("tool-server".to_string());
    let exec = docker
        .create_exec(
            &id,
            CreateExecOptions {
                attach_stdin: Some(true),
                attach_stdout: Some(true),
                attach_stderr: Some(true),
                cmd: Some(cmd),
                ..Default::default()
            },
        )
        .await
        .map_err(|e| EnvError::new(env, format!("cannot exec the tool server in {id}: {e}")))?;
    let started = docker
        .start_exec(&exec.id, None)
        .await
        .map_err(|e| EnvError::new(env, format!("cannot start the tool server in {id}: {e}")))?;
    let StartExecResults::Attached { mut output, input } = started else {
        return Err(EnvError::new(
            env,
            "the engine detached the tool server's exec",
        ));
    };
    let tail = StderrTail::default();
    let keep = tail.clone();
    let (reader, mut writer) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        while let Some(Ok(frame)) = output.next().await {
            match frame {
                LogOutput::StdOut { message } | LogOutput::Console { message } => {
                    if writer.write_all(&message).await.is_err() {
                        break;
                    }
                }
                LogOutput::StdErr { message } => keep.push(&String::from_utf8_lossy(&message)),
                LogOutput::StdIn { .. } => {}
            }
        }
    });
    Remote::connect(env, reader, input, init, tail, Box::new(guard)).await
}

/// Creates the container, puts squad in when it is copied, and starts it; removes it again
/// when either fails.
async fn start(
    docker: &Docker,
    env: &str,
    config: &EnvironmentConfig,
    launch: &Launch,
) -> Result<String, EnvError> {
    let image = config
        .image
        .clone()
        .ok_or_else(|| EnvError::new(env, "a container environment needs `image`"))?;
    let name = format!(
        "squad-{env}-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let mut cmd = launch.argv.clone();
    cmd.extend(["tool-server".to_string(), "--hold".to_string()]);
    let body = ContainerCreateBody {
        image: Some(image.clone()),
        cmd: Some(cmd),
        labels: Some(owner_labels(env)),
        host_config: Some(HostConfig {
            network_mode: Some(config.network_mode().to_string()),
            nano_cpus: config.cpus.map(|c| (c * 1e9) as i64),
            memory: config.memory_bytes(),
            binds: (!config.mounts.is_empty()).then(|| config.mounts.clone()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let options = CreateContainerOptions {
        name: Some(name.clone()),
        ..Default::default()
    };
    let created = docker
        .create_container(Some(options), body)
        .await
        .map_err(|e| EnvError::new(env, format!("cannot create a container from {image}: {e}")))?;
    if let Some(bundle) = &launch.copied
        && let Err(e) = copy_in::upload(docker, &created.id, bundle).await
    {
        remove(docker, &created.id).await;
        return Err(EnvError::new(
            env,
            format!("cannot copy squad into the container {name}: {e}"),
        ));
    }
    if let Err(e) = docker.start_container(&created.id, None).await {
        remove(docker, &created.id).await;
        return Err(EnvError::new(
            env,
            format!("cannot start the container {name}: {e}"),
        ));
    }
    Ok(created.id)
}

/// Removes the container, running or not.
pub async fn remove(docker: &Docker, id: &str) {
    let options = RemoveContainerOptions {
        force: true,
        ..Default::default()
    };
    if let Err(e) = docker.remove_container(id, Some(options)).await {
        tracing::warn!("cannot remove container {id}: {e}");
    }
}

/// The worker's container, removed when its connection is dropped.
struct ContainerGuard {
    docker: Docker,
    id: String,
}

#[async_trait::async_trait]
impl super::client::Transport for ContainerGuard {
    fn container(&self) -> Option<String> {
        Some(self.id.clone())
    }

    async fn close(&mut self) {
        let id = std::mem::take(&mut self.id);
        if !id.is_empty() {
            remove(&self.docker, &id).await;
        }
    }

    async fn upload(&self, path: &str, tar: Vec<u8>) -> Result<(), String> {
        let options = UploadToContainerOptions {
            path: path.to_string(),
            ..Default::default()
        };
        let body = bollard::body_full(bytes::Bytes::from(tar));
        self.docker
            .upload_to_container(&self.id, Some(options), body)
            .await
            .map_err(|e| format!("the engine refused the archive for {path}: {e}"))
    }

    async fn download(&self, path: &str) -> Result<Vec<u8>, String> {
        let options = DownloadFromContainerOptions {
            path: path.to_string(),
        };
        let mut stream = self.docker.download_from_container(&self.id, Some(options));
        let mut tar = Vec::new();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| format!("the engine gave no archive of {path}: {e}"))?;
            tar.extend_from_slice(&chunk);
        }
        Ok(tar)
    }
}

impl Drop for ContainerGuard {
    fn drop(&mut self) {
        let (docker, id) = (self.docker.clone(), std::mem::take(&mut self.id));
        if id.is_empty() {
            return;
        }
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move { remove(&docker, &id).await });
        }
    }
}
