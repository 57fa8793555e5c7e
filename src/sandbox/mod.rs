//! The OS sandbox agents' commands run in (`run_command`, `run_tests`, verification
//! commands, `squad sandbox -- CMD`).
//!
//! On Linux, files go through **Landlock** and the network through an unprivileged **user
//! and network namespace** (or, where user namespaces are off, Landlock's TCP rules, ABI 4+).
//! Landlock needs no root, no setuid helper and no daemon, stacks with whatever the system
//! already enforces, and cannot be lifted by the sandboxed process; the `landlock` crate is
//! the Landlock maintainers' own, handles each kernel's ABI (best effort: an older kernel
//! enforces what it knows) and builds rules from paths. The namespace is made with two
//! `libc` calls, so no crate beyond `libc` (already a dependency) is needed for it. A new
//! network namespace has only a loopback that is down: nothing, 127.0.0.1 included, is
//! reachable, UDP and DNS too, which Landlock's TCP rules alone would not cover.
//!
//! **Where it is applied.** The parent builds everything (the temp dir, the Landlock rule
//! set as a file descriptor, the uid/gid map lines) before `fork`; the child, in
//! `pre_exec`, only makes raw system calls on what was prepared: `unshare`, `open`/`write`
//! of its own uid and gid maps, `prctl(PR_SET_NO_NEW_PRIVS)` and
//! `landlock_restrict_self`. Those are async-signal-safe, so nothing that allocates or takes
//! a lock runs between `fork` and `exec` in our multi-threaded process. This is also why we
//! chose it over re-executing squad as a launcher: it works the same from any process that
//! links the library (the test harnesses, benches), and costs no second `exec` per command.
//!
//! **Reads** are everywhere but `deny_read`. Landlock only allows, so the rules grant
//! reading every entry beside each folder on the way from `/` to a denied path, and never
//! the denied path itself; listing folders stays allowed everywhere (names in a denied
//! folder can be listed, its files cannot be read). A denied folder reached another way (a
//! bind mount, a hard link) is not covered; a symlink to one is skipped.

mod blocked;
#[cfg(target_os = "linux")]
mod linux;
mod probe;
mod run;
mod tmp;

pub use blocked::blocked_note;
pub use probe::{NetCut, Support, UNAVAILABLE_ENV, support};
pub use run::run_one;

use crate::config::{RoleSandbox, SandboxConfig, SandboxMode};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What one agent's commands may do, after its supervisors' and roles' narrowing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Level {
    pub mode: SandboxMode,
    /// Network allowed (always, when `mode` is off).
    pub network: bool,
}

impl Level {
    pub fn of_session(config: &SandboxConfig) -> Self {
        Self {
            mode: config.mode,
            network: config.network,
        }
    }

    /// This level under a role's `[sandbox]`: never wider.
    pub fn narrowed(self, role: &RoleSandbox) -> Self {
        Self {
            mode: self.mode.min(role.mode.unwrap_or(self.mode)),
            network: self.network && role.network.unwrap_or(true),
        }
    }

