//! The store on real files and real git: a random, seeded property test of restore, and
//! the user's own repository left alone.

use super::*;
use std::collections::BTreeMap;
use std::path::Path;

use crate::test_rng::Rng;

type Files = BTreeMap<String, String>;

/// Every file under `top` but `.git`, as relative path → content.
fn files(top: &Path) -> Files {
    let mut out = Files::new();
    let mut dirs = vec![top.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            if path.is_dir() {
                dirs.push(path);
            } else {
                let rel = path
                    .strip_prefix(top)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.insert(rel, std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    out
}

fn ignored(path: &str) -> bool {
    path.ends_with(".log") || path.starts_with("build/")
}

fn tracked(all: &Files) -> Files {
    all.iter()
        .filter(|(p, _)| !ignored(p))
        .map(|(p, c)| (p.clone(), c.clone()))
        .collect()
}

const NAMES: &[&str] = &[
    "a.txt",
    "b.rs",
    "src/x.rs",
    "src/y.rs",
    "src/deep/z.md",
    "docs/r.md",
    "sp ace.txt",
    "out.log",
    "build/gen.rs",
    "src/deep/trace.log",
];

/// A write, change or delete of a random file; returns the path and its content after.
fn touch(rng: &mut Rng, top: &Path, who: &str, step: usize) -> (String, Option<String>) {
    let rel = NAMES[rng.below(NAMES.len())].to_string();
    let path = top.join(&rel);
    let content = match rng.below(4) {
        0 => {
            let _ = std::fs::remove_file(&path);
            None
        }
        // The same content again: a write that changes nothing.
        1 if path.is_file() => Some(std::fs::read_to_string(&path).unwrap()),
        _ => Some(format!("{who} {step} {}\n", rng.next() % 5)),
    };
    if let Some(text) = &content {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
    }
    (rel, content)
}

fn git(top: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@localhost"])
        .args(args)
        .current_dir(top)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What the user's git knows: HEAD, refs, the index and the stash.
fn user_git(top: &Path) -> (String, Vec<u8>, String) {
    let refs = git(top, &["for-each-ref"]) + &git(top, &["stash", "list"]);
    let status = git(top, &["--no-optional-locks", "status", "--porcelain"]);
    (refs, std::fs::read(top.join(".git/index")).unwrap(), status)
}

fn round(seed: u64) {
    let mut rng = Rng(seed);
    let ws = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let top = ws.path();
    std::fs::write(top.join(".gitignore"), "*.log\nbuild/\n").unwrap();
    let in_repo = rng.below(2) == 0;
    let store = CheckpointStore::open(data.path(), top).unwrap();
    // What squad last wrote, as the model of the store's record.
    let mut squad: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut step = 0;
    let mut act = |rng: &mut Rng, squad: &mut BTreeMap<_, _>, by_squad: bool| {
        step += 1;
        let (rel, content) = touch(rng, top, if by_squad { "squad" } else { "user" }, step);
        if by_squad {
            store.note_written(std::slice::from_ref(&rel)).unwrap();
            squad.insert(rel, content);
        }
    };
    for _ in 0..rng.below(8) + 2 {
        let by_squad = rng.below(2) == 0;
        act(&mut rng, &mut squad, by_squad);
    }
    if in_repo {
        git(top, &["init", "-q"]);
        git(top, &["add", "-A"]);
        git(top, &["commit", "-qm", "user", "--allow-empty"]);
        // The store borrows the user's index: some of it staged since the commit, some
        // of the files changed since it was written.
        if rng.below(2) == 0 {
            for _ in 0..rng.below(3) + 1 {
                act(&mut rng, &mut squad, false);
            }
            git(top, &["add", "-A"]);
        }
        for _ in 0..rng.below(3) {
            let by_squad = rng.below(2) == 0;
            act(&mut rng, &mut squad, by_squad);
        }
    }
    let id = store.checkpoint("message 1").unwrap();
    let at_checkpoint = tracked(&files(top));
    for _ in 0..rng.below(10) + 1 {
        let by_squad = rng.below(3) != 0;
        act(&mut rng, &mut squad, by_squad);
    }
    let before = files(top);
    let users_git = in_repo.then(|| user_git(top));
    let now = tracked(&before);
    let mut expected: Vec<String> = now
        .keys()
        .chain(at_checkpoint.keys())
        .filter(|p| now.get(*p) != at_checkpoint.get(*p))
        .filter(|p| squad.get(*p) != Some(&now.get(*p).cloned()))
        .cloned()
        .collect();
    expected.sort();
    expected.dedup();

    let asked = store.restore(&id, false).unwrap();
    let mut conflicts = asked.conflicts.clone();
    conflicts.sort();
    assert_eq!(conflicts, expected, "seed {seed}: the user's files, named");
    let undo = asked.undo.clone().unwrap();
    if !expected.is_empty() {
        assert!(asked.refused(), "seed {seed}");
        assert_eq!(
            files(top),
            before,
            "seed {seed}: nothing written on a conflict"
        );
        store.restore(&id, true).unwrap();
    }
    let after = files(top);
    assert_eq!(
        tracked(&after),
        at_checkpoint,
        "seed {seed}: exactly the checkpoint"
    );
    let ignored_of = |f: &Files| f.iter().filter(|(p, _)| ignored(p)).count();
    assert_eq!(
        ignored_of(&after),
        ignored_of(&before),
        "seed {seed}: ignored files kept"
    );
    assert!(
        after
            .iter()
            .filter(|(p, _)| ignored(p))
            .all(|(p, c)| before.get(p) == Some(c)),
        "seed {seed}: ignored files untouched"
    );
    // Nothing is lost: the restore itself can be taken back.
    store.restore(&undo, true).unwrap();
    assert_eq!(
        files(top),
        before,
        "seed {seed}: the undo gives back the files"
    );
    if let Some(was) = users_git {
        assert_eq!(user_git(top), was, "seed {seed}: the user's git untouched");
    }
}

/// `SQUAD_CHECKPOINT_ROUNDS=N` runs N rounds (12 by default), `SQUAD_CHECKPOINT_SEED=S`
/// replays round S alone.
#[test]
fn restore_gives_back_exactly_the_checkpoint_and_loses_nothing() {
    let seeds: Vec<u64> = match std::env::var("SQUAD_CHECKPOINT_SEED") {
        Ok(s) => vec![s.trim().parse().unwrap()],
        Err(_) => {
            let rounds: u64 = std::env::var("SQUAD_CHECKPOINT_ROUNDS")
                .ok()
                .and_then(|n| n.trim().parse().ok())
                .unwrap_or(12);
            let first = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_secs() * 1000);
            (0..rounds).map(|n| first + n).collect()
        }
    };
    for seed in seeds {
        eprintln!("round {seed} (SQUAD_CHECKPOINT_SEED={seed} replays it)");
        round(seed);
    }
}

#[test]
fn changes_since_a_checkpoint_name_each_file_and_how() {
    let ws = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let top = ws.path();
    std::fs::write(top.join("keep"), "k").unwrap();
    std::fs::write(top.join("edit"), "1").unwrap();
    std::fs::write(top.join("gone"), "g").unwrap();
    let store = CheckpointStore::open(data.path(), top).unwrap();
    let id = store.checkpoint("first").unwrap();
    assert!(store.changes_since(&id).unwrap().is_empty());
    std::fs::write(top.join("edit"), "2").unwrap();
    std::fs::remove_file(top.join("gone")).unwrap();
    std::fs::write(top.join("new"), "n").unwrap();
    let got = store.changes_since(&id).unwrap();
    let kinds: Vec<(&str, ChangeKind)> = got.iter().map(|c| (c.path.as_str(), c.kind)).collect();
    assert_eq!(
        kinds,
        vec![
            ("edit", ChangeKind::Modified),
            ("gone", ChangeKind::Deleted),
            ("new", ChangeKind::Added)
        ]
    );
    let again = store.checkpoint("second").unwrap();
    assert_ne!(again, id);
    assert!(store.changes_since(&again).unwrap().is_empty());
}

#[test]
fn an_unknown_checkpoint_is_refused_by_name() {
    let ws = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let store = CheckpointStore::open(data.path(), ws.path()).unwrap();
    for bad in ["deadbeef", "--all", ""] {
        let err = store.restore(&CheckpointId(bad.into()), true).unwrap_err();
        assert!(matches!(err, CheckpointError::Unknown(_)), "{bad}: {err}");
    }
}

#[test]
fn a_user_edit_is_a_conflict_and_squads_own_is_not() {
    let ws = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let top = ws.path();
    std::fs::write(top.join("mine"), "user 1").unwrap();
    std::fs::write(top.join("its"), "squad 1").unwrap();
    let store = CheckpointStore::open(data.path(), top).unwrap();
    let id = store.checkpoint("first").unwrap();
    std::fs::write(top.join("its"), "squad 2").unwrap();
    store.note_written(&["its".into()]).unwrap();
    let done = store.restore(&id, false).unwrap();
    assert!(done.conflicts.is_empty());
    assert_eq!(done.written, vec!["its".to_string()]);
    assert_eq!(std::fs::read_to_string(top.join("its")).unwrap(), "squad 1");
    std::fs::write(top.join("mine"), "user 2").unwrap();
    std::fs::write(top.join("its"), "squad 3").unwrap();
    store.note_written(&["its".into()]).unwrap();
    let asked = store.restore(&id, false).unwrap();
    assert_eq!(asked.conflicts, vec!["mine".to_string()]);
    assert_eq!(std::fs::read_to_string(top.join("its")).unwrap(), "squad 3");
    assert_eq!(std::fs::read_to_string(top.join("mine")).unwrap(), "user 2");
}
