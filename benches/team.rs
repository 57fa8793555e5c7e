//! `cargo bench --bench team`: one supervisor, 1,000 and 10,000 workers, a slow model.
//!
//! Runs the real release binary (`squad exec --approval auto`) against the mock server,
//! which lives in this process on a runtime of its own and answers every request after
//! 200 ms. Measuring the binary keeps squad's memory apart from the mock's, and its peak
//! RSS comes exactly from `wait4`.
//!
//! The script, driven by the mock's responder (it looks at each request):
//! - supervisor, first request: N `spawn_agent` calls (role `agentic_coder`);
//! - supervisor, after the spawn results: one `wait_for_agents` call;
//! - every worker (its system prompt says it is one): a `return_results` call;
//! - supervisor, after the wait result: the final text.
//!
//! Targets (first request to the end of the final answer; the floor is three model
//! latencies, 0.6 s): 1,000 workers <= 0.7 s; 10,000 workers <= 1.5 s and <= 30 KB per idle
//! agent, from the child's RSS with 0 and with N idle completed workers.
//!
//! The 200-implementer scale runs twice: in a plain folder and in a git repository (worktree
//! isolation on, the default). Implementers may write, but these return without writing, so
//! isolation must cost them nothing: under 1.5 s as in the plain folder, and no git process
//! beyond the session's few one-time ones. squad runs with a `git` wrapper first on its PATH
//! that logs every call; the bench prints the count and what they were.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "team/cpu_per_request.rs"]
mod cpu_per_request;
#[path = "../tests/common/mock_server.rs"]
mod mock_server;
mod support;

use mock_server::{MockResponse, MockServer, MockToolCall, RecordedRequest};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::{ms, verdict};

/// One scale of the bench.
#[derive(Clone, Copy)]
struct Scale {
    workers: usize,
    runs: usize,
    /// Wall-time target, seconds.
    target: Option<f64>,
    role: &'static str,
    /// The workspace is a git repository (worktree isolation applies).
    git: bool,
    /// Each worker writes one file of its own before it returns (so each gets a worktree,
    /// and its change is merged).
    writes: bool,
}

const SCALES: [Scale; 5] = [
    Scale {
        workers: 200,
        runs: 3,
        target: Some(1.5),
        role: "implementer",
        git: false,
        writes: false,
    },
    Scale {
        workers: 200,
        runs: 3,
        target: Some(1.5),
        role: "implementer",
        git: true,
        writes: false,
    },
    Scale {
        workers: 20,
        runs: 3,
        target: None,
        role: "implementer",
        git: true,
        writes: true,
    },
    Scale {
        workers: 1000,
        runs: 3,
        target: Some(0.7),
        role: "agentic_coder",
        git: false,
        writes: false,
    },
    Scale {
        workers: 10_000,
        runs: 2,
        target: Some(1.5),
        role: "agentic_coder",
        git: false,
        writes: false,
    },
];
/// git processes a session may start once (finding the repository, its version), and the
/// one base the workers spawned together share (a snapshot: `rev-parse HEAD`, `add`,
/// `write-tree`, `commit-tree`; issue 34); none may be per worker for workers that do not
/// write.
const SESSION_GIT_CALLS: usize = 5 + 4;
/// Files committed in the git scale's repository.
const REPO_FILES: usize = 1000;
/// The scale the heap diagnosis runs at.
const DIAGNOSIS_WORKERS: usize = 1000;
/// Per idle agent, at the largest scale.
const PER_AGENT_TARGET_KB: f64 = 30.0;
const LATENCY: Duration = Duration::from_millis(200);
/// How long after a supervisor request arrives its RSS is read: squad is then idle,
/// waiting for the (200 ms) answer, and the request it just sent is gone from its buffers.
const SAMPLE_AFTER: Duration = Duration::from_millis(120);
const FINAL_TEXT: &str = "All workers reported success.";
const WORKER_MARK: &str = "You are a worker (role";

