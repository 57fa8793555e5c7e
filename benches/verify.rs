//! `cargo bench --bench verify`: what checking a result costs on a large workspace.
//!
//! A workspace of 10,000 files in 100 folders (a mid-sized repository): the snapshot taken
//! when a worker starts its task, and the comparison when it returns. Target: both under
//! 100 ms, so verification never dominates a worker's turn.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use squad::verify::Snapshot;
use std::time::{Duration, Instant};

const FILES: usize = 10_000;
const RUNS: usize = 7;

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path();
    for i in 0..FILES {
        let folder = root.join(format!("mod_{:03}", i % 100));
        std::fs::create_dir_all(&folder).expect("folder");
        std::fs::write(
            folder.join(format!("file_{i}.rs")),
            format!("// file {i}\n"),
        )
        .expect("file");
    }
    println!("== snapshot and change detection over {FILES} files ({RUNS} runs, median)");
    let mut takes = Vec::new();
    let mut diffs = Vec::new();
    let mut snap = Snapshot::take(root);
    for run in 0..RUNS {
        // A worker's change between the two moments: one file edited, one created.
        std::fs::write(root.join("mod_000/file_0.rs"), format!("// edited {run}\n")).expect("edit");
        std::fs::write(root.join(format!("new_{run}.rs")), "new\n").expect("create");
        let t = Instant::now();
        let now = Snapshot::take(root);
        takes.push(t.elapsed());
        let t = Instant::now();
        let changes = snap.changes_to(&now);
        diffs.push(t.elapsed());
        assert_eq!(now.len(), FILES + run + 1);
        assert!(changes.created.contains(&format!("new_{run}.rs")));
        snap = now;
    }
    takes.sort();
    diffs.sort();
    let median = |v: &[Duration]| v[v.len() / 2];
    println!(
        "   snapshot (walk + stat, .gitignore honoured): median {:.1} ms, max {:.1} ms",
        ms(median(&takes)),
        ms(takes[RUNS - 1])
    );
    println!(
        "   changes between two snapshots:              median {:.2} ms",
        ms(median(&diffs))
    );
    let verdict = |what: &str, v: f64| {
        let ok = v < 100.0;
        println!(
            "  [{}] {what}: {v:.1} ms (target < 100 ms)",
            if ok { "PASS" } else { "MISS" }
        );
    };
    verdict("snapshot of 10,000 files", ms(median(&takes)));
    verdict("change detection", ms(median(&diffs)));
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
