//! Running a shell command for `run_command` and `run_tests`: one real process group in the
//! workspace root, output combined in arrival order and capped head-and-tail, with a timeout
//! and cancellation that kill the whole group.

use super::{ToolContext, ToolError};
use crate::sandbox::Confined;
use std::collections::VecDeque;
use std::path::Path;
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;

/// After the shell exits, how long to keep reading output that background processes it
/// started may still be writing; they keep the pipe open, so EOF may never come.
const AFTER_EXIT_GRACE: Duration = Duration::from_millis(500);
/// After killing the group, how long to collect what was already written.
const AFTER_KILL_GRACE: Duration = Duration::from_millis(500);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Exited(i32),
    Signalled(i32),
    TimedOut(Duration),
}

#[derive(Debug)]
pub(crate) struct RunOutcome {
    pub status: Status,
    /// Combined stdout and stderr, capped; empty if there was none.
    pub output: String,
    pub elapsed: Duration,
    /// The shell exited while something it started still held the output open.
    pub left_background: bool,
}

impl RunOutcome {
    /// Output with its notes, for the model; `(no output)` rather than nothing.
    pub fn output_block(&self) -> String {
        let mut out = if self.output.is_empty() {
            "(no output)".to_string()
        } else {
            self.output.clone()
        };
        if self.left_background {
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(
                "[the command left background processes running that keep its output open; \
                 their later output is not shown]",
            );
        }
        out
    }
}

/// `bash` where there is one (what models write for), else POSIX `sh`.
fn shell() -> &'static str {
    static SHELL: OnceLock<&'static str> = OnceLock::new();
    SHELL.get_or_init(|| {
        if Path::new("/bin/bash").exists() {
            "/bin/bash"
        } else {
            "/bin/sh"
        }
    })
}

pub(crate) fn format_elapsed(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else if d < Duration::from_secs(10) {
        format!("{:.1}s", d.as_secs_f64())
    } else {
        format!("{}s", d.as_secs())
    }
}

fn kill_group(pgid: Option<u32>) {
    let Some(pgid) = pgid.and_then(|p| libc::pid_t::try_from(p).ok()) else {
        return;
    };
    // SAFETY: kill(2) has no memory-safety preconditions. `pgid` is the id of a child we
    // spawned as a group leader and have not reaped yet, so the group id is still ours.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}

/// Kills the group if the running call is dropped before the shell was reaped (the caller
/// gave up on the future rather than cancelling); `kill_on_drop` alone reaches only the shell.
struct GroupGuard(Option<u32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        kill_group(self.0.take());
    }
}

/// Runs `command` with the workspace root as working directory and stdin closed.
///
/// A non-zero exit is an ordinary outcome; only failing to start is an error, plus
/// `Cancelled` when `ctx.cancel` fires (the group is killed first).
pub(crate) async fn run_shell(
    ctx: &ToolContext,
    command: &str,
    timeout: Duration,
) -> Result<RunOutcome, ToolError> {
    run_shell_in(ctx, command, timeout, ctx.sandbox.as_deref()).await
}

