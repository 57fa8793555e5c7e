//! `cargo bench --bench worktree`: what isolating a writing worker costs on a repository
//! of 10,000 files (100 folders) with the user's work in progress (20 files edited, 5 of
//! them staged, 10 untracked).
//!
//! a. A worker's base at its spawn (`Worktrees::base`, issue 34): after the user edited a
//!    file, a walk of the work tree that sees it and a new snapshot of the workspace (a
//!    commit of its state through a temporary index); with nothing changed since, the walk
//!    alone (the base is shared). Then its worktree at its first write, made from that
//!    base: cold, `git worktree add --no-checkout`, its index and the one file the
//!    worker's first call writes (`Worktree::create_lazy_at`: the first write can run then;
//!    the other 9,999 files are written behind it by a `Fill`, timed apart until all are on
//!    disk), or, with a spare checked out ahead of time (`Worktrees::warm`), a rename and a
//!    checkout of the files that differ from HEAD. Targets: under 1 s cold (until the
//!    first write can run), under 200 ms warm.
//! b. The worker's diff figures (`+12 −3`) after it changed 5 files and added one.
//! c. Merging that change back into the workspace (snapshots of both sides, merge-tree,
//!    writing the files), and removing the worktree and its branch.
//! d. Ways to make a cold worktree (no spare) of the same 10,000 files, each run in turn:
//!    `git worktree add` as git does it by default (one file after another); the same with
//!    git's parallel checkout (`checkout.workers=32`, what `Worktree::create` does);
//!    `--no-checkout` + `read-tree` + the workspace's files copied by 16 threads (a reflink
//!    where the file system has one: `copy_file_range`) + `update-index --refresh`; the same
//!    with hard links (for reference only: a worker's in-place write would change the
//!    user's file); `git clone --shared` (parallel checkout); `--no-checkout` + an empty
//!    cone sparse checkout (top-level files only: not a usable worktree, the floor); and
//!    the chosen way, `--no-checkout` + `read-tree` + the first write's file, with the
//!    rest written behind (`checkout-index` with parallel checkout): timed until the
//!    first write can run and until all files are written.
//!
//! Uses only the public API. Commits before issue 34 have no base: their file times the
//! snapshot inside the cold creation (`Worktree::create_lazy`).

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use squad::isolation::{self, MergeOutcome, Repo, Spare, Worktree, Worktrees};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use support::{Stats, ms, verdict};

const FILES: usize = 10_000;
const FOLDERS: usize = 100;
const RUNS: usize = 7;

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.com")
        .status()
        .expect("git runs")
        .success();
    assert!(ok, "git {args:?}");
}

fn file(i: usize) -> String {
    format!("mod_{:03}/file_{i}.rs", i % FOLDERS)
}