fn main() {
    support::launcher_main_if_asked();
    // SQUAD_BENCH_BIN=path measures another build (e.g. an older commit) on the same mock.
    let bin = std::env::var("SQUAD_BENCH_BIN").ok();
    let squad = bin.as_deref().unwrap_or(env!("CARGO_BIN_EXE_squad"));
    // N sockets in the mock (this process) and N in squad (the child inherits this
    // limit), plus files and pipes.
    let most = SCALES.iter().map(|s| s.workers).max().unwrap_or(0) as u64;
    let nofile = support::raise_nofile(most + 4096);
    println!("squad binary: {squad}");
    println!("open-files soft limit: {nofile} (raised when the hard limit allows)");
    let wrap: Vec<String> = std::env::var("SQUAD_BENCH_WRAP")
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect();
    if !wrap.is_empty() {
        println!(
            "SQUAD_BENCH_WRAP: squad runs under `{}`; memory figures are the wrapper's, not squad's",
            wrap.join(" ")
        );
    }
    let mock_rt = tokio::runtime::Builder::new_multi_thread()
        .thread_name("mock")
        .enable_all()
        .build()
        .unwrap();

    // SQUAD_BENCH_WORKERS=N runs one scale once (for profiling with SQUAD_BENCH_WRAP);
    // SQUAD_BENCH_PLACE=git (or plain) only the scales in a git repository (or not).
    let only: Option<usize> = std::env::var("SQUAD_BENCH_WORKERS")
        .ok()
        .and_then(|v| v.parse().ok());
    if cpu_section(squad, &wrap, only) {
        return;
    }
    let place = std::env::var("SQUAD_BENCH_PLACE").ok();
    let real_git = find_git();
    for scale in SCALES {
        let Scale {
            workers,
            runs,
            target,
            role,
            git,
            writes,
        } = scale;
        if place.as_deref().is_some_and(|p| (p == "git") != git) {
            continue;
        }
        let (workers, runs) = match only {
            Some(n) if n == workers => (n, 1),
            Some(_) => continue,
            None => (workers, runs),
        };
        let scale = Scale {
            workers,
            runs,
            ..scale
        };
        if nofile < workers as u64 + 200 {
            println!(
                "\n== {workers} workers: skipped, the open-files limit {nofile} is too low for {workers} concurrent requests"
            );
            continue;
        }
        let place = if git {
            format!("a git repository of {REPO_FILES} files (worktree isolation)")
        } else {
            "a plain folder".to_string()
        };
        let what = if writes {
            ", each writing one file (a worktree each, then a merge)"
        } else {
            ""
        };
        println!(
            "\n== 1 supervisor + {workers} workers ({role}) in {place}{what}, mock latency {} per response, binary `squad exec`",
            ms(LATENCY)
        );
        let mut results = Vec::new();
        for run in 1..=runs {
            // A fresh mock per run, so its records hold one run only.
            let mock = mock_rt.block_on(MockServer::start());
            let r = team_run(squad, &mock, &wrap, false, scale, real_git.as_deref());
            r.print(run);
            results.push(r);
        }
        let mut walls: Vec<Duration> = results.iter().map(|r| r.wall).collect();
        walls.sort();
        let mut per_agent: Vec<f64> = results.iter().map(|r| r.per_agent_kb()).collect();
        per_agent.sort_by(f64::total_cmp);
        let peak = results.iter().map(|r| r.peak_kb).max().unwrap();
        println!("\n   summary over {runs} runs of {workers} workers:");
        println!(
            "   wall first request -> final answer: median {}, min {}, max {}",
            ms(walls[runs / 2]),
            ms(walls[0]),
            ms(walls[runs - 1])
        );
        println!("   peak RSS (max of runs): {:.1} MB", peak as f64 / 1024.0);
        println!(
            "   RSS per idle agent (incl. history): median {:.1} KB",
            per_agent[runs / 2]
        );
        match target {
            Some(target) => verdict(
                &format!("{workers} workers: wall time, median"),
                walls[runs / 2].as_secs_f64(),
                target,
                "s",
            ),
            None => println!("   (no wall-time target: merges run one at a time)"),
        }
        if wrap.is_empty() && workers == most as usize {
            verdict(
                &format!("{workers} workers: RSS per idle agent (incl. history), median"),
                per_agent[runs / 2],
                PER_AGENT_TARGET_KB,
                "KB",
            );
        }
        if let Some(calls) = results
            .iter()
            .filter_map(|r| r.git_calls.as_ref())
            .max_by_key(|c| c.len())
        {
            let kinds = git_call_kinds(calls);
            println!(
                "   git processes squad started (most of {runs} runs): {} ({:.2} per worker){}",
                calls.len(),
                calls.len() as f64 / workers as f64,
                if kinds.is_empty() {
                    String::new()
                } else {
                    format!(": {kinds}")
                }
            );
            if git && !writes {
                verdict(
                    &format!(
                        "{workers} workers that do not write: git processes (the session's one-time ones and their one base)"
                    ),
                    calls.len() as f64,
                    SESSION_GIT_CALLS as f64 + 1.0,
                    "processes",
                );
            }
        }
    }
    if wrap.is_empty() && place.is_none() {
        let scale = SCALES
            .iter()
            .copied()
            .find(|s| s.workers == DIAGNOSIS_WORKERS)
            .expect("the diagnosis scale");
        heap_diagnosis(squad, &mock_rt, scale, real_git.as_deref());
    }
}

