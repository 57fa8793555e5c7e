//! Small helpers the bench binaries share: order statistics, process memory figures,
//! reaping a child with its resource usage, and the open-files limit.
#![allow(dead_code)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

/// Median, p95, min and max of a set of durations.
pub struct Stats {
    pub n: usize,
    pub median: Duration,
    pub p95: Duration,
    pub min: Duration,
    pub max: Duration,
}

impl Stats {
    /// `None` for an empty sample: a figure from nothing would be a made-up figure.
    pub fn of(samples: &[Duration]) -> Option<Self> {
        if samples.is_empty() {
            return None;
        }
        let mut s = samples.to_vec();
        s.sort();
        // Nearest-rank percentiles: always a value that was actually measured.
        let rank = |p: f64| {
            let r = (p * s.len() as f64).ceil() as usize;
            s[r.clamp(1, s.len()) - 1]
        };
        Some(Self {
            n: s.len(),
            median: rank(0.5),
            p95: rank(0.95),
            min: s[0],
            max: s[s.len() - 1],
        })
    }
}

/// Milliseconds with microsecond resolution, for printing.
pub fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

/// A `Kind: <n> kB` line of `/proc/<pid>/status` (VmRSS, VmHWM, ...), in kB.
pub fn proc_status_kb(pid: u32, field: &str) -> Option<u64> {
    status_kb(
        &Path::new("/proc").join(pid.to_string()).join("status"),
        field,
    )
}

/// The same for this process.
pub fn self_status_kb(field: &str) -> Option<u64> {
    status_kb(Path::new("/proc/self/status"), field)
}

fn status_kb(path: &Path, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(field)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// What `wait4` reports about a finished child.
#[derive(Clone, Copy, Debug)]
pub struct Reaped {
    /// Exit code, or `None` if it was killed by a signal.
    pub code: Option<i32>,
    /// Peak resident set size (`ru_maxrss`), in kB.
    pub max_rss_kb: u64,
    /// CPU time the child used, user and system.
    pub user: Duration,
    pub sys: Duration,
    /// Through the launcher: its own peak RSS in kB, the least `max_rss_kb` can read.
    pub floor_kb: u64,
}

/// Waits for `child` with `wait4`, which, unlike `Child::wait`, also returns the child's
/// own resource usage (not mixed with other children's, as `RUSAGE_CHILDREN` would be).
fn wait4(child: Child) -> Reaped {
    let pid = child.id() as libc::pid_t;
    // `child` is not waited on by std: we reap it here, once. Its stdio must not be
    // pipes (they would leak); the callers use files or inherit.
    std::mem::forget(child);
    let mut status: libc::c_int = 0;
    // SAFETY: plain syscall on our own child; `rusage` is a valid out-pointer.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = loop {
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == -1 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        break r;
    };
    assert_eq!(r, pid, "wait4 failed: {}", std::io::Error::last_os_error());
    let code = if libc::WIFEXITED(status) {
        Some(libc::WEXITSTATUS(status))
    } else {
        None
    };
    Reaped {
        code,
        // Linux reports ru_maxrss in kilobytes.
        max_rss_kb: usage.ru_maxrss as u64,
        user: timeval(usage.ru_utime),
        sys: timeval(usage.ru_stime),
        floor_kb: 0,
    }
}

/// Set (to a report path) when the bench binary runs as the small launcher.
const LAUNCHER_ENV: &str = "SQUAD_BENCH_LAUNCHER_REPORT";

/// Why a launcher: Linux charges a child's `ru_maxrss` with the peak RSS of the process
/// that spawned it (std spawns with vfork, and exec records the old address space's
/// high-water mark). A bench process holding the mock's request records is large, so
/// its own peak would hide squad's. The launcher is this bench binary started afresh,
/// a few MB in size: it spawns squad, reaps it with `wait4` and writes the figures down.
///
/// Call first thing in `main`; returns only when this process is not a launcher.
pub fn launcher_main_if_asked() {
    let Some(report) = std::env::var_os(LAUNCHER_ENV) else {
        return;
    };
    let report = PathBuf::from(report);
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let child = Command::new(&args[0])
        .args(&args[1..])
        .env_remove(LAUNCHER_ENV)
        .spawn()
        .unwrap_or_else(|e| panic!("launcher: cannot start {:?}: {e}", args[0]));
    std::fs::write(report.with_extension("pid"), child.id().to_string()).unwrap();
    let floor = self_status_kb("VmHWM").unwrap_or(0);
    let r = wait4(child);
    let line = format!(
        "{} {} {} {} {}",
        r.code.unwrap_or(-1),
        r.max_rss_kb,
        r.user.as_micros(),
        r.sys.as_micros(),
        floor
    );
    std::fs::write(&report, line).unwrap();
    std::process::exit(0);
}

