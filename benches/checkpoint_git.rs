//! `cargo bench --bench checkpoint_git`: the first checkpoint of a git workspace, issue 49
//! part 3. A repository of 20,000 and of 100,000 committed files (~4 KB each, 100 to a
//! folder, a `.gitignore`), the user's index fresh from `git add` and `git commit`; the
//! store made on a fresh data dir each run, and timed from `CheckpointStore::open` to
//! the checkpoint's id:
//!
//! a. nothing changed since the commit (target: ≤ 0.5 s and ≤ 5 MB added for 20,000);
//! b. 10 committed files edited and 10 new ones, which are all a checkpoint must store;
//! c. the workspace a subfolder of a monorepo (`packages/app` of that many files, beside a
//!    `packages/lib` of a tenth as many), nothing changed;
//! d. the workspace at the top with `* text=auto` in `.gitattributes` and
//!    `core.autocrlf=input`, nothing changed (each entry's blob length is checked).
//!
//! "Bytes added" is what the data dir takes on disk afterwards (allocated blocks, as `du`
//! counts them), and in brackets the files' lengths. `SQUAD_BENCH_RUNS` runs (3 by default);
//! `SQUAD_BENCH_SIZES=20000` picks the sizes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use squad::checkpoint::CheckpointStore;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use support::{Stats, ms};

const PER_FOLDER: usize = 100;

fn git(top: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(["-c", "user.name=b", "-c", "user.email=b@localhost"])
        .args(args)
        .current_dir(top)
        .status()
        .unwrap()
        .success();
    assert!(ok, "git {args:?}");
}

/// ~4 KB of source-like text that does not compress to nothing.
fn body(i: usize) -> String {
    let mut x = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut s = format!("// file {i}\n");
    while s.len() < 4000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.push_str(&format!("let v{} = {};\n", x % 1000, x >> 20));
    }
    s
}

fn workspace(top: &Path, files: usize) {
    std::fs::write(top.join(".gitignore"), "target/\n*.log\n").unwrap();
    fill(top, files);
    git(top, &["init", "-q"]);
    git(top, &["add", "-A"]);
    git(top, &["commit", "-qm", "the user's files"]);
}

fn fill(top: &Path, files: usize) {
    for i in 0..files {
        let dir = top.join(format!("d{:04}", i / PER_FOLDER));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("f{i}.rs")), body(i)).unwrap();
    }
}

/// A monorepo whose `packages/app` has `files` files: the workspace it returns.
fn monorepo(top: &Path, files: usize) -> std::path::PathBuf {
    std::fs::write(top.join(".gitignore"), "node_modules/\n*.log\n").unwrap();
    let app = top.join("packages/app");
    fill(&app, files);
    fill(&top.join("packages/lib"), files / 10);
    git(top, &["init", "-q"]);
    git(top, &["add", "-A"]);
    git(top, &["commit", "-qm", "the user's files"]);
    app
}

/// A repository that normalises line endings (all its files are LF already).
fn normalising(top: &Path, files: usize) {
    std::fs::write(top.join(".gitattributes"), "* text=auto\n").unwrap();
    fill(top, files);
    git(top, &["init", "-q"]);
    git(top, &["config", "core.autocrlf", "input"]);
    git(top, &["add", "-A"]);
    git(top, &["commit", "-qm", "the user's files"]);
}

/// (bytes on disk, bytes of content) under `dir`.
fn size(dir: &Path) -> (u64, u64) {
    let (mut disk, mut len) = (0, 0);
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let m = e.metadata().unwrap();
            if m.is_dir() {
                todo.push(e.path());
            } else {
                disk += m.blocks() * 512;
                len += m.len();
            }
        }
    }
    (disk, len)
}

fn mb(b: u64) -> String {
    format!("{:.1} MB", b as f64 / 1e6)
}

/// Runs the first checkpoint `runs` times on fresh data dirs: times and sizes.
fn first(ws: &Path, runs: usize) -> (Vec<Duration>, Vec<(u64, u64)>) {
    let (mut times, mut sizes) = (vec![], vec![]);
    for _ in 0..runs {
        let data = tempfile::tempdir().unwrap();
        let start = Instant::now();
        let store = CheckpointStore::open(data.path(), ws).unwrap();
        store.checkpoint("first").unwrap();
        times.push(start.elapsed());
        drop(store);
        sizes.push(size(data.path()));
    }
    (times, sizes)
}

fn print(what: &str, times: &[Duration], sizes: &[(u64, u64)]) {
    let s = Stats::of(times).unwrap();
    let mut disk: Vec<u64> = sizes.iter().map(|s| s.0).collect();
    disk.sort();
    let len = sizes.iter().map(|s| s.1).max().unwrap_or(0);
    println!(
        "{what:<46} median {:>12}  min {:>12}  max {:>12}  (n={})  added {} on disk ({} in file lengths)",
        ms(s.median),
        ms(s.min),
        ms(s.max),
        s.n,
        mb(disk[disk.len() / 2]),
        mb(len),
    );
}

fn main() {
    let runs: usize = std::env::var("SQUAD_BENCH_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(3);
    let sizes: Vec<usize> = std::env::var("SQUAD_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![20_000, 100_000]);
    for files in sizes {
        let ws = tempfile::tempdir().unwrap();
        let made = Instant::now();
        workspace(ws.path(), files);
        let (disk, len) = size(ws.path());
        println!(
            "git workspace of {files} files: {} on disk with its .git ({} in file lengths), made in {:.1} s; {runs} runs",
            mb(disk),
            mb(len),
            made.elapsed().as_secs_f64()
        );
        let (t, s) = first(ws.path(), runs);
        print("a. first checkpoint, nothing changed", &t, &s);
        if files == 20_000 {
            let wall = Stats::of(&t).unwrap().median;
            let mut disk: Vec<u64> = s.iter().map(|s| s.0).collect();
            disk.sort();
            let added = disk[disk.len() / 2];
            let met = wall <= Duration::from_millis(500) && added <= 5_000_000;
            println!(
                "[{}] first checkpoint of 20,000 unchanged files: {} and {} (target ≤ 0.5 s, ≤ 5 MB)",
                if met { "PASS" } else { "MISS" },
                ms(wall),
                mb(added)
            );
        }
        for i in 0..10 {
            let dir = ws.path().join(format!("d{:04}", i));
            std::fs::write(dir.join(format!("f{}.rs", i * PER_FOLDER)), body(i + 7)).unwrap();
            std::fs::write(dir.join(format!("new{i}.rs")), body(files + i)).unwrap();
        }
        let (t, s) = first(ws.path(), runs);
        print("b. first checkpoint, 10 edited and 10 new", &t, &s);
        drop(ws);

        let repo = tempfile::tempdir().unwrap();
        let app = monorepo(repo.path(), files);
        let (t, s) = first(&app, runs);
        print("c. subfolder of a monorepo, nothing changed", &t, &s);
        drop(repo);

        let repo = tempfile::tempdir().unwrap();
        normalising(repo.path(), files);
        let (t, s) = first(repo.path(), runs);
        print("d. text=auto and autocrlf, nothing changed", &t, &s);
    }
}
