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
    verdict(
        "worktree creation from a warm spare, 10,000 files",
        warm.as_secs_f64() * 1e3,
        200.0,
        "ms",
    );
    verdict(
        "worktree creation without a spare, 10,000 files",
        create.as_secs_f64() * 1e3,
        200.0,
        "ms",
    );
    println!(
        "   merge back: {:.1} ms (no target set)",
        merge.as_secs_f64() * 1e3
    );
}