fn main() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let ws = tmp.path().join("ws");
    let data = tmp.path().join("data");
    let scratch = tmp.path().join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    for i in 0..FILES {
        let path = ws.join(file(i));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, format!("// file {i}\nfn f{i}() {{}}\n")).unwrap();
    }
    git(&ws, &["init", "-q"]);
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-qm", "start"]);
    for i in 0..20 {
        std::fs::write(ws.join(file(i * 37)), format!("// user edit {i}\n")).unwrap();
        if i < 5 {
            git(&ws, &["add", &file(i * 37)]);
        }
    }
    for i in 0..10 {
        std::fs::write(ws.join(format!("untracked_{i}.txt")), "wip\n").unwrap();
    }
    let repo = Repo::discover(&ws).unwrap();
    // Warm the page cache and git's index stat data once, as a running session has them.
    isolation::take_snapshot(&repo.top, &repo.index, &scratch).unwrap();

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let session = Worktrees::open(repo.clone(), &tmp.path().join("bases"), "bench").unwrap();
    let (mut snaps, mut creates, mut fills, mut warm_creates) = (vec![], vec![], vec![], vec![]);
    let (mut new_bases, mut shared_bases) = (vec![], vec![]);
    let (mut diffs, mut merges, mut removes) = (vec![], vec![], vec![]);
    for run in 0..RUNS {
        // The user edits a file: the next spawn needs a new base.
        std::fs::write(ws.join("untracked_0.txt"), format!("wip {run}\n")).unwrap();
        let t = Instant::now();
        isolation::take_snapshot(&repo.top, &repo.index, &scratch).unwrap();
        snaps.push(t.elapsed());

        // At spawn: the worker's base, new (the edit is seen), then shared (nothing changed).
        let t = Instant::now();
        let base = rt.block_on(session.base()).unwrap();
        new_bases.push(t.elapsed());
        let t = Instant::now();
        let again = rt.block_on(session.base()).unwrap();
        shared_bases.push(t.elapsed());
        assert!(
            std::sync::Arc::ptr_eq(&base, &again),
            "one base while nothing changed"
        );

        // Cold, for a first call that writes one file: it can run once `create_lazy_at`
        // returns; the fill writes the rest beside it, as in a session.
        let first = file(5000 + run * 10 + 9);
        let t = Instant::now();
        let (fresh, fill) = Worktree::create_lazy_at(
            &repo,
            &data,
            &format!("fresh{run}"),
            &base.snapshot,
            std::slice::from_ref(&first),
        )
        .unwrap();
        creates.push(t.elapsed());
        let fill = fill.expect("filled behind the first write");
        let filling = std::thread::spawn(move || fill.run());
        std::fs::write(fresh.root.join(&first), "// the worker's first write\n").unwrap();
        filling.join().unwrap().unwrap();
        fills.push(t.elapsed());
        if run == 0 {
            let status = Command::new("git")
                .args(["status", "--porcelain"])
                .current_dir(&fresh.root)
                .output()
                .unwrap();
            let status = String::from_utf8_lossy(&status.stdout).into_owned();
            assert_eq!(status, format!(" M {first}\n"), "whole, and only the write");
        }
        fresh.remove(&repo.top).unwrap();

        // The spare is made ahead of need (in a session: in the background), untimed.
        let spare = Spare::create(&repo, &data, run as u64).unwrap().unwrap();
        let t = Instant::now();
        let mut wt =
            Worktree::from_spare(&repo, spare, &data, &format!("w{run}"), &scratch).unwrap();
        warm_creates.push(t.elapsed());

        // The worker's change: five files edited, one added (different ones each run, so
        // every merge is clean).
        for k in 0..5 {
            let i = 5000 + run * 10 + k;
            std::fs::write(
                wt.root.join(file(i)),
                format!("// worker {run}\nfn g{i}() {{}}\n"),
            )
            .unwrap();
        }
        std::fs::write(wt.root.join(format!("new_{run}.rs")), "fn new() {}\n").unwrap();

        let t = Instant::now();
        let summary = isolation::diff_summary(&wt, &scratch).unwrap();
        diffs.push(t.elapsed());
        assert_eq!(summary.files.len(), 6);

        let t = Instant::now();
        let outcome = isolation::merge_into_workspace(&repo, &mut wt, &scratch).unwrap();
        merges.push(t.elapsed());
        assert!(matches!(outcome, MergeOutcome::Merged { ref files, .. } if files.len() == 6));

        let t = Instant::now();
        wt.remove(&repo.top).unwrap();
        removes.push(t.elapsed());
    }

    println!("== worktree isolation on {FILES} files, 20 edited + 10 untracked ({RUNS} runs)");
    let show = |what: &str, samples: &[Duration]| {
        let s = Stats::of(samples).unwrap();
        println!(
            "   {what:<46} median {}, min {}, max {}",
            ms(s.median),
            ms(s.min),
            ms(s.max)
        );
        s.median
    };
    show("snapshot of the workspace", &snaps);
    let new_base = show("base at spawn, new (walk + snapshot)", &new_bases);
    let shared_base = show("base at spawn, shared (walk only)", &shared_bases);
    let create = show("create, fresh from the base: until first write", &creates);
    let filled = show("create, fresh: until all files are written", &fills);
    let warm = show("create from a warm spare (snapshot + move)", &warm_creates);
    show("diff figures (6 files changed)", &diffs);
    let merge = show("merge back (6 files)", &merges);
    show("remove worktree and branch", &removes);
    println!(
        "   of a fresh one, writing the other {} files (behind the first write) takes about {}",
        FILES - 1,
        ms(filled.saturating_sub(create))
    );
    candidates(&ws, &data);
    verdict(
        "worktree creation from a warm spare, 10,000 files",
        warm.as_secs_f64() * 1e3,
        200.0,
        "ms",
    );
    verdict(
        "worktree creation without a spare (cold), 10,000 files, until the first write can run",
        create.as_secs_f64() * 1e3,
        1000.0,
        "ms",
    );
    println!(
        "         all 10,000 files on disk after {} (median): calls after the first wait for them",
        ms(filled)
    );
    println!(
        "   merge back: {:.1} ms (no target set)",
        merge.as_secs_f64() * 1e3
    );
    println!(
        "   a worker's base at spawn: {:.1} ms new, {:.1} ms shared (no target set)",
        new_base.as_secs_f64() * 1e3,
        shared_base.as_secs_f64() * 1e3
    );
}

/// Threads that copy or link files in the candidates.
const COPIERS: usize = 16;

/// Runs git in `dir` with `input` on its standard input.
fn git_input(dir: &Path, args: &[&str], input: &[u8]) {
    use std::io::Write;
    let mut child = Command::new("git")
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("git runs");
    child.stdin.take().unwrap().write_all(input).unwrap();
    assert!(child.wait().unwrap().success(), "git {args:?}");
}

fn timed(f: impl FnOnce()) -> Duration {
    let t = Instant::now();
    f();
    t.elapsed()
}

