//! `cargo bench --bench checkpoint`: what a checkpoint of the workspace costs on 10,000
//! files (100 folders, ~200 bytes each, a `.gitignore`), issue 39:
//!
//! a. the first checkpoint of a workspace (every file read and hashed into the shadow
//!    repository under the data dir);
//! b. an incremental one with nothing changed (git's index answers from the files' stat
//!    data), and one after 10 files were edited;
//! c. what changed since a checkpoint (`/rewind`'s list), and a restore of those 10 files.
//!
//! A checkpoint runs off the user's message (see `runtime/policies/checkpoint`): these
//! figures are what the persona's first write of the turn may wait for, not the message.
//! Medians of `SQUAD_BENCH_RUNS` runs (5 by default), each on a fresh data dir for (a).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use squad::checkpoint::CheckpointStore;
use std::path::Path;
use std::time::{Duration, Instant};
use support::{Stats, ms};

const FILES: usize = 10_000;

fn workspace(top: &Path) {
    std::fs::write(top.join(".gitignore"), "target/\n*.log\n").unwrap();
    for i in 0..FILES {
        let dir = top.join(format!("d{:02}", i % 100));
        std::fs::create_dir_all(&dir).unwrap();
        let body = format!("// file {i}\n{}\n", "x".repeat(180));
        std::fs::write(dir.join(format!("f{i}.rs")), body).unwrap();
    }
}

fn time<T>(f: impl FnOnce() -> T) -> (Duration, T) {
    let start = Instant::now();
    let out = f();
    (start.elapsed(), out)
}

fn print(what: &str, samples: &[Duration]) {
    let s = Stats::of(samples).unwrap();
    println!(
        "{what:<44} median {:>12}  min {:>12}  max {:>12}  (n={})",
        ms(s.median),
        ms(s.min),
        ms(s.max),
        s.n
    );
}

fn main() {
    let runs: usize = std::env::var("SQUAD_BENCH_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(5);
    let ws = tempfile::tempdir().unwrap();
    workspace(ws.path());
    println!("checkpoint of {FILES} files in 100 folders, {runs} runs");
    let (mut first, mut same, mut edited, mut listed, mut restored) =
        (vec![], vec![], vec![], vec![], vec![]);
    for run in 0..runs {
        let data = tempfile::tempdir().unwrap();
        let store = CheckpointStore::open(data.path(), ws.path()).unwrap();
        let (t, id) = time(|| store.checkpoint("first").unwrap());
        first.push(t);
        same.push(time(|| store.checkpoint("same").unwrap()).0);
        for i in 0..10 {
            let path = ws.path().join(format!("d{:02}/f{i}.rs", i % 100));
            std::fs::write(path, format!("edited in run {run}\n")).unwrap();
        }
        edited.push(time(|| store.checkpoint("10 edited").unwrap()).0);
        let (t, changes) = time(|| store.changes_since(&id).unwrap());
        assert_eq!(changes.len(), 10);
        listed.push(t);
        let (t, done) = time(|| store.restore(&id, true).unwrap());
        assert_eq!(done.written.len(), 10);
        restored.push(t);
    }
    print("a. first checkpoint", &first);
    print("b. incremental, nothing changed", &same);
    print("b. incremental, 10 files edited", &edited);
    print("c. changes since a checkpoint (10 files)", &listed);
    print("c. restore of 10 files (with its undo point)", &restored);
}
