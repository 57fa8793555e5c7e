//! The agent's process: started from its command (args, env, cwd), its standard error kept
//! (the last few KB, for the reason of a fault), its end watched, and killed when squad is
//! done with it or it hangs. Nothing of the process outlives its [`Process`].

use super::AgentCommand;
use super::error::ClientError;
use std::collections::VecDeque;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use tokio::io::AsyncReadExt;
use tokio::process::{ChildStdin, ChildStdout, Command};
use tokio::sync::{oneshot, watch};

/// How much of the agent's standard error is kept.
const TAIL: usize = 4096;

/// The agent's standard error, its last [`TAIL`] bytes.
#[derive(Clone, Default)]
pub(super) struct StderrTail(Arc<Mutex<VecDeque<u8>>>);

impl StderrTail {
    fn push(&self, bytes: &[u8]) {
        let mut kept = crate::sync::lock(&self.0);
        kept.extend(bytes);
        let over = kept.len().saturating_sub(TAIL);
        kept.drain(..over);
    }

    pub fn text(&self) -> String {
        let kept = crate::sync::lock(&self.0);
        String::from_utf8_lossy(&kept.iter().copied().collect::<Vec<u8>>()).into_owned()
    }
}

/// A running agent.
pub(super) struct Process {
    pub stdin: Option<ChildStdin>,
    pub stdout: Option<ChildStdout>,
    pub stderr: StderrTail,
    /// `Some(status)` once it ended.
    pub exited: watch::Receiver<Option<String>>,
    kill: Option<oneshot::Sender<()>>,
    pub pid: Option<u32>,
}

impl Process {
    /// Starts `agent`; its working folder is its own `cwd` if set, else `folder`.
    pub fn start(agent: &AgentCommand, folder: &Path) -> Result<Self, ClientError> {
        let mut cmd = Command::new(&agent.command);
        cmd.args(&agent.args)
            .envs(&agent.env)
            .current_dir(agent.cwd.as_deref().unwrap_or(folder))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|source| match source.kind() {
            std::io::ErrorKind::NotFound => ClientError::NotFound {
                command: agent.command.clone(),
            },
            _ => ClientError::Spawn {
                command: agent.command.clone(),
                source,
            },
        })?;
        let stderr = StderrTail::default();
        if let Some(mut err) = child.stderr.take() {
            let tail = stderr.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                while let Ok(n) = err.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    tail.push(&buf[..n]);
                }
            });
        }
        let (stdin, stdout, pid) = (child.stdin.take(), child.stdout.take(), child.id());
        let (exited_tx, exited) = watch::channel(None);
        let (kill, killed) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let status = tokio::select! {
                status = child.wait() => status,
                _ = killed => {
                    let _ = child.start_kill();
                    child.wait().await
                }
            };
            let said = status.map_or_else(|e| e.to_string(), |s| s.to_string());
            let _ = exited_tx.send(Some(said));
        });
        Ok(Self {
            stdin,
            stdout,
            stderr,
            exited,
            kill: Some(kill),
            pid,
        })
    }

    /// Ends the process now (a second call does nothing).
    pub fn kill(&mut self) {
        if let Some(kill) = self.kill.take() {
            let _ = kill.send(());
        }
    }

    /// How it ended, waiting up to `wait` for it to end.
    pub async fn status_within(&self, wait: std::time::Duration) -> Option<String> {
        let mut exited = self.exited.clone();
        let ended = tokio::time::timeout(wait, exited.wait_for(Option::is_some)).await;
        match ended {
            Ok(Ok(status)) => status.clone(),
            _ => None,
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}
