//! A random, seeded property test of taking a merge back: whatever a worker changed and
//! whatever the user changed after its merge, the undo either takes out exactly the
//! worker's change and keeps every edit of the user's, or writes nothing and names a file
//! where the two meet. Forced, the worker's change is gone all the same. Replay a failing
//! round with its seed.

use super::*;
use crate::isolation::test_git;
use std::collections::{BTreeMap, BTreeSet};

use crate::test_rng::Rng;

const FILES: [&str; 3] = ["a.txt", "b.txt", "sub/c.txt"];
const LINES: usize = 12;

/// Lines changed in each file, by line number (0-based).
type Edits = BTreeMap<&'static str, BTreeSet<usize>>;

fn text(file: &str, worker: &BTreeSet<usize>, user: &BTreeSet<usize>) -> String {
    (0..LINES)
        .map(|i| match (user.contains(&i), worker.contains(&i)) {
            (true, _) => format!("{file} {i} by the user\n"),
            (false, true) => format!("{file} {i} by the worker\n"),
            _ => format!("{file} {i}\n"),
        })
        .collect()
}

fn pick(rng: &mut Rng) -> Edits {
    let mut edits = Edits::new();
    for f in FILES {
        let n = rng.below(4);
        let lines = (0..n).map(|_| rng.below(LINES)).collect();
        edits.insert(f, lines);
    }
    edits
}

fn write_all(top: &Path, worker: &Edits, user: &Edits) {
    let none = BTreeSet::new();
    for f in FILES {
        let path = top.join(f);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let w = worker.get(f).unwrap_or(&none);
        let u = user.get(f).unwrap_or(&none);
        std::fs::write(path, text(f, w, u)).unwrap();
    }
}

fn read(top: &Path, f: &str) -> String {
    std::fs::read_to_string(top.join(f)).unwrap()
}

/// Whether the user's and the worker's lines of `f` meet (the same or next lines).
fn meet(worker: &Edits, user: &Edits, f: &str) -> bool {
    let (w, u) = (&worker[f], &user[f]);
    w.iter().any(|a| u.iter().any(|b| a.abs_diff(*b) <= 1))
}

fn round(seed: u64) {
    let mut rng = Rng(seed);
    let tmp = tempfile::tempdir().unwrap();
    let top = tmp.path().canonicalize().unwrap();
    let scratch = top.join(".git");
    let none = Edits::new();
    test_git(&top, &["init", "-q"]);
    write_all(&top, &none, &none);
    test_git(&top, &["add", "-A"]);
    test_git(&top, &["commit", "-qm", "base"]);
    let repo = Repo::discover(&top).unwrap();
    let worker = pick(&mut rng);
    let made = rng.below(2) == 0;
    // The merge, as the merge queue makes it: the workspace before, then the change.
    let before = snapshot::take(&repo.top, &repo.index, &scratch).unwrap();
    write_all(&top, &worker, &none);
    if made {
        std::fs::write(top.join("worker.txt"), "made by the worker\n").unwrap();
    }
    let after = snapshot::take(&repo.top, &repo.index, &scratch).unwrap();
    let args = ["commit-tree", &after.tree, "-p", &before.commit, "-m", "m"];
    let record = MergeRecord {
        before: before.commit.clone(),
        after: Git::new(&top).text(&args).unwrap(),
    };
    // The user works on after the merge.
    let user = pick(&mut rng);
    write_all(&top, &worker, &user);
    std::fs::write(top.join("mine.txt"), "the user's own file\n").unwrap();
    let ahead: Vec<String> = FILES.iter().map(|f| read(&top, f)).collect();

    match unmerge(&repo, &record, &scratch, false).unwrap() {
        UnmergeOutcome::Conflict { conflicts } => {
            let now: Vec<String> = FILES.iter().map(|f| read(&top, f)).collect();
            assert_eq!(now, ahead, "seed {seed}: nothing written on a conflict");
            assert_eq!(top.join("worker.txt").exists(), made, "seed {seed}");
            for c in &conflicts {
                let f = FILES.iter().find(|f| **f == c.path).unwrap();
                assert!(meet(&worker, &user, f), "seed {seed}: {} named", c.path);
            }
            unmerge(&repo, &record, &scratch, true).unwrap();
            let named: BTreeSet<&str> = conflicts.iter().map(|c| c.path.as_str()).collect();
            for f in FILES {
                let expected = if named.contains(f) {
                    text(f, &BTreeSet::new(), &BTreeSet::new())
                } else {
                    text(f, &BTreeSet::new(), &user[f])
                };
                assert_eq!(read(&top, f), expected, "seed {seed}: {f} forced");
            }
        }
        UnmergeOutcome::Undone { .. } | UnmergeOutcome::Unchanged => {
            for f in FILES {
                let kept = text(f, &BTreeSet::new(), &user[f]);
                assert_eq!(
                    read(&top, f),
                    kept,
                    "seed {seed}: {f} undone, the user's kept"
                );
            }
        }
    }
    assert!(
        !top.join("worker.txt").exists(),
        "seed {seed}: the worker's file gone"
    );
    assert_eq!(
        read(&top, "mine.txt"),
        "the user's own file\n",
        "seed {seed}"
    );
}

#[test]
fn an_undo_takes_out_the_workers_change_and_keeps_the_users_or_writes_nothing() {
    let first: u64 = std::env::var("SQUAD_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    for seed in first..first + 24 {
        round(seed);
    }
}
