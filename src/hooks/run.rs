//! Running one hook: `sh -c COMMAND` in the project's folder, in a process group of its
//! own, with the payload on stdin and `CLAUDE_PROJECT_DIR` / `SQUAD_PROJECT_DIR` set. A
//! hook is the user's own policy, not the agent's code, so it runs with the user's rights
//! as Claude Code's and Codex's do (it writes its log under the home folder); a workspace's
//! hooks run only while their approval holds (`trust.rs`), so the agent cannot change what
//! runs. A hook that outlives its time limit is killed with its whole group (a hook's own
//! children must not linger) and the call goes on.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

/// How a hook run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookRun {
    /// `None`: it did not exit by itself (killed at its time limit, or could not start).
    pub exit: Option<i32>,
    pub timed_out: bool,
    pub stderr: String,
    pub stdout: String,
    pub ms: u64,
    /// Set when the command could not be started at all.
    pub failed_to_start: Option<String>,
}

/// Most bytes of a hook's stdout and stderr kept.
const MAX_OUTPUT: usize = 16 * 1024;

/// The one way a hook's command is built.
fn command(cmd: &str, project: &Path) -> Command {
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(cmd)
        .current_dir(project)
        .env("CLAUDE_PROJECT_DIR", project)
        .env("SQUAD_PROJECT_DIR", project)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    c
}

/// Runs `cmd` in `project` (the workspace's root) with `stdin`.
pub async fn run_hook(cmd: &str, project: &Path, stdin: &str, timeout: Duration) -> HookRun {
    let started = Instant::now();
    let ms = |started: Instant| started.elapsed().as_millis() as u64;
    let not_started = |why: String| HookRun {
        exit: None,
        timed_out: false,
        stderr: String::new(),
        stdout: String::new(),
        ms: ms(started),
        failed_to_start: Some(why),
    };
    let mut child = match command(cmd, project).spawn() {
        Ok(c) => c,
        Err(e) => return not_started(format!("cannot start `sh -c`: {e}")),
    };
    let pgid = child.id();
    let mut input = child.stdin.take();
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let data = stdin.as_bytes().to_vec();
    // A hook that does not read its stdin must not block us: write beside the wait.
    let feed = async move {
        if let Some(mut i) = input.take() {
            let _ = i.write_all(&data).await;
            let _ = i.shutdown().await;
        }
    };
    let read = |pipe: Option<tokio::process::ChildStdout>| async move {
        let mut buf = Vec::new();
        if let Some(mut p) = pipe {
            let _ = (&mut p).take(MAX_OUTPUT as u64).read_to_end(&mut buf).await;
        }
        String::from_utf8_lossy(&buf).into_owned()
    };
    let read_err = |pipe: Option<tokio::process::ChildStderr>| async move {
        let mut buf = Vec::new();
        if let Some(mut p) = pipe {
            let _ = (&mut p).take(MAX_OUTPUT as u64).read_to_end(&mut buf).await;
        }
        String::from_utf8_lossy(&buf).into_owned()
    };
    let work = async {
        let (_, stdout, stderr, status) =
            tokio::join!(feed, read(out.take()), read_err(err.take()), child.wait());
        (stdout, stderr, status)
    };
    match tokio::time::timeout(timeout, work).await {
        Ok((stdout, stderr, status)) => HookRun {
            exit: status.ok().and_then(|s| s.code()),
            timed_out: false,
            stderr,
            stdout,
            ms: ms(started),
            failed_to_start: None,
        },
        Err(_) => {
            kill_group(pgid);
            HookRun {
                exit: None,
                timed_out: true,
                stderr: String::new(),
                stdout: String::new(),
                ms: ms(started),
                failed_to_start: None,
            }
        }
    }
}

/// Kills the hook's process group: the shell and whatever it started.
fn kill_group(pgid: Option<u32>) {
    let Some(pgid) = pgid.and_then(|p| i32::try_from(p).ok()) else {
        return;
    };
    // SAFETY: killpg takes a plain process-group id and a signal number; a group that is
    // already gone makes it fail with ESRCH, which is fine.
    unsafe {
        libc::killpg(pgid, libc::SIGKILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    #[tokio::test]
    async fn a_hook_reads_its_payload_and_its_exit_code_and_stderr_come_back() {
        let dir = tmp();
        let run = run_hook(
            "cat > got.json; echo 'no rm -rf here' >&2; exit 2",
            dir.path(),
            r#"{"tool_name":"run_command"}"#,
            Duration::from_secs(10),
        )
        .await;
        assert_eq!(run.exit, Some(2));
        assert!(!run.timed_out);
        assert_eq!(run.stderr.trim(), "no rm -rf here");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("got.json")).unwrap(),
            r#"{"tool_name":"run_command"}"#
        );
    }

    #[tokio::test]
    async fn a_hanging_hook_is_killed_with_its_children_at_its_time_limit() {
        let dir = tmp();
        let run = run_hook(
            "sleep 30 & echo $! > child.pid; wait",
            dir.path(),
            "{}",
            Duration::from_millis(500),
        )
        .await;
        assert!(run.timed_out && run.exit.is_none());
        assert!(run.ms < 10_000);
        let pid: i32 = std::fs::read_to_string(dir.path().join("child.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // The group was killed: the background sleep is gone (or a zombie about to be reaped).
        tokio::time::sleep(Duration::from_millis(200)).await;
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let alive = state
            .split(") ")
            .nth(1)
            .is_some_and(|rest| !rest.starts_with('Z'));
        assert!(!alive, "the hook's child {pid} still runs: {state}");
    }

    #[tokio::test]
    async fn a_hook_that_ignores_its_stdin_does_not_block() {
        let dir = tmp();
        let big = "x".repeat(1 << 20);
        let run = run_hook("exit 0", dir.path(), &big, Duration::from_secs(10)).await;
        assert_eq!(run.exit, Some(0));
    }

    #[tokio::test]
    async fn a_hook_is_told_the_project_folder_as_claude_codes_are() {
        let dir = tmp();
        let run = run_hook(
            "printf %s \"$CLAUDE_PROJECT_DIR $SQUAD_PROJECT_DIR $(pwd)\"",
            dir.path(),
            "{}",
            Duration::from_secs(10),
        )
        .await;
        let d = dir.path().display();
        assert_eq!(run.stdout, format!("{d} {d} {d}"));
    }
}