    /// `workspace-write`, `read-only +net`, `off`: what the front ends show.
    pub fn label(self) -> String {
        match self.mode {
            SandboxMode::Off => "off".to_string(),
            mode if self.network => format!("{} +net", mode.as_str()),
            mode => mode.as_str().to_string(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("cannot prepare the sandbox: {what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot prepare the sandbox: Landlock: {0}")]
    Landlock(String),
    #[error("the sandbox is not available here: {0}")]
    Unavailable(String),
}

/// The session's sandbox: what the user asked for, and what this machine can give.
#[derive(Debug)]
pub struct Sandbox {
    level: Level,
    support: Support,
    writable: Vec<PathBuf>,
    deny_read: Vec<PathBuf>,
}

impl Sandbox {
    /// `data_dir`: squad's own, never readable by a command.
    pub fn new(config: &SandboxConfig, data_dir: Option<&Path>, support: Support) -> Self {
        let home = home_dir();
        let expand = |p: &String| expand_home(p, home.as_deref());
        let mut deny_read: Vec<PathBuf> = config.deny_read.iter().filter_map(expand).collect();
        deny_read.extend(data_dir.map(Path::to_path_buf));
        Self {
            level: Level::of_session(config),
            support,
            writable: config.writable.iter().filter_map(expand).collect(),
            deny_read: deny_read.into_iter().map(resolved).collect(),
        }
    }

    /// The session's level (config and `--sandbox`).
    pub fn level(&self) -> Level {
        self.level
    }

    pub fn support(&self) -> &Support {
        &self.support
    }

    /// Whether commands at `level` run confined here; `false` for `off` and where no
    /// sandbox can be had (then every command is asked about).
    pub fn confines(&self, level: Level) -> bool {
        level.mode != SandboxMode::Off && self.support.available()
    }

    /// The confinement of a command of an agent at `level` whose root is `root`; `None`
    /// when it runs unconfined (see [`Sandbox::confines`]).
    pub fn for_agent(&self, level: Level, root: &Path) -> Option<Arc<Confined>> {
        self.for_agent_with(level, root, Vec::new())
    }

    /// [`Sandbox::for_agent`], with `also` writable under `workspace-write` besides the
    /// root (a worker's own worktree's git metadata, so it can commit there).
    pub fn for_agent_with(
        &self,
        level: Level,
        root: &Path,
        also: Vec<PathBuf>,
    ) -> Option<Arc<Confined>> {
        if !self.confines(level) {
            return None;
        }
        let net = if level.network {
            NetCut::None
        } else {
            self.support.net_cut
        };
        Some(Arc::new(Confined {
            level,
            root: root.to_path_buf(),
            writable: match level.mode {
                SandboxMode::WorkspaceWrite => self.writable.iter().cloned().chain(also).collect(),
                _ => Vec::new(),
            },
            deny_read: self.deny_read.clone(),
            net,
        }))
    }

    /// One line on what commands get, for the start of a session and `squad doctor`.
    pub fn describe(&self, level: Level) -> String {
        if level.mode == SandboxMode::Off {
            return "sandbox off: commands run with all of your rights".to_string();
        }
        if let Some(why) = self.support.unavailable.as_deref() {
            return format!("sandbox unavailable: {why}");
        }
        let writes = match level.mode {
            SandboxMode::ReadOnly => "writes only to $TMPDIR".to_string(),
            _ if self.writable.is_empty() => "writes only in the agent's root and $TMPDIR".into(),
            _ => format!(
                "writes only in the agent's root, $TMPDIR and {}",
                join_paths(&self.writable)
            ),
        };
        let network = match (level.network, self.support.net_cut) {
            (true, _) => "network on",
            (false, NetCut::Namespace) => "network off",
            (false, NetCut::LandlockTcp) => "TCP off (UDP stays on: no user namespaces here)",
            (false, NetCut::None) => "network ON: this kernel can cut neither",
        };
        format!(
            "sandbox {} ({}): {writes}; reads all but {}; {network}",
            level.mode.as_str(),
            self.support.mechanism(),
            join_paths(&self.deny_read),
        )
    }
}

/// One command's confinement, decided per agent and call.
#[derive(Debug, Clone)]
pub struct Confined {
    pub level: Level,
    /// The agent's root: writable in `workspace-write`, readable always.
    pub root: PathBuf,
    pub writable: Vec<PathBuf>,
    pub deny_read: Vec<PathBuf>,
    net: NetCut,
}

/// A command's sandbox made ready: its private temp dir (removed when dropped) and what
/// the child applies to itself before `exec`.
pub struct Jail {
    tmp: tmp::PrivateDir,
    #[cfg(target_os = "linux")]
    child: linux::ChildPlan,
}

impl Confined {
    /// Builds the rules (blocking: it reads a few folders and opens the rule paths).
    pub fn prepare(&self) -> Result<Jail, SandboxError> {
        let tmp = tmp::private_dir().map_err(|source| SandboxError::Io {
            what: "a private temp dir".into(),
            source,
        })?;
        #[cfg(target_os = "linux")]
        {
            let child = linux::plan(self, tmp.path())?;
            Ok(Jail { tmp, child })
        }
        #[cfg(not(target_os = "linux"))]
        {
            drop(tmp);
            Err(SandboxError::Unavailable("not Linux".into()))
        }
    }
}

impl Jail {
    /// The private temp dir (`TMPDIR` of the command).
    pub fn tmp(&self) -> &Path {
        self.tmp.path()
    }

    /// Makes `cmd` start inside the sandbox: `TMPDIR` and the child's confinement.
    pub fn apply(&self, cmd: &mut std::process::Command) {
        for var in ["TMPDIR", "TMP", "TEMP"] {
            cmd.env(var, self.tmp.path());
        }
        #[cfg(target_os = "linux")]
        self.child.apply(cmd);
    }
}

fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .or_else(|| directories::BaseDirs::new().map(|b| b.home_dir().to_path_buf()))
}

/// `~/x` under the home directory; other relative paths are dropped (they would depend on
/// where squad was started).
fn expand_home(path: &str, home: Option<&Path>) -> Option<PathBuf> {
    let path = path.trim();
    if path == "~" {
        return home.map(Path::to_path_buf);
    }
    if let Some(rest) = path.strip_prefix("~/") {
        return home.map(|h| h.join(rest));
    }
    let p = PathBuf::from(path);
    p.is_absolute().then_some(p)
}

/// The real path where it exists (rules follow symlinks), else the path as given.
fn resolved(path: PathBuf) -> PathBuf {
    path.canonicalize().unwrap_or(path)
}

fn join_paths(paths: &[PathBuf]) -> String {
    let home = home_dir();
    paths
        .iter()
        .map(
            |p| match home.as_deref().and_then(|h| p.strip_prefix(h).ok()) {
                Some(rest) => format!("~/{}", rest.display()),
                None => p.display().to_string(),
            },
        )
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests;
