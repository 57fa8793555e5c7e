//! What a checkpoint costs (issue 49): in a git repository the store borrows the user's
//! objects and index, so an unchanged repository adds next to nothing and a change adds
//! only its own blobs; outside git a checkpoint stores what differs from the last one.
//! And the stores that go: old ones, never one a session holds.

use super::*;
use std::path::Path;
use std::time::{Duration, SystemTime};

pub(super) fn git(top: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@localhost"])
        .args(args)
        .current_dir(top)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {:?}", out);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `n` files of ~4 KB in folders of 50.
fn files(top: &Path, n: usize) {
    for i in 0..n {
        let dir = top.join(format!("d{}", i / 50));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("f{i}.txt")), format!("{i}\n").repeat(1000)).unwrap();
    }
}

/// The blobs stored in the store's own object folder (not its alternate's).
pub(super) fn own_blobs(store: &CheckpointStore) -> Vec<String> {
    let objects = store.git_dir().join("objects");
    let mut ids = Vec::new();
    for dir in std::fs::read_dir(&objects).unwrap().flatten() {
        let name = dir.file_name().to_string_lossy().into_owned();
        if name.len() != 2 {
            continue;
        }
        for f in std::fs::read_dir(dir.path()).unwrap().flatten() {
            ids.push(format!("{name}{}", f.file_name().to_string_lossy()));
        }
    }
    let kind = |id: &String| git(store.git_dir(), &["cat-file", "-t", id]).trim() == "blob";
    let mut blobs: Vec<String> = ids.into_iter().filter(kind).collect();
    blobs.sort();
    blobs
}

fn hash(top: &Path, rel: &str) -> String {
    git(top, &["hash-object", rel]).trim().to_string()
}

#[test]
fn a_first_checkpoint_of_an_unchanged_git_repository_stores_next_to_nothing() {
    let ws = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let top = ws.path();
    files(top, 400);
    git(top, &["init", "-q"]);
    git(top, &["add", "-A"]);
    git(top, &["commit", "-qm", "user"]);
    let content = prune::size(top) - prune::size(&top.join(".git"));
    let store = CheckpointStore::open(data.path(), top).unwrap();
    let id = store.checkpoint("first").unwrap();
    let added = prune::size(data.path());
    assert!(
        added < content / 10,
        "the store took {added} bytes for {content} bytes of unchanged files"
    );
    assert!(own_blobs(&store).is_empty(), "{:?}", own_blobs(&store));

    // A change costs its own blobs: the edited file's and the new one's, nothing else.
    std::fs::write(top.join("d0/f1.txt"), "edited\n").unwrap();
    std::fs::write(top.join("new.txt"), "new\n").unwrap();
    git(top, &["add", "new.txt"]);
    std::fs::write(top.join("untracked.txt"), "untracked\n").unwrap();
    let then = store.checkpoint("second").unwrap();
    let mut expected = vec![hash(top, "d0/f1.txt"), hash(top, "untracked.txt")];
    expected.sort();
    // new.txt's blob is the user's (git add wrote it): borrowed, not stored.
    assert_eq!(own_blobs(&store), expected);

    // Borrowed content comes back like the store's own.
    std::fs::write(top.join("d3/f150.txt"), "squad's\n").unwrap();
    std::fs::remove_file(top.join("d1/f50.txt")).unwrap();
    store.restore(&id, true).unwrap();
    assert_eq!(
        std::fs::read_to_string(top.join("d3/f150.txt")).unwrap(),
        "150\n".repeat(1000)
    );
    assert!(top.join("d1/f50.txt").is_file());
    assert!(!top.join("new.txt").exists() && !top.join("untracked.txt").exists());
    store.restore(&then, true).unwrap();
    assert_eq!(
        std::fs::read_to_string(top.join("d0/f1.txt")).unwrap(),
        "edited\n"
    );
}

/// A file the user told git to overlook (`--assume-unchanged`) is still seen to change.
#[test]
fn an_assumed_unchanged_file_is_still_checkpointed() {
    let ws = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let top = ws.path();
    std::fs::write(top.join("conf"), "user\n").unwrap();
    git(top, &["init", "-q"]);
    git(top, &["add", "-A"]);
    git(top, &["commit", "-qm", "user"]);
    git(top, &["update-index", "--assume-unchanged", "conf"]);
    std::fs::write(top.join("conf"), "local, longer\n").unwrap();
    let store = CheckpointStore::open(data.path(), top).unwrap();
    let id = store.checkpoint("first").unwrap();
    std::fs::write(top.join("conf"), "squad\n").unwrap();
    let changed = store.changes_since(&id).unwrap();
    assert_eq!(changed.len(), 1, "{changed:?}");
    store.restore(&id, true).unwrap();
    assert_eq!(
        std::fs::read_to_string(top.join("conf")).unwrap(),
        "local, longer\n"
    );
}

