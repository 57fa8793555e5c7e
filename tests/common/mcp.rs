//! The real MCP servers the tests run against, installed from their registries by
//! `.ci/mcp-servers` (which `.ci/run` calls first; here it runs once per test binary if
//! they are not installed yet). A test skips, with one line, only when the runtime the
//! server needs (`node`, `python3`) is missing.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Where `.ci/mcp-servers` installs, unless `SQUAD_MCP_SERVERS_DIR` says otherwise.
fn servers_dir() -> &'static Option<PathBuf> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/mcp-servers");
        let out = Command::new("bash").arg(&script).output().ok()?;
        assert!(
            out.status.success(),
            "{} failed:\n{}",
            script.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
        Some(PathBuf::from(dir))
    })
}

fn on_path(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `node` and the everything server's `dist/index.js`, or `None` (with the skip line
/// printed) when node is missing.
pub fn everything(test: &str) -> Option<(String, PathBuf)> {
    if !on_path("node") {
        eprintln!("skipped {test}: node is not installed");
        return None;
    }
    let dir = servers_dir()
        .as_ref()
        .expect("the MCP servers are installed");
    let index = dir.join("node/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(index.exists(), "{} is missing", index.display());
    Some(("node".to_string(), index))
}

/// The `mcp-server-git` program, or `None` (with the skip line printed) when python3 is
/// missing.
pub fn git_server(test: &str) -> Option<PathBuf> {
    if !on_path("python3") {
        eprintln!("skipped {test}: python3 is not installed");
        return None;
    }
    let dir = servers_dir()
        .as_ref()
        .expect("the MCP servers are installed");
    let program = dir.join("venv/bin/mcp-server-git");
    assert!(program.exists(), "{} is missing", program.display());
    Some(program)
}

/// A `[mcp_servers.everything]` table for a config file.
pub fn everything_toml(index: &Path, extra: &str) -> String {
    format!(
        "[mcp_servers.everything]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n{extra}\n",
        index.display().to_string()
    )
}

/// A `[mcp_servers.git]` table for a config file.
pub fn git_toml(program: &Path, extra: &str) -> String {
    format!(
        "[mcp_servers.git]\ncommand = {:?}\n{extra}\n",
        program.display().to_string()
    )
}

/// Live processes (not zombies) whose environment holds `marker`.
pub fn processes_marked(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        let marked = environ.split(|b| *b == 0).any(|kv| kv == marker.as_bytes());
        let zombie = std::fs::read_to_string(entry.path().join("stat"))
            .ok()
            .and_then(|s| {
                s.rsplit(')')
                    .next()
                    .map(|r| r.trim_start().starts_with('Z'))
            })
            .unwrap_or(false);
        if marked && !zombie {
            found.push(pid);
        }
    }
    found
}
