//! Linux: the Landlock rule set, built in the parent, and the few system calls the child
//! makes on it between `fork` and `exec`.

use super::{Confined, NetCut, SandboxError};
use crate::config::SandboxMode;
use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, Ruleset, RulesetAttr, RulesetCreatedAttr, Scope,
    path_beneath_rules,
};
use std::collections::HashSet;
use std::ffi::CStr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// File rights are those of ABI 5 (execute, read, write, make, remove, refer, truncate,
/// device ioctls): what this kernel and the tests know. An older kernel enforces its part.
const FS_ABI: ABI = ABI::V5;
/// Devices ordinary tools write to.
const DEVICES: [&str; 4] = ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];

/// Landlock's ABI version, or `None` when the kernel has none enabled.
pub fn landlock_abi() -> Option<i32> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute, size 0 and the VERSION flag, the call reads and
    // writes no memory; it returns the ABI version or -1.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    i32::try_from(v).ok().filter(|v| *v >= 1)
}

/// Whether a child can enter a new user and network namespace: tried for real with
/// `/bin/sh -c :`, the way every command will be started.
pub fn user_namespaces_work() -> bool {
    let plan = ChildPlan {
        ruleset: None,
        namespace: Some(IdMaps::current()),
    };
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(":")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    plan.apply(&mut cmd);
    cmd.status().is_ok_and(|s| s.success())
}

/// The uid and gid map lines of the new user namespace: the same ids inside as outside,
/// so files keep their owners (git, ssh and others check them).
#[derive(Clone)]
struct IdMaps {
    uid: Vec<u8>,
    gid: Vec<u8>,
}

impl IdMaps {
    fn current() -> Self {
        // SAFETY: getuid and getgid cannot fail and touch no memory.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        Self {
            uid: format!("{uid} {uid} 1\n").into_bytes(),
            gid: format!("{gid} {gid} 1\n").into_bytes(),
        }
    }
}

/// What the child applies to itself; everything built before `fork`.
pub struct ChildPlan {
    ruleset: Option<Arc<OwnedFd>>,
    namespace: Option<IdMaps>,
}

impl ChildPlan {
    pub fn apply(&self, cmd: &mut std::process::Command) {
        let ruleset = self.ruleset.clone();
        let namespace = self.namespace.clone();
        let enter = move || {
            enter(
                ruleset.as_deref().map(AsRawFd::as_raw_fd),
                namespace.as_ref(),
            )
        };
        // SAFETY: `enter` only makes system calls (unshare, open, write, close, prctl,
        // landlock_restrict_self) on data prepared before fork: nothing allocates, locks
        // or touches state another thread may hold, as `pre_exec` requires.
        unsafe {
            cmd.pre_exec(enter);
        }
    }
}