#[test]
fn outside_git_a_checkpoint_stores_only_what_differs_from_the_last() {
    let ws = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let top = ws.path();
    files(top, 100);
    let store = CheckpointStore::open(data.path(), top).unwrap();
    store.checkpoint("first").unwrap();
    let first = own_blobs(&store);
    assert_eq!(first.len(), 100, "outside git, the first holds every file");
    std::fs::write(top.join("d1/f60.txt"), "edited\n").unwrap();
    store.checkpoint("second").unwrap();
    let second = own_blobs(&store);
    let added: Vec<&String> = second.iter().filter(|b| !first.contains(b)).collect();
    assert_eq!(added, vec![&hash_outside(top, "d1/f60.txt")]);
}

fn hash_outside(top: &Path, rel: &str) -> String {
    let out = std::process::Command::new("git")
        .args(["hash-object", "--no-filters"])
        .arg(top.join(rel))
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A store unused for `days` days.
fn store_idle(data: &Path, days: u64) -> (tempfile::TempDir, PathBuf) {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("f"), "x".repeat(10_000)).unwrap();
    let store = CheckpointStore::open(data, ws.path()).unwrap();
    store.checkpoint("c").unwrap();
    let dir = store.git_dir().to_path_buf();
    drop(store);
    age(&dir, days);
    (ws, dir)
}

fn age(dir: &Path, days: u64) {
    let then = SystemTime::now() - Duration::from_secs(days * 86_400);
    for name in [live::LIVE, "index"] {
        let f = std::fs::File::options()
            .append(true)
            .open(dir.join(name))
            .unwrap();
        f.set_modified(then).unwrap();
    }
}

use std::path::PathBuf;

#[test]
fn old_stores_go_and_one_a_session_holds_stays() {
    let data = tempfile::tempdir().unwrap();
    let (old_ws, old) = store_idle(data.path(), 30);
    let (live_ws, held) = store_idle(data.path(), 30);
    let (_young_ws, young) = store_idle(data.path(), 1);
    // A session that has run for a month without a checkpoint.
    let _claim = Live::claim(data.path(), live_ws.path()).unwrap();
    age(&held, 30);
    let keep = Keep {
        max_age: Duration::from_secs(14 * 86_400),
        max_bytes: u64::MAX,
    };
    let pruned = prune(data.path(), keep, true);
    assert!(!old.exists(), "the old store went");
    assert!(held.exists(), "the store a session holds stayed");
    assert!(young.exists(), "the young store stayed");
    assert_eq!(pruned.removed.len(), 1);
    assert_eq!(pruned.live, 1);
    let ws = old_ws.path().canonicalize().unwrap();
    assert_eq!(pruned.removed[0].workspace.as_deref(), Some(ws.as_path()));
    assert!(pruned_text(&pruned).contains(&ws.display().to_string()));
    // Not asked by age and under the cap: nothing goes.
    let (_ws, again) = store_idle(data.path(), 30);
    assert!(prune(data.path(), keep, false).removed.is_empty());
    assert!(again.exists());
    // A store is made anew where one was removed.
    let store = CheckpointStore::open(data.path(), old_ws.path()).unwrap();
    store.checkpoint("again").unwrap();
}

#[test]
fn past_the_size_cap_the_least_recently_used_go_first() {
    let data = tempfile::tempdir().unwrap();
    let (_a, oldest) = store_idle(data.path(), 3);
    let (_b, older) = store_idle(data.path(), 2);
    let (_c, newest) = store_idle(data.path(), 1);
    let each = prune::size(&newest);
    let keep = Keep {
        max_age: Duration::from_secs(14 * 86_400),
        max_bytes: each * 2 + each / 2,
    };
    let pruned = prune(data.path(), keep, false);
    assert_eq!(pruned.removed.len(), 1, "{pruned:?}");
    assert!(!oldest.exists() && older.exists() && newest.exists());
}