/// squad's CPU per model request, unless one scale was asked for. Returns whether that
/// was all that was asked for (`SQUAD_BENCH_CPU=only`).
fn cpu_section(squad: &str, wrap: &[String], only: Option<usize>) -> bool {
    let cpu_only = std::env::var("SQUAD_BENCH_CPU").is_ok_and(|v| v == "only");
    if only.is_none() || cpu_only {
        cpu_per_request::run(squad, wrap);
    }
    cpu_only
}

/// RSS counts what the allocator keeps after the 1,000-request peak as well as what is
/// live. One more run asks glibc itself (`malloc_stats()`, called through gdb at the
/// same two moments) how many bytes are in use. gdb stops squad while it is attached,
/// so this run's times are not reported. Skipped without gdb or without ptrace rights.
fn heap_diagnosis(
    squad: &str,
    mock_rt: &tokio::runtime::Runtime,
    scale: Scale,
    real_git: Option<&Path>,
) {
    let workers = scale.workers;
    println!("\n== diagnosis: live heap (glibc malloc_stats via gdb) at the same two moments");
    let gdb = Command::new("gdb")
        .arg("--version")
        .stdout(Stdio::null())
        .status();
    if !gdb.is_ok_and(|s| s.success()) {
        println!("   skipped: gdb not found");
        return;
    }
    let mock = mock_rt.block_on(MockServer::start());
    let r = team_run(squad, &mock, &[], true, scale, real_git);
    let (Some(before), Some(idle)) = (r.heap_before, r.heap_idle) else {
        println!("   skipped: malloc_stats gave no figures (ptrace not allowed?)");
        return;
    };
    let per_agent = idle.in_use.saturating_sub(before.in_use) as f64 / 1024.0 / workers as f64;
    println!(
        "   malloc in use:     before spawning {:.1} MB, with {workers} idle workers {:.1} MB -> {per_agent:.1} KB per idle agent",
        mb(before.in_use),
        mb(idle.in_use)
    );
    println!(
        "   malloc from the OS: before spawning {:.1} MB, with {workers} idle workers {:.1} MB -> {:.1} MB held but free",
        mb(before.system),
        mb(idle.system),
        mb(idle.system.saturating_sub(idle.in_use))
    );
    println!(
        "   RSS in this run:   before {:.1} MB, idle {:.1} MB",
        r.rss_before_kb as f64 / 1024.0,
        r.rss_idle_kb as f64 / 1024.0
    );
    verdict(
        "live heap per idle agent (incl. history)",
        per_agent,
        100.0,
        "KB",
    );
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1024.0 / 1024.0
}

/// One `Total` block of glibc's `malloc_stats()` output.
#[derive(Clone, Copy, Debug)]
struct MallocTotal {
    system: u64,
    in_use: u64,
}