/// In the child, between `fork` and `exec`.
fn enter(ruleset: Option<i32>, namespace: Option<&IdMaps>) -> std::io::Result<()> {
    if let Some(maps) = namespace {
        // SAFETY: unshare takes flags only.
        if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // Needed before an unprivileged process may write its gid map; absent on old kernels.
        let _ = write_proc(c"/proc/self/setgroups", b"deny");
        write_proc(c"/proc/self/uid_map", &maps.uid)?;
        write_proc(c"/proc/self/gid_map", &maps.gid)?;
    }
    if let Some(fd) = ruleset {
        // SAFETY: prctl with integer arguments; landlock_restrict_self on a rule set fd
        // this process owns, flags 0.
        unsafe {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

/// `open`, one `write`, `close`: async-signal-safe, no allocation.
fn write_proc(path: &CStr, data: &[u8]) -> std::io::Result<()> {
    // SAFETY: `path` is NUL-terminated; `data` outlives the calls; the fd is closed once.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let n = libc::write(fd, data.as_ptr().cast(), data.len());
        let err = std::io::Error::last_os_error();
        libc::close(fd);
        if n < 0 || n as usize != data.len() {
            return Err(err);
        }
    }
    Ok(())
}

/// The child's plan for `c` with `tmp` as its private temp dir.
pub fn plan(c: &Confined, tmp: &Path) -> Result<ChildPlan, SandboxError> {
    Ok(ChildPlan {
        ruleset: Some(Arc::new(ruleset(c, tmp)?)),
        namespace: (c.net == NetCut::Namespace).then(IdMaps::current),
    })
}

fn landlock_err(e: impl std::fmt::Display) -> SandboxError {
    SandboxError::Landlock(e.to_string())
}

/// The rule set: reads everywhere but the denied paths, writes in the writable ones, TCP
/// cut where the namespace cannot cut the network, signals to processes outside refused.
fn ruleset(c: &Confined, tmp: &Path) -> Result<OwnedFd, SandboxError> {
    let read = AccessFs::from_read(FS_ABI);
    let all = AccessFs::from_all(FS_ABI);
    let mut rules = Ruleset::default()
        .handle_access(all)
        .map_err(landlock_err)?;
    if c.net == NetCut::LandlockTcp {
        rules = rules
            .handle_access(AccessNet::from_all(ABI::V4))
            .map_err(landlock_err)?;
    }
    let mut created = rules
        .scope(Scope::from_all(ABI::V6))
        .map_err(landlock_err)?
        .create()
        .map_err(landlock_err)?;
    let (dirs_only, readable) = readable_paths(&c.deny_read);
    created = created
        .add_rules(path_beneath_rules(
            dirs_only,
            BitFlags::from(AccessFs::ReadDir),
        ))
        .map_err(landlock_err)?
        .add_rules(path_beneath_rules(readable, read))
        .map_err(landlock_err)?;
    let mut writable: Vec<PathBuf> = vec![tmp.to_path_buf()];
    match c.level.mode {
        SandboxMode::WorkspaceWrite => {
            writable.push(c.root.clone());
            writable.extend(c.writable.iter().cloned());
        }
        // The root stays readable even under a denied path (a worktree in the data dir).
        _ => {
            created = created
                .add_rules(path_beneath_rules([&c.root], read))
                .map_err(landlock_err)?;
        }
    }
    let device = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate;
    created = created
        .add_rules(path_beneath_rules(&writable, all))
        .map_err(landlock_err)?
        .add_rules(path_beneath_rules(DEVICES, device))
        .map_err(landlock_err)?;
    Option::<OwnedFd>::from(created)
        .ok_or_else(|| SandboxError::Unavailable("Landlock refused to make a rule set".into()))
}

/// What to grant reading: (`/` and the folders on the way to a denied path, listing only;
/// every other entry of those folders, fully). With nothing denied, `/` is readable.
pub(super) fn readable_paths(deny: &[PathBuf]) -> (Vec<PathBuf>, Vec<PathBuf>) {
    if deny.is_empty() {
        return (Vec::new(), vec![PathBuf::from("/")]);
    }
    let denied: HashSet<&Path> = deny.iter().map(PathBuf::as_path).collect();
    let mut on_the_way: HashSet<&Path> = HashSet::new();
    for d in deny {
        on_the_way.extend(d.ancestors().skip(1));
    }
    let mut folders: Vec<&Path> = on_the_way.iter().copied().collect();
    folders.sort();
    let mut readable = Vec::new();
    for folder in &folders {
        let Ok(entries) = std::fs::read_dir(folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if denied.contains(path.as_path()) || on_the_way.contains(path.as_path()) {
                continue;
            }
            // A rule follows symlinks: one leading into (or above) a denied path is skipped.
            let is_link = entry.file_type().is_ok_and(|t| t.is_symlink());
            if is_link {
                let Ok(target) = path.canonicalize() else {
                    continue;
                };
                if deny
                    .iter()
                    .any(|d| target.starts_with(d) || d.starts_with(&target))
                {
                    continue;
                }
            }
            readable.push(path);
        }
    }
    (
        folders.into_iter().map(Path::to_path_buf).collect(),
        readable,
    )
}
