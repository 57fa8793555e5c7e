//! The process transport: a tool server as a child process speaking on its stdin and
//! stdout (`squad tool-server` itself, or `ssh HOST squad tool-server`). The child is
//! killed when the connection is dropped.

use super::EnvError;
use super::client::{Remote, StderrTail};
use super::protocol::Init;
use std::process::Stdio;
use tokio::io::AsyncReadExt;
use tokio::process::Command;

/// Starts `command` and connects to the tool server it runs.
pub async fn connect(env: &str, mut command: Command, init: &Init) -> Result<Remote, EnvError> {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let program = command
        .as_std()
        .get_program()
        .to_string_lossy()
        .into_owned();
    let mut child = command
        .spawn()
        .map_err(|e| EnvError::new(env, format!("cannot start {program}: {e}")))?;
    let (Some(stdin), Some(stdout), Some(mut stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(EnvError::new(env, format!("{program} has no pipes")));
    };
    let tail = StderrTail::default();
    let keep = tail.clone();
    tokio::spawn(async move {
        let mut buf = [0u8; 1024];
        while let Ok(n) = stderr.read(&mut buf).await {
            if n == 0 {
                break;
            }
            keep.push(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    Remote::connect(env, stdout, stdin, init, tail, Box::new(ChildGuard(child))).await
}

/// The child process, killed with its connection (`kill_on_drop`).
struct ChildGuard(tokio::process::Child);

#[async_trait::async_trait]
impl super::client::Transport for ChildGuard {
    async fn close(&mut self) {
        let _ = self.0.kill().await;
    }
}

/// `squad tool-server` of `exe` (this very binary, by default) as a child: the transport
/// with no network and no engine, for tests and benches of the protocol itself.
pub fn tool_server_command(exe: &std::path::Path) -> Command {
    let mut cmd = Command::new(exe);
    cmd.arg("tool-server");
    cmd
}