/// The `Total (incl. mmap)` blocks in `text`, in order.
fn malloc_totals(text: &str) -> Vec<MallocTotal> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(l) = lines.next() {
        if !l.starts_with("Total (incl. mmap):") {
            continue;
        }
        let mut num = |key: &str| {
            lines
                .next()
                .filter(|l| l.trim_start().starts_with(key))
                .and_then(|l| l.split('=').nth(1))
                .and_then(|v| v.trim().parse().ok())
        };
        if let (Some(system), Some(in_use)) = (num("system bytes"), num("in use bytes")) {
            out.push(MallocTotal { system, in_use });
        }
    }
    out
}

struct RunResult {
    workers: usize,
    wall: Duration,
    exit: Duration,
    peak_kb: u64,
    rss_before_kb: u64,
    rss_idle_kb: u64,
    fds_before: u64,
    fds_idle: u64,
    /// Text kept in histories by the run (workers' and the supervisor's growth), bytes.
    history_bytes: u64,
    /// The session log squad wrote: lines (events) and bytes.
    log_lines: u64,
    log_bytes: u64,
    timeline: Vec<(&'static str, Duration)>,
    child_cpu: Duration,
    bench_cpu: Duration,
    heap_before: Option<MallocTotal>,
    heap_idle: Option<MallocTotal>,
    /// Every git process squad started (its arguments), when a `git` was found to wrap.
    git_calls: Option<Vec<String>>,
}

impl RunResult {
    fn per_agent_kb(&self) -> f64 {
        self.rss_idle_kb.saturating_sub(self.rss_before_kb) as f64 / self.workers as f64
    }

    fn print(&self, run: usize) {
        let workers = self.workers;
        println!("\n   run {run}:");
        for (what, at) in &self.timeline {
            println!("     {:>12}  {what}", ms(*at));
        }
        println!(
            "     wall first request -> final answer {} (process start -> exit {})",
            ms(self.wall),
            ms(self.exit)
        );
        println!(
            "     CPU: squad {}, bench process (mostly the mock) {}",
            ms(self.child_cpu),
            ms(self.bench_cpu)
        );
        println!(
            "     squad CPU per model request over the run: {} ({} requests)",
            ms(self.child_cpu / (workers as u32 + 3)),
            workers + 3
        );
        println!(
            "     peak RSS {:.1} MB; RSS before spawning {:.1} MB, with {workers} idle workers {:.1} MB",
            self.peak_kb as f64 / 1024.0,
            self.rss_before_kb as f64 / 1024.0,
            self.rss_idle_kb as f64 / 1024.0
        );
        println!(
            "     open file descriptors: {} before spawning, {} with {workers} idle workers",
            self.fds_before, self.fds_idle
        );
        println!(
            "     session log: {} events, {:.1} MB ({:.0} bytes per worker)",
            self.log_lines,
            self.log_bytes as f64 / 1024.0 / 1024.0,
            self.log_bytes as f64 / workers as f64
        );
        let hist_kb = self.history_bytes as f64 / 1024.0 / workers as f64;
        println!(
            "     per idle agent: {:.1} KB RSS, of which ~{:.1} KB is history text (the worker's own and its share of the supervisor's) -> ~{:.1} KB beyond history",
            self.per_agent_kb(),
            hist_kb,
            self.per_agent_kb() - hist_kb
        );
    }
}

/// One run. `wrap`: a profiler command squad runs under (SQUAD_BENCH_WRAP); `heap`:
/// also call `malloc_stats()` in squad through gdb at the two sampling moments.
fn team_run(
    squad: &str,
    mock: &MockServer,
    wrap: &[String],
    heap: bool,
    scale: Scale,
    real_git: Option<&Path>,
) -> RunResult {
    let workers = scale.workers;
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join(".squad")).unwrap();
    std::fs::write(
        ws.path().join(".squad/config.toml"),
        format!(
            // The wait result holds every worker's result: not cut for the history.
            "[limits]\nmax_concurrent_requests = {workers}\nmax_live_agents = {}\nmax_depth = 2\n\
             [context]\nmax_tool_output_bytes = 1000000000\n",
            workers + 100
        ),
    )
    .unwrap();
    if scale.git {
        make_repo(ws.path());
    }
    let git_log = home.path().join("git-calls");
    let shim = real_git.map(|git| git_shim(home.path(), git, &git_log));