/// The tracked files of `ws`, relative.
fn tracked(ws: &Path) -> Vec<String> {
    let out = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(ws)
        .output()
        .unwrap();
    out.stdout
        .split(|b| *b == 0)
        .filter(|f| !f.is_empty())
        .map(|f| String::from_utf8_lossy(f).into_owned())
        .collect()
}

/// Puts every file of `files` from `from` into `to` with `put`, from `COPIERS` threads.
fn in_parallel(from: &Path, to: &Path, files: &[String], put: fn(&Path, &Path)) {
    std::thread::scope(|s| {
        for part in files.chunks(files.len().div_ceil(COPIERS).max(1)) {
            s.spawn(move || {
                for f in part {
                    let dst = to.join(f);
                    if let Some(dir) = dst.parent() {
                        std::fs::create_dir_all(dir).unwrap();
                    }
                    put(&from.join(f), &dst);
                }
            });
        }
    });
}

/// d: the ways to make a cold worktree, each run in turn so the disk's mood is shared.
fn candidates(ws: &Path, data: &Path) {
    let files = tracked(ws);
    let names = [
        "git worktree add (one file after another)",
        "git worktree add, checkout.workers=32 (whole)",
        "--no-checkout + parallel copy + refresh",
        "--no-checkout + hard links + refresh (unsafe)",
        "git clone --shared, checkout.workers=32",
        "--no-checkout + empty sparse cone (floor)",
        "--no-checkout + its file, rest behind (lazy)",
    ];
    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); names.len()];
    // The chosen way, until all its files are written.
    let mut behind: Vec<Duration> = Vec::new();
    for run in 0..RUNS {
        for (i, samples) in samples.iter_mut().enumerate() {
            let dir = data.join(format!("cand{i}-{run}"));
            let d = dir.to_str().unwrap();
            // A worktree with no file written yet.
            let empty = |d: &str| {
                git(
                    ws,
                    &[
                        "worktree",
                        "add",
                        "-q",
                        "--no-checkout",
                        "--detach",
                        d,
                        "HEAD",
                    ],
                )
            };
            let took = match i {
                0 => timed(|| git(ws, &["worktree", "add", "-q", "--detach", d, "HEAD"])),
                1 => timed(|| {
                    git(
                        ws,
                        &[
                            "-c",
                            "checkout.workers=32",
                            "worktree",
                            "add",
                            "-q",
                            "--detach",
                            d,
                            "HEAD",
                        ],
                    )
                }),
                2 | 3 => timed(|| {
                    empty(d);
                    git(&dir, &["read-tree", "HEAD"]);
                    let put: fn(&Path, &Path) = if i == 2 {
                        |a, b| {
                            std::fs::copy(a, b).unwrap();
                        }
                    } else {
                        |a, b| std::fs::hard_link(a, b).unwrap()
                    };
                    in_parallel(ws, &dir, &files, put);
                    // Exits 1 for the files the user edited: they differ from HEAD.
                    let _ = Command::new("git")
                        .args(["update-index", "-q", "--refresh"])
                        .current_dir(&dir)
                        .status();
                }),
                6 => {
                    let t = Instant::now();
                    empty(d);
                    git(&dir, &["read-tree", "HEAD"]);
                    let first = file(4321);
                    git(&dir, &["checkout-index", "-f", "-u", "--", &first]);
                    let usable = t.elapsed();
                    let rest: Vec<u8> = files
                        .iter()
                        .filter(|f| **f != first)
                        .flat_map(|f| f.bytes().chain([0]))
                        .collect();
                    git_input(
                        &dir,
                        &[
                            "-c",
                            "checkout.workers=32",
                            "-c",
                            "checkout.thresholdForParallelism=2000",
                            "checkout-index",
                            "-f",
                            "-u",
                            "-q",
                            "-z",
                            "--stdin",
                        ],
                        &rest,
                    );
                    behind.push(t.elapsed());
                    usable
                }
                4 => timed(|| {
                    git(
                        ws,
                        &[
                            "-c",
                            "checkout.workers=32",
                            "clone",
                            "-q",
                            "--shared",
                            ".",
                            d,
                        ],
                    )
                }),
                _ => timed(|| {
                    empty(d);
                    git(&dir, &["sparse-checkout", "set", "--cone"]);
                    git(&dir, &["checkout", "-q"]);
                }),
            };
            samples.push(took);
            if i == 4 {
                std::fs::remove_dir_all(&dir).unwrap();
            } else {
                git(ws, &["worktree", "remove", "--force", d]);
            }
        }
    }
    println!("== d. a cold worktree of {FILES} files, ways compared ({RUNS} runs each, in turn)");
    let rows = names
        .iter()
        .zip(&samples)
        .chain([(&"  the same: until all files are written", &behind)]);
    for (name, samples) in rows {
        let s = Stats::of(samples).unwrap();
        println!(
            "   {name:<48} median {}, min {}, max {}",
            ms(s.median),
            ms(s.min),
            ms(s.max)
        );
    }
}
