//! Runs the real `squad` binary in a sandbox: its own config and data dirs, a temp
//! workspace, and the mock server as its model provider.
#![allow(dead_code)]

use super::MockServer;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;
use tempfile::TempDir;

pub struct Sandbox {
    pub home: TempDir,
    pub workspace: TempDir,
    /// The binary's `TMPDIR`: whatever a killed squad leaves there goes with the test.
    pub tmp: TempDir,
}

impl Sandbox {
    pub fn new() -> Self {
        Self {
            home: tempfile::tempdir().unwrap(),
            workspace: tempfile::tempdir().unwrap(),
            tmp: tempfile::tempdir().unwrap(),
        }
    }

    pub fn ws(&self) -> &Path {
        self.workspace.path()
    }

    pub fn config_dir(&self) -> PathBuf {
        self.home.path().join("config")
    }

    pub fn data_dir(&self) -> PathBuf {
        self.home.path().join("data")
    }

    /// Writes `.squad/config.toml` in the workspace.
    pub fn workspace_config(&self, toml: &str) {
        let dir = self.ws().join(".squad");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("config.toml"), toml).unwrap();
    }

    pub fn write(&self, rel: &str, content: &str) {
        let p = self.ws().join(rel);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(p, content).unwrap();
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.ws().join(rel)).unwrap()
    }

    pub fn command(&self, mock: Option<&MockServer>) -> tokio::process::Command {
        self.command_under(&[], mock)
    }

    /// [`Sandbox::command`] run through `wrapper` (`setpriv …`, which then runs squad).
    pub fn command_under(
        &self,
        wrapper: &[&str],
        mock: Option<&MockServer>,
    ) -> tokio::process::Command {
        let mut cmd = match wrapper.split_first() {
            Some((program, args)) => {
                let mut cmd = tokio::process::Command::new(program);
                cmd.args(args).arg(squad_bin());
                cmd
            }
            None => tokio::process::Command::new(squad_bin()),
        };
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.home.path())
            .env("TMPDIR", self.tmp.path())
            .env("SQUAD_CONFIG_DIR", self.config_dir())
            .env("SQUAD_DATA_DIR", self.data_dir())
            // No test asks the machine's real ports for a local model server; the ones that
            // test discovery name their own.
            .env("SQUAD_LOCAL_PORTS", "")
            .env("SQUAD_LOG", "debug")
            .current_dir(self.ws())
            .kill_on_drop(true);
        if let Some(mock) = mock {
            cmd.env("OPENAI_BASE_URL", mock.base_url());
        }
        cmd
    }

    /// `squad exec ARGS…` with a time limit, so a hang fails the test instead of the suite.
    pub async fn exec(&self, mock: &MockServer, args: &[&str]) -> Run {
        let mut cmd = self.command(Some(mock));
        cmd.arg("exec").args(args);
        Run::from(run_with_timeout(cmd).await)
    }

    pub async fn run(&self, mock: Option<&MockServer>, args: &[&str]) -> Run {
        let mut cmd = self.command(mock);
        cmd.args(args);
        Run::from(run_with_timeout(cmd).await)
    }
}

/// The binary under test: this build's, or another build named by `SQUAD_TEST_BIN` (to see a
/// new test fail against an older commit without rebuilding the tests there).
pub fn squad_bin() -> PathBuf {
    std::env::var_os("SQUAD_TEST_BIN")
        .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_squad")), PathBuf::from)
}

pub async fn run_with_timeout(mut cmd: tokio::process::Command) -> Output {
    cmd.stdin(std::process::Stdio::null());
    match tokio::time::timeout(Duration::from_secs(60), cmd.output()).await {
        Ok(out) => out.unwrap(),
        Err(_) => panic!("squad did not finish within 60 s"),
    }
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(o: Output) -> Self {
        Self {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

impl Run {
    /// The JSON events of an `exec --json` run.
    pub fn events(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
            .collect()
    }

    pub fn assert_ok(&self) -> &Self {
        assert_eq!(
            self.code, 0,
            "squad failed.\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }
}

/// Events of one type.
pub fn of_type<'a>(events: &'a [Value], ty: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == ty).collect()
}

/// The history items of one kind (`tool_result`, `handoff`, …) among `item_added` events.
pub fn items_of_kind<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["type"] == "item_added" && e["item"]["kind"] == kind)
        .map(|e| &e["item"])
        .collect()
}

/// The `tool` messages a request carried, as (tool_call_id, content).
pub fn tool_messages(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap_or("").to_string(),
                content_text(&m["content"]),
            )
        })
        .collect()
}

/// A message's content as text (a string, or an array of text parts).
pub fn content_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// (role, text) of every message of a request.
pub fn transcript(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or("").to_string(),
                content_text(&m["content"]),
            )
        })
        .collect()
}

/// Runs git in `dir` with its identity in the environment (no global git configuration
/// is needed or touched); panics with its output when it fails. A run that met squad's
/// own git half way (a spare worktree being made in the background, whose admin files are
/// not all written yet; a lock file) is tried again, as squad's `Git` does: git itself
/// gives up at once.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let mut tries = 0;
    loop {
        let out = git_output(dir, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let met_squads_git = (stderr.contains(".lock") && stderr.contains("File exists"))
            || (stderr.contains("failed to read") && stderr.contains("/worktrees/"));
        if !out.status.success() && met_squads_git && tries < 20 {
            tries += 1;
            std::thread::sleep(std::time::Duration::from_millis(50));
            continue;
        }
        assert!(out.status.success(), "git {args:?} failed: {stderr}");
        return String::from_utf8_lossy(&out.stdout).into_owned();
    }
}

/// git in `dir` with its identity in the environment, whatever its exit code.
pub fn git_output(dir: &Path, args: &[&str]) -> Output {
    std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "Test User")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "Test User")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .env_remove("GIT_DIR")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_WORK_TREE")
        .output()
        .expect("git runs")
}