    let sampler = Sampler {
        pid_file: home.path().join("launcher-report.pid"),
        samples: Arc::default(),
        threads: Arc::default(),
        heap,
    };
    {
        let sampler = sampler.clone();
        let (role, writes) = (scale.role, scale.writes);
        mock.set_responder(move |body| respond(body, &sampler, workers, role, writes));
    }

    let out_path = home.path().join("stdout");
    let err_path = home.path().join("stderr");
    let cpu_before = support::self_cpu();
    let started = Instant::now();
    let mut launch = match wrap.split_first() {
        Some((program, args)) => {
            let mut l = support::Measured::new(program, home.path());
            l.cmd.args(args).arg(squad);
            l
        }
        None => support::Measured::new(squad, home.path()),
    };
    let cmd = launch.sandboxed(
        home.path(),
        ws.path(),
        &mock.base_url(),
        &out_path,
        &err_path,
    );
    if let Some(shim) = &shim {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let paths = std::iter::once(shim.clone()).chain(std::env::split_paths(&path));
        cmd.env("PATH", std::env::join_paths(paths).unwrap());
    }
    cmd.args([
        "exec",
        "--approval",
        "auto",
        "Split the work into tasks and run them in parallel.",
    ]);
    let reaped = launch.spawn().wait();
    let exit = started.elapsed();
    // The samplers (and gdb) are done with squad before it can exit; wait for them.
    for t in std::mem::take(&mut *sampler.threads.lock().unwrap()) {
        t.join().unwrap();
    }
    let bench_cpu = support::self_cpu() - cpu_before;
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    assert_eq!(
        reaped.code,
        Some(0),
        "squad exec failed: {}",
        tail(&stderr, 3000)
    );
    let stdout = std::fs::read_to_string(&out_path).unwrap();
    assert_eq!(stdout.trim(), FINAL_TEXT);
    let (log_lines, log_bytes) = support::session_logs(home.path());

    let reqs = mock.requests();
    let n = workers;
    let (sup, workers): (Vec<&RecordedRequest>, Vec<&RecordedRequest>) = reqs
        .iter()
        .partition(|r| !r.system_prompt().unwrap_or("").contains(WORKER_MARK));
    let per_worker = if scale.writes { 2 } else { 1 };
    assert_eq!(workers.len(), n * per_worker, "requests per worker");
    if scale.writes {
        let merged = std::fs::read_dir(ws.path().join("out")).map_or(0, |d| d.count());
        assert_eq!(merged, n, "every worker's file merged into the workspace");
    }
    assert_eq!(sup.len(), 3, "supervisor: spawn, wait, answer");
    // The wait result must hold every worker's result.
    let last = sup[2].body["messages"].as_array().unwrap();
    let report = last.last().unwrap()["content"].to_string();
    assert_eq!(report.matches("\\\"success\\\"").count(), n);

    if std::env::var_os("SQUAD_BENCH_SIZES").is_some() {
        let size = |r: &RecordedRequest| serde_json::to_string(&r.body).map_or(0, |s| s.len());
        println!(
            "     request bodies: worker {} bytes, supervisor {} / {} / {} bytes",
            size(workers[0]),
            size(sup[0]),
            size(sup[1]),
            size(sup[2])
        );
    }
    let t0 = sup[0].received_at;
    let at = |i: Instant| i.saturating_duration_since(t0);
    let fin = |r: &RecordedRequest| r.finished_at.expect("response never finished");
    let first_worker = workers.iter().map(|r| r.received_at).min().unwrap();
    let last_worker = workers.iter().map(|r| r.received_at).max().unwrap();
    let last_worker_done = workers.iter().map(|r| fin(r)).max().unwrap();
    let timeline = vec![
        ("supervisor request 1 (spawn xN) received", at(t0)),
        ("supervisor response 1 finished", at(fin(sup[0]))),
        ("first worker request received", at(first_worker)),
        (
            "supervisor request 2 (wait_for_agents) received",
            at(sup[1].received_at),
        ),
        ("last worker request received", at(last_worker)),
        ("last worker response finished", at(last_worker_done)),
        (
            "supervisor request 3 (after the wait) received",
            at(sup[2].received_at),
        ),
        ("supervisor final answer finished", at(fin(sup[2]))),
    ];