/// [`run_shell`] in `sandbox` (`None`: unconfined, as an approved escalation runs).
pub(crate) async fn run_shell_in(
    ctx: &ToolContext,
    command: &str,
    timeout: Duration,
    sandbox: Option<&Confined>,
) -> Result<RunOutcome, ToolError> {
    let started = Instant::now();
    let jail = match sandbox.cloned() {
        Some(c) => Some(
            tokio::task::spawn_blocking(move || c.prepare())
                .await
                .map_err(|e| ToolError::Failed(format!("cannot prepare the sandbox: {e}")))?
                .map_err(|e| ToolError::Failed(e.to_string()))?,
        ),
        None => None,
    };
    let cant_start = |e: std::io::Error| ToolError::Failed(format!("cannot start command: {e}"));
    // One pipe for both streams, so output keeps the order it was written in.
    let (reader, writer) = std::io::pipe().map_err(cant_start)?;
    let writer_err = writer.try_clone().map_err(cant_start)?;
    let mut cmd = tokio::process::Command::new(shell());
    cmd.arg("-c")
        .arg(command)
        .current_dir(ctx.workspace.root())
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(writer_err)
        .env("PAGER", "cat")
        .env("GIT_PAGER", "cat")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("NO_COLOR", "1")
        .process_group(0)
        .kill_on_drop(true);
    if let Some(jail) = &jail {
        jail.apply(cmd.as_std_mut());
    }
    let spawned = cmd.spawn();
    // The command object holds our copies of the write end; until they are closed the pipe
    // never reports EOF.
    drop(cmd);
    let mut child = spawned.map_err(cant_start)?;
    let pgid = child.id();
    let mut guard = GroupGuard(pgid);
    let mut rx = pipe::Receiver::from_owned_fd(reader.into()).map_err(cant_start)?;

    let mut buf = HeadTail::new(ctx.settings.max_output_bytes);
    let mut chunk = vec![0u8; 16 * 1024];
    let deadline = tokio::time::Instant::now() + timeout;
    let mut exit = None;
    let mut eof = false;
    let mut grace_until: Option<tokio::time::Instant> = None;
    let mut timed_out = false;
    loop {
        let wake = grace_until.map_or(deadline, |g| g.min(deadline));
        tokio::select! {
            _ = ctx.cancel.cancelled() => {
                kill_group(guard.0.take());
                let _ = child.wait().await;
                return Err(ToolError::Cancelled);
            }
            _ = tokio::time::sleep_until(wake) => {
                timed_out = exit.is_none();
                break;
            }
            read = rx.read(&mut chunk), if !eof => match read {
                Ok(0) | Err(_) => eof = true,
                Ok(n) => buf.push(&chunk[..n]),
            },
            status = child.wait(), if exit.is_none() => {
                exit = Some(status.map_err(|e| ToolError::Failed(format!("waiting for the command failed: {e}")))?);
                // Reaped: the group id may be reused from now on, and whatever the shell left
                // running in the background was started on purpose.
                guard.0 = None;
                grace_until = Some(tokio::time::Instant::now() + AFTER_EXIT_GRACE);
            }
        }
        if eof && exit.is_some() {
            break;
        }
    }

    if timed_out {
        kill_group(guard.0.take());
        let _ = child.wait().await;
        // Collect what the group wrote before it died.
        let until = tokio::time::Instant::now() + AFTER_KILL_GRACE;
        while !eof {
            match tokio::time::timeout_at(until, rx.read(&mut chunk)).await {
                Ok(Ok(n)) if n > 0 => buf.push(&chunk[..n]),
                _ => eof = true,
            }
        }
    }

    let status = match exit {
        _ if timed_out => Status::TimedOut(timeout),
        Some(s) => match (s.code(), std::os::unix::process::ExitStatusExt::signal(&s)) {
            (Some(code), _) => Status::Exited(code),
            (None, Some(sig)) => Status::Signalled(sig),
            (None, None) => Status::Exited(-1),
        },
        None => Status::TimedOut(timeout),
    };
    Ok(RunOutcome {
        status,
        output: buf.render(),
        elapsed: started.elapsed(),
        left_background: !timed_out && !eof,
    })
}

/// Keeps the first and last halves of a stream within `cap` bytes: the start shows what
/// ran, the end shows how it finished, which is usually where the error is.
struct HeadTail {
    cap: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: usize,
}

impl HeadTail {
    fn new(cap: usize) -> Self {
        Self {
            cap,
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
        }
    }

    fn push(&mut self, mut data: &[u8]) {
        self.total += data.len();
        let head_room = (self.cap / 2).saturating_sub(self.head.len());
        let into_head = head_room.min(data.len());
        self.head.extend_from_slice(&data[..into_head]);
        data = &data[into_head..];
        let tail_cap = self.cap - self.cap / 2;
        if data.len() >= tail_cap {
            self.tail.clear();
            self.tail.extend(&data[data.len() - tail_cap..]);
        } else {
            self.tail.extend(data);
            let excess = self.tail.len().saturating_sub(tail_cap);
            self.tail.drain(..excess);
        }
    }

    fn render(&self) -> String {
        let kept = self.head.len() + self.tail.len();
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        if kept == self.total {
            let mut all = self.head.clone();
            all.extend_from_slice(&tail);
            return String::from_utf8_lossy(&all).into_owned();
        }
        // Cut points can fall inside a UTF-8 character; drop the broken pieces.
        let head = match std::str::from_utf8(&self.head) {
            Err(e) if e.error_len().is_none() => &self.head[..e.valid_up_to()],
            _ => &self.head[..],
        };
        let skip = tail
            .iter()
            .take(3)
            .take_while(|&&b| b & 0b1100_0000 == 0b1000_0000)
            .count();
        let mut out = String::from_utf8_lossy(head).into_owned();
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!(
            "[... {} bytes of output omitted (limit {} bytes, showing the start and the end) ...]\n",
            self.total - kept,
            self.cap
        ));
        out.push_str(&String::from_utf8_lossy(&tail[skip..]));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::HeadTail;

    #[test]
    fn head_tail_keeps_everything_under_the_cap() {
        let mut b = HeadTail::new(100);
        b.push(b"hello ");
        b.push(b"world");
        assert_eq!(b.render(), "hello world");
    }

    #[test]
    fn head_tail_keeps_both_ends_over_the_cap() {
        let mut b = HeadTail::new(20);
        for i in 0..100 {
            b.push(format!("{i:03}\n").as_bytes());
        }
        let out = b.render();
        assert!(out.starts_with("000\n001\n"), "{out}");
        assert!(out.ends_with("098\n099\n"), "{out}");
        assert!(out.contains("380 bytes of output omitted"), "{out}");
    }

    #[test]
    fn head_tail_handles_one_big_chunk_and_utf8_cuts() {
        let mut b = HeadTail::new(10);
        b.push("ééééééééééééééééééééé".as_bytes());
        let out = b.render();
        assert!(!out.contains('\u{fffd}'), "{out}");
        assert!(out.starts_with("éé"), "{out}");
        assert!(out.ends_with("éé"), "{out}");
    }
}
