//! `cargo bench --bench mention`: `@path` completion on a repository of 10,000 files.
//!
//! a. Listing the workspace (`Op::ListFiles`' walk, `.gitignore` read, 2,000 ignored
//!    files under `target/` skipped): median and worst of 5 runs.
//! b. Ranking the list for what a person types, one query per keystroke: median and
//!    worst per query over 50 runs. Target: well under a frame (16 ms) per keystroke.
//!
//! Uses only the public API, so the same file measures another commit.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use squad::text::fuzzy_rank;
use squad::workspace::{MAX_LISTED, list_files};
use std::time::{Duration, Instant};

const FILES: usize = 10_000;
const IGNORED: usize = 2_000;

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path();
    let made = Instant::now();
    for i in 0..FILES {
        let sub = root.join(format!("src/mod{:02}/part{:02}", i % 50, (i / 50) % 20));
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join(format!("file_{i:05}.rs")), "x").unwrap();
    }
    for i in 0..IGNORED {
        let sub = root.join(format!("target/debug/{}", i % 10));
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join(format!("obj{i}.o")), "x").unwrap();
    }
    std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
    println!(
        "{FILES} files (+{IGNORED} ignored) made in {} ms",
        made.elapsed().as_millis()
    );

    let mut walks = Vec::new();
    let mut listed = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        listed = list_files(root, MAX_LISTED);
        walks.push(t.elapsed());
    }
    assert_eq!(listed.len(), FILES, "ignored files are left out");
    let (med, worst) = stats(&mut walks);
    println!(
        "a. list_files: {} files, median {med:.1} ms, worst {worst:.1} ms",
        listed.len()
    );

    println!("b. fuzzy_rank over {} paths (8 best):", listed.len());
    for query in [
        "f",
        "fi",
        "file",
        "file_0999",
        "m4p1",
        "src/mod49/part19/file_09999.rs",
        "zzz",
    ] {
        let mut times = Vec::new();
        let mut found = 0;
        for _ in 0..50 {
            let t = Instant::now();
            found = fuzzy_rank(query, &listed, 8).len();
            times.push(t.elapsed());
        }
        let (med, worst) = stats(&mut times);
        println!("   {query:<32} {found} shown  median {med:.2} ms  worst {worst:.2} ms");
    }
}

fn stats(times: &mut [Duration]) -> (f64, f64) {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    (ms(times[times.len() / 2]), ms(times[times.len() - 1]))
}