    let samples = sampler.samples.lock().unwrap().clone();
    let heap = malloc_totals(&stderr);
    let get = |k: &str| {
        samples
            .iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| *v)
            .unwrap_or_else(|| panic!("no RSS sample `{k}`"))
    };
    RunResult {
        workers: n,
        wall: at(fin(sup[2])),
        exit,
        peak_kb: reaped.max_rss_kb,
        rss_before_kb: get("before"),
        rss_idle_kb: get("idle"),
        fds_before: get("fds before"),
        fds_idle: get("fds idle"),
        history_bytes: history_text(&workers, sup[0], sup[2]),
        log_lines,
        log_bytes,
        timeline,
        child_cpu: reaped.user + reaped.sys,
        bench_cpu,
        heap_before: heap.first().copied().filter(|_| heap.len() == 2),
        heap_idle: heap.get(1).copied(),
        git_calls: shim.map(|_| {
            std::fs::read_to_string(&git_log)
                .unwrap_or_default()
                .lines()
                .map(str::to_string)
                .collect()
        }),
    }
}

/// The `git` on this process's PATH.
fn find_git() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("git"))
        .find(|p| p.is_file())
}

/// A folder holding a `git` that logs its arguments to `log` (one line per process) and
/// runs the real one; first on squad's PATH, it counts every git process squad starts.
fn git_shim(home: &Path, real: &Path, log: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = home.join("git-shim");
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("git");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
            log.display(),
            real.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// A repository of `REPO_FILES` committed files in `ws` (its `.squad` config included).
fn make_repo(ws: &Path) {
    for i in 0..REPO_FILES {
        let path = ws.join(format!("src/mod_{:02}/file_{i}.rs", i % 50));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, format!("// file {i}\nfn f{i}() {{}}\n")).unwrap();
    }
    for args in [
        &["init", "-q"][..],
        &["add", "-A"],
        &["commit", "-qm", "start"],
    ] {
        let ok = Command::new("git")
            .args(args)
            .current_dir(ws)
            .env("GIT_AUTHOR_NAME", "bench")
            .env("GIT_AUTHOR_EMAIL", "bench@example.com")
            .env("GIT_COMMITTER_NAME", "bench")
            .env("GIT_COMMITTER_EMAIL", "bench@example.com")
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }
}

