//! `cargo bench --bench verify`: what checking a result costs on a large workspace.
//!
//! a. A workspace of 10,000 files in 100 folders (a mid-sized repository): the snapshot
//!    taken when a worker starts its task, and the comparison when it returns (how a
//!    worker without a worktree of its own is checked). Target: both under 100 ms, so
//!    verification never dominates a worker's turn.
//! b. A worker in its own worktree of a 10,000-file git repository, having changed 5 files,
//!    made one and deleted one, returns a result claiming them: the check of its claims, as
//!    before issue 48 (a walk of the worktree compared with the start snapshot) and now
//!    (git's diff of the worktree against its base, then the claims looked up in it). Wall
//!    time and CPU per check (this process and the git processes it ran). Target: under
//!    100 ms wall.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use squad::isolation::{ChangeKind, Repo, Worktrees};
use squad::protocol::{AgentId, AgentResult, Artifact, ChangeType, ResultStatus};
use squad::verify::{Changes, Earlier, Evidence, Snapshot, check_result};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const FILES: usize = 10_000;
const RUNS: usize = 7;

fn main() {
    snapshots();
    worktree_check();
}

fn snapshots() {
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

/// CPU (user + system) of this process and of its children that ended (git).
fn cpu() -> Duration {
    support::self_cpu() + support::children_cpu()
}

/// The worker's claims: the 5 files it edited, the one it made, the one it deleted.
fn claims() -> AgentResult {
    let mut artifacts: Vec<Artifact> = (0..5)
        .map(|i| (format!("mod_{:03}/file_{}.rs", i, i), ChangeType::Modified))
        .chain([
            ("mod_000/new.rs".to_string(), ChangeType::Created),
            ("mod_007/file_7.rs".to_string(), ChangeType::Deleted),
        ])
        .map(|(file_path, change_type)| Artifact {
            file_path,
            description: "the change".into(),
            change_type,
        })
        .collect();
    artifacts.sort_by(|a, b| a.file_path.cmp(&b.file_path));
    AgentResult {
        status: ResultStatus::Success,
        summary: "done".into(),
        artifacts,
        known_issues: vec![],
        verification: None,
        merge: None,
        completed_at: None,
    }
}

fn worktree_check() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let ws = tmp.path().join("ws");
    for i in 0..FILES {
        let path = ws.join(format!("mod_{:03}/file_{i}.rs", i % 100));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, format!("// file {i}\n")).unwrap();
    }
    git(&ws, &["init", "-q"]);
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-qm", "start"]);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let repo = Repo::discover(&ws).unwrap();
    let session = Worktrees::open(repo, &tmp.path().join("data"), "bench").unwrap();
    // The worker's start as it was taken before issue 48: the workspace, at its task.
    let start = Snapshot::take(&ws);
    let agent = AgentId::new();
    let root = rt.block_on(session.create(agent)).unwrap();
    rt.block_on(session.ready(agent)).unwrap();
    for i in 0..5 {
        let f = root.join(format!("mod_{:03}/file_{i}.rs", i));
        std::fs::write(f, format!("// edited {i}\n")).unwrap();
    }
    std::fs::write(root.join("mod_000/new.rs"), "new\n").unwrap();
    std::fs::remove_file(root.join("mod_007/file_7.rs")).unwrap();
    let result = claims();
    let earlier = Earlier::new();
    let (mut before_wall, mut before_cpu, mut after_wall, mut after_cpu) =
        (vec![], vec![], vec![], vec![]);
    for _ in 0..RUNS {
        // Before: a walk of the worktree against the start.
        let (t, c) = (Instant::now(), cpu());
        let changes = start.changes_to(&Snapshot::take(&root));
        let findings = check_result(
            &result,
            &Evidence {
                root: &root,
                changes: &changes,
                earlier: &earlier,
            },
        );
        before_wall.push(t.elapsed());
        before_cpu.push(cpu() - c);
        assert!(changes.paths().len() >= 7);
        std::hint::black_box(findings);
        // Now: git's diff of the worktree against its base.
        let (t, c) = (Instant::now(), cpu());
        let diff = rt.block_on(session.diff(agent)).unwrap();
        let mut changes = Changes::default();
        for f in &diff.files {
            let set = match f.kind {
                ChangeKind::Added => &mut changes.created,
                ChangeKind::Deleted => &mut changes.deleted,
                _ => &mut changes.modified,
            };
            set.insert(f.path.clone());
        }
        let findings = check_result(
            &result,
            &Evidence {
                root: &root,
                changes: &changes,
                earlier: &earlier,
            },
        );
        after_wall.push(t.elapsed());
        after_cpu.push(cpu() - c);
        assert_eq!(changes.paths().len(), 7, "{changes:?}");
        assert!(findings.is_empty(), "every claim is true: {findings:?}");
    }
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    println!(
        "== checking a worker's claims in its own worktree of {FILES} files ({RUNS} runs, median)"
    );
    println!(
        "   before (walk of the worktree against the start snapshot): wall {:.1} ms, CPU {:.1} ms",
        ms(median(&mut before_wall)),
        ms(median(&mut before_cpu))
    );
    let wall = ms(median(&mut after_wall));
    println!(
        "   now (git diff of the worktree against its base):          wall {wall:.1} ms, CPU {:.1} ms",
        ms(median(&mut after_cpu))
    );
    println!(
        "  [{}] check of a 10,000-file worktree: {wall:.1} ms (target < 100 ms)",
        if wall < 100.0 { "PASS" } else { "MISS" }
    );
    rt.block_on(session.remove(agent)).unwrap();
}
