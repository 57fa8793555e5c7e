//! `cargo bench --bench worktree`: what isolating a writing worker costs on a repository
//! of 10,000 files (100 folders) with the user's work in progress (20 files edited, 5 of
//! them staged, 10 untracked).
//!
//! a. Creating a worker's worktree: the snapshot of the workspace (a commit of its state
//!    through a temporary index), then either `git worktree add` (which writes all 10,000
//!    files; its time is the file system's) or, with a spare checked out ahead of time
//!    (`Worktrees::warm`), a rename and a checkout of the files that differ from HEAD.
//!    Target: under 200 ms.
//! b. The worker's diff figures (`+12 −3`) after it changed 5 files and added one.
//! c. Merging that change back into the workspace (snapshots of both sides, merge-tree,
//!    writing the files), and removing the worktree and its branch.
//! d. Ways to make a cold worktree (no spare) of the same 10,000 files, each run in turn:
//!    `git worktree add` as git does it by default (one file after another); the same with
//!    git's parallel checkout (`checkout.workers=32`, what `Worktree::create` does);
//!    `--no-checkout` + `read-tree` + the workspace's files copied by 16 threads (a reflink
//!    where the file system has one: `copy_file_range`) + `update-index --refresh`; the same
//!    with hard links (for reference only: a worker's in-place write would change the
//!    user's file); `git clone --shared` (parallel checkout); and `--no-checkout` + an
//!    empty cone sparse checkout (top-level files only: not a usable worktree, the floor).
//!
//! Uses only the public API, so the same file measures another commit.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use squad::isolation::{self, MergeOutcome, Repo, Spare, Worktree};
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

    let (mut snaps, mut creates, mut warm_creates, mut diffs, mut merges, mut removes) =
        (vec![], vec![], vec![], vec![], vec![], vec![]);
    for run in 0..RUNS {
        let t = Instant::now();
        isolation::take_snapshot(&repo.top, &repo.index, &scratch).unwrap();
        snaps.push(t.elapsed());

        let t = Instant::now();
        let fresh = Worktree::create(&repo, &data, &format!("fresh{run}"), &scratch).unwrap();
        creates.push(t.elapsed());
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
        assert!(matches!(outcome, MergeOutcome::Merged { ref files } if files.len() == 6));

        let t = Instant::now();
        wt.remove(&repo.top).unwrap();
        removes.push(t.elapsed());
    }

    println!("== worktree isolation on {FILES} files, 20 edited + 10 untracked ({RUNS} runs)");
    let show = |what: &str, samples: &[Duration]| {
        let s = Stats::of(samples).unwrap();
        println!(
            "   {what:<44} median {}, min {}, max {}",
            ms(s.median),
            ms(s.min),
            ms(s.max)
        );
        s.median
    };
    let snap = show("snapshot of the workspace", &snaps);
    let create = show("create, fresh (snapshot + git worktree add)", &creates);
    let warm = show("create from a warm spare (snapshot + move)", &warm_creates);
    show("diff figures (6 files changed)", &diffs);
    let merge = show("merge back (6 files)", &merges);
    show("remove worktree and branch", &removes);
    println!(
        "   of creation, writing the {FILES} files (worktree add) takes about {}",
        ms(create.saturating_sub(snap))
    );
    candidates(&ws, &data);
    verdict(
        "worktree creation from a warm spare, 10,000 files",
        warm.as_secs_f64() * 1e3,
        200.0,
        "ms",
    );
    verdict(
        "worktree creation without a spare (cold), 10,000 files",
        create.as_secs_f64() * 1e3,
        1000.0,
        "ms",
    );
    println!(
        "   merge back: {:.1} ms (no target set)",
        merge.as_secs_f64() * 1e3
    );
}

/// Threads that copy or link files in the candidates.
const COPIERS: usize = 16;

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
        "git worktree add, checkout.workers=32 (chosen)",
        "--no-checkout + parallel copy + refresh",
        "--no-checkout + hard links + refresh (unsafe)",
        "git clone --shared, checkout.workers=32",
        "--no-checkout + empty sparse cone (floor)",
    ];
    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); names.len()];
    for run in 0..RUNS {
        for (i, samples) in samples.iter_mut().enumerate() {
            let dir = data.join(format!("cand{i}-{run}"));
            let d = dir.to_str().unwrap();
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
                    );
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
                    );
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
    for (name, samples) in names.iter().zip(&samples) {
        let s = Stats::of(samples).unwrap();
        println!(
            "   {name:<48} median {}, min {}, max {}",
            ms(s.median),
            ms(s.min),
            ms(s.max)
        );
    }
}