/// `3 × worktree, 2 × rev-parse`: the git commands of a log, most first.
fn git_call_kinds(calls: &[String]) -> String {
    let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
    for line in calls {
        let mut words = line.split_whitespace();
        let mut kind = "?";
        while let Some(w) = words.next() {
            if w == "-c" || w == "-C" {
                words.next();
            } else if !w.starts_with('-') {
                kind = w;
                break;
            }
        }
        *counts.entry(kind).or_default() += 1;
    }
    let mut counts: Vec<(&str, usize)> = counts.into_iter().collect();
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    counts
        .iter()
        .map(|(k, n)| format!("{n} × {k}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reads squad's RSS (and, for the diagnosis, its malloc figures) a little after a
/// supervisor request arrives: squad is then idle, waiting for the 200 ms answer.
#[derive(Clone)]
struct Sampler {
    pid_file: PathBuf,
    samples: Arc<Mutex<Vec<(&'static str, u64)>>>,
    threads: Arc<Mutex<Vec<std::thread::JoinHandle<()>>>>,
    heap: bool,
}

impl Sampler {
    fn sample(&self, name: &'static str) {
        let this = self.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(SAMPLE_AFTER);
            let Some(pid) = support::read_pid(&this.pid_file) else {
                return;
            };
            if let Some(kb) = support::proc_status_kb(pid, "VmRSS") {
                this.samples.lock().unwrap().push((name, kb));
            }
            // Open sockets tell whether the HTTP pool keeps idle connections.
            if let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) {
                let key = if name == "before" {
                    "fds before"
                } else {
                    "fds idle"
                };
                this.samples.lock().unwrap().push((key, dir.count() as u64));
            }
            if this.heap {
                // Writes glibc's per-arena and total figures to squad's stderr.
                let _ = Command::new("gdb")
                    .args(["-p", &pid.to_string(), "-batch", "-nx"])
                    .args(["-ex", "call (void)malloc_stats()", "-ex", "detach"])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
            }
        });
        self.threads.lock().unwrap().push(t);
    }
}

/// Answers by looking at the request; samples squad at the two supervisor moments that
/// bracket the workers' lives.
fn respond(
    body: &Value,
    sampler: &Sampler,
    workers: usize,
    role: &str,
    writes: bool,
) -> MockResponse {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let system = messages
        .iter()
        .find(|m| m["role"] == "system")
        .and_then(|m| m["content"].as_str())
        .unwrap_or("");
    if system.contains(WORKER_MARK) {
        let task = messages
            .iter()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .unwrap_or("");
        let summary: String = task.chars().take(40).collect();
        let called = messages.iter().any(|m| m["role"] == "tool");
        if writes && !called {
            let n: String = task.chars().filter(char::is_ascii_digit).collect();
            let args = json!({"path": format!("out/worker_{n}.txt"), "content": "written\n"});
            return MockResponse::tool_call("w", "write_file", &args.to_string())
                .with_delay(LATENCY);
        }
        let args = json!({"result": {
            "status": "success",
            "summary": format!("done: {summary}"),
            "artifacts": [],
            "known_issues": []
        }});
        return MockResponse::tool_call("ret", "return_results", &args.to_string())
            .with_delay(LATENCY);
    }
    let last_call = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "assistant")
        .and_then(|m| m["tool_calls"][0]["function"]["name"].as_str());
    let response = match last_call {
        None => {
            sampler.sample("before");
            let calls = (0..workers)
                .map(|i| {
                    let args = json!({
                        "role_name": role,
                        "task_prompt": format!("Task {i}: update module_{i}.rs and report what changed.")
                    });
                    MockToolCall::new(format!("spawn_{i}"), "spawn_agent", args.to_string())
                })
                .collect();
            MockResponse::tool_calls(calls)
        }
        Some("spawn_agent") => MockResponse::tool_call("wait", "wait_for_agents", "{}"),
        Some(_) => {
            sampler.sample("idle");
            MockResponse::text(FINAL_TEXT)
        }
    };
    response.with_delay(LATENCY)
}

/// Bytes of text the run added to histories: each worker's messages (task, its call,
/// its result) and what the supervisor's history gained from its first request to its
/// last. An estimate of the history part of the memory the idle agents hold.
fn history_text(
    workers: &[&RecordedRequest],
    sup_first: &RecordedRequest,
    sup_last: &RecordedRequest,
) -> u64 {
    fn text_of(body: &Value) -> u64 {
        body["messages"]
            .as_array()
            .map(|ms| {
                ms.iter()
                    .filter(|m| m["role"] != "system")
                    .map(|m| {
                        let content = match &m["content"] {
                            Value::String(s) => s.len(),
                            Value::Null => 0,
                            other => other.to_string().len(),
                        };
                        let calls = m["tool_calls"].as_array().map_or(0, |cs| {
                            cs.iter()
                                .map(|c| {
                                    c["function"]["arguments"].as_str().map_or(0, str::len)
                                        + c["id"].as_str().map_or(0, str::len)
                                })
                                .sum()
                        });
                        (content + calls) as u64
                    })
                    .sum()
            })
            .unwrap_or(0)
    }
    // A worker's request holds its task; its return_results call and the tool result
    // ("results delivered to your supervisor") come after, about 200 bytes.
    let workers: u64 = workers.iter().map(|r| text_of(&r.body) + 200).sum();
    workers + text_of(&sup_last.body).saturating_sub(text_of(&sup_first.body))
}

fn tail(s: &str, n: usize) -> &str {
    let mut start = s.len().saturating_sub(n);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}