/// A command that runs `program` through the launcher. Configure it (args, env, cwd,
/// stdio) as the program's own: the launcher passes all of it on.
pub struct Measured {
    pub cmd: Command,
    report: PathBuf,
}

impl Measured {
    /// `scratch` holds the report files.
    pub fn new(program: &str, scratch: &Path) -> Self {
        let report = scratch.join("launcher-report.txt");
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.arg(program);
        Self { cmd, report }
    }

    /// squad's environment for a bench run: only PATH from outside, its own config and
    /// data dirs under `home`, the mock as provider, `ws` as workspace, output to files.
    pub fn sandboxed(
        &mut self,
        home: &Path,
        ws: &Path,
        base_url: &str,
        out: &Path,
        err: &Path,
    ) -> &mut Command {
        self.cmd
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", home)
            .env("SQUAD_CONFIG_DIR", home.join("config"))
            .env("SQUAD_DATA_DIR", home.join("data"))
            .env("OPENAI_BASE_URL", base_url)
            .current_dir(ws)
            .stdin(std::process::Stdio::null())
            .stdout(std::fs::File::create(out).unwrap())
            .stderr(std::fs::File::create(err).unwrap())
    }

    /// Starts it; the env must be set up by then (the launcher variable is added last,
    /// so `env_clear` on `cmd` does not remove it).
    pub fn spawn(mut self) -> Running {
        self.cmd.env(LAUNCHER_ENV, &self.report);
        let child = self.cmd.spawn().unwrap();
        Running {
            child,
            report: self.report,
        }
    }
}

pub struct Running {
    child: Child,
    report: PathBuf,
}

impl Running {
    /// The program's pid (not the launcher's), once it has started.
    pub fn pid_file(&self) -> PathBuf {
        self.report.with_extension("pid")
    }

    /// Waits for the launcher and returns the program's figures.
    pub fn wait(self) -> Reaped {
        let launcher = wait4(self.child);
        assert_eq!(launcher.code, Some(0), "the launcher failed");
        let text = std::fs::read_to_string(&self.report).unwrap();
        let f: Vec<i64> = text
            .split_whitespace()
            .map(|x| x.parse().unwrap())
            .collect();
        let max_rss_kb = f[1] as u64;
        // The figure is only squad's if squad outgrew the launcher's own peak.
        assert!(
            max_rss_kb > f[4] as u64,
            "peak RSS {max_rss_kb} kB is not above the launcher's own {} kB",
            f[4]
        );
        Reaped {
            code: (f[0] >= 0).then_some(f[0] as i32),
            max_rss_kb,
            user: Duration::from_micros(f[2] as u64),
            sys: Duration::from_micros(f[3] as u64),
            floor_kb: f[4] as u64,
        }
    }
}

/// Reads a pid written by the launcher (`None` until it is there).
pub fn read_pid(path: &Path) -> Option<u32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn timeval(t: libc::timeval) -> Duration {
    Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
}

/// CPU time (user + system) this process has used so far.
pub fn self_cpu() -> Duration {
    // SAFETY: getrusage with a valid out-pointer.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    timeval(usage.ru_utime) + timeval(usage.ru_stime)
}

/// CPU time (user + system) of this process's children that have ended and been waited for.
pub fn children_cpu() -> Duration {
    // SAFETY: getrusage with a valid out-pointer.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    timeval(usage.ru_utime) + timeval(usage.ru_stime)
}

/// Raises the soft open-files limit to at least `want` (up to the hard limit), since
/// every in-flight model request holds a socket. Returns the soft limit in force.
pub fn raise_nofile(want: u64) -> u64 {
    // SAFETY: getrlimit/setrlimit with a valid struct.
    let mut lim: libc::rlimit = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return 0;
    }
    if (lim.rlim_cur as u64) < want {
        let new = libc::rlimit {
            rlim_cur: (want as libc::rlim_t).min(lim.rlim_max),
            rlim_max: lim.rlim_max,
        };
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &new) } == 0 {
            lim = new;
        }
    }
    lim.rlim_cur as u64
}

/// Prints a PASS/MISS line against a target, so a missed target is plain to see.
pub fn verdict(name: &str, value: f64, target: f64, unit: &str) {
    let mark = if value < target { "PASS" } else { "MISS" };
    println!("  [{mark}] {name}: {value:.3} {unit} (target < {target} {unit})");
}

/// Lines (events) and bytes of every session log (`*.jsonl`) under `dir`.
pub fn session_logs(dir: &Path) -> (u64, u64) {
    let (mut lines, mut bytes) = (0, 0);
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                let text = std::fs::read(&path).unwrap_or_default();
                lines += text.iter().filter(|b| **b == b'\n').count() as u64;
                bytes += text.len() as u64;
            }
        }
    }
    (lines, bytes)
}
