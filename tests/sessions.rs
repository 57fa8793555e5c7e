//! Sessions per folder, on the real binary against the mock server: `--resume last` and
//! `--continue` go on with the newest session of the folder squad runs in, never another
//! folder's; another folder's session is taken only by its id, and named with its folder
//! before it goes on; `squad sessions` lists this folder's (`--all`: every folder's, this
//! one's first) and leaves `squad review` runs out unless asked (`--reviews`).

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use std::path::Path;

/// `squad ARGS…` in `dir`, with the sandbox's home, data and config.
async fn run_in(sb: &Sandbox, dir: &Path, mock: Option<&MockServer>, args: &[&str]) -> Run {
    let mut cmd = sb.command(mock);
    cmd.current_dir(dir)
        .args(args)
        .stdin(std::process::Stdio::null());
    let out = tokio::time::timeout(std::time::Duration::from_secs(60), cmd.output())
        .await
        .expect("squad finishes within 60 s")
        .unwrap();
    Run::from(out)
}

/// The session id of an `exec --json` run.
fn session_id(run: &Run) -> String {
    let events = run.events();
    of_type(&events, "session_started")[0]["session_id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Two folders, a session in each, the other folder's the newer: `--resume last` in the
/// first goes on with its own, and so does `--continue` alone.
#[tokio::test(flavor = "multi_thread")]
async fn resume_last_and_continue_pick_this_folders_newest_session() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    let other = tempfile::tempdir().unwrap();
    let (here, there) = (sb.ws().to_path_buf(), other.path().to_path_buf());

    mock.push(MockResponse::text("done here"));
    let run = run_in(&sb, &here, Some(&mock), &["exec", "--json", "work here"]).await;
    run.assert_ok();
    let here_id = session_id(&run);
    mock.push(MockResponse::text("done there"));
    let run = run_in(&sb, &there, Some(&mock), &["exec", "--json", "work there"]).await;
    run.assert_ok();
    let there_id = session_id(&run);
    assert_ne!(here_id, there_id);

    mock.push(MockResponse::text("again here"));
    let run = run_in(
        &sb,
        &here,
        Some(&mock),
        &["exec", "--json", "--resume", "last", "and again"],
    )
    .await;
    run.assert_ok();
    assert_eq!(session_id(&run), here_id, "{}", run.stderr);
    let t = transcript(&mock.requests().last().unwrap().body);
    let said: Vec<&str> = t.iter().map(|(_, text)| text.as_str()).collect();
    assert!(said.contains(&"work here"), "{said:?}");
    assert!(!said.contains(&"work there"), "{said:?}");
    // Its own folder's session is not announced as another's.
    assert!(!run.stderr.contains("another folder"), "{}", run.stderr);

    // `--continue` alone: this folder's last session (nothing of it was interrupted).
    let run = run_in(&sb, &there, Some(&mock), &["exec", "--json", "--continue"]).await;
    assert_ne!(run.code, 2, "--continue needs no --resume: {}", run.stderr);
    assert_eq!(session_id(&run), there_id, "{}", run.stderr);

    // A folder with no session: `last` names the way to the others, and nothing is sent.
    let empty = tempfile::tempdir().unwrap();
    let before = mock.requests().len();
    let run = run_in(
        &sb,
        empty.path(),
        Some(&mock),
        &["exec", "--resume", "last", "hello"],
    )
    .await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    let line = run.stderr.lines().last().unwrap();
    assert!(
        line.starts_with("squad: no saved session of this folder (")
            && line.contains("squad sessions --all")
            && line.contains("--resume ID"),
        "{line}"
    );
    assert_eq!(mock.requests().len(), before);
}

/// Another folder's session by its id: named with its folder before it goes on here.
#[tokio::test(flavor = "multi_thread")]
async fn another_folders_session_is_taken_by_id_and_named() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    let other = tempfile::tempdir().unwrap();
    mock.push(MockResponse::text("done there"));
    let run = run_in(
        &sb,
        other.path(),
        Some(&mock),
        &["exec", "--json", "work there"],
    )
    .await;
    run.assert_ok();
    let there_id = session_id(&run);

    mock.push(MockResponse::text("continued here"));
    let run = run_in(
        &sb,
        sb.ws(),
        Some(&mock),
        &["exec", "--resume", &there_id, "go on"],
    )
    .await;
    run.assert_ok();
    let there = other.path().canonicalize().unwrap();
    let named = run
        .stderr
        .lines()
        .find(|l| l.contains("another folder"))
        .unwrap_or_else(|| panic!("not named: {}", run.stderr));
    assert!(
        named.starts_with(&format!("squad: session {there_id} is of another folder, "))
            && named.contains(&there.display().to_string()),
        "{named}"
    );
    // Named before it is used: the line comes before the run's first progress.
    let first = run.stderr.lines().next().unwrap();
    assert_eq!(first, named, "{}", run.stderr);
    let t = transcript(&mock.requests().last().unwrap().body);
    assert!(t.iter().any(|(_, text)| text == "work there"), "{t:?}");
}

/// `squad sessions` lists this folder's, says how many others there are, and leaves out
/// review runs; `--all` and `--reviews` show them.
#[tokio::test(flavor = "multi_thread")]
async fn sessions_lists_this_folders_first_and_leaves_reviews_out() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    let other = tempfile::tempdir().unwrap();
    git(sb.ws(), &["init", "-q", "-b", "main"]);
    sb.write("a.txt", "one\n");
    git(sb.ws(), &["add", "."]);
    git(sb.ws(), &["commit", "-q", "-m", "a"]);
    sb.write("a.txt", "two\n");

    mock.push(MockResponse::text("ok"));
    run_in(&sb, sb.ws(), Some(&mock), &["exec", "mine"])
        .await
        .assert_ok();
    mock.push(MockResponse::text("ok"));
    run_in(&sb, other.path(), Some(&mock), &["exec", "theirs"])
        .await
        .assert_ok();
    // A review: every reviewer finds nothing.
    mock.set_responder(|_| MockResponse::text("```json\n{\"findings\":[]}\n```"));
    run_in(&sb, sb.ws(), Some(&mock), &["review"])
        .await
        .assert_ok();

    let run = run_in(&sb, sb.ws(), None, &["sessions"]).await;
    run.assert_ok();
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{}", run.stdout);
    assert!(lines[0].ends_with("  mine"), "{}", run.stdout);
    assert_eq!(
        run.stderr.trim(),
        "1 session of other folders (--all); 1 review left out (--reviews)"
    );

    let run = run_in(&sb, sb.ws(), None, &["sessions", "--all", "--reviews"]).await;
    run.assert_ok();
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", run.stdout);
    // This folder's first (newest first among them), then the other folder's.
    assert!(lines[0].ends_with("(review)"), "{}", run.stdout);
    assert!(lines[1].ends_with("  mine"), "{}", run.stdout);
    assert!(lines[2].ends_with("  theirs"), "{}", run.stdout);
    let there = other.path().canonicalize().unwrap();
    assert!(
        lines[2].contains(&there.display().to_string()),
        "{}",
        run.stdout
    );
    assert_eq!(run.stderr.trim(), "");

    // `--resume last` skips the review run: the session goes on with "mine".
    mock.set_responder(|_| MockResponse::text("again"));
    run_in(
        &sb,
        sb.ws(),
        Some(&mock),
        &["exec", "--resume", "last", "again"],
    )
    .await
    .assert_ok();
    let t = transcript(&mock.requests().last().unwrap().body);
    assert!(t.iter().any(|(_, text)| text == "mine"), "{t:?}");
}

/// Sets the last use of the checkpoint store of `ws` to `days` ago.
fn age_store(data: &Path, ws: &Path, days: u64) -> std::path::PathBuf {
    let dir = ::squad::checkpoint::CheckpointStore::dir_for(data, &ws.canonicalize().unwrap());
    let then = std::time::SystemTime::now() - std::time::Duration::from_secs(days * 86_400);
    for name in ["squad-live", "index"] {
        let f = std::fs::File::options()
            .append(true)
            .open(dir.join(name))
            .unwrap();
        f.set_modified(then).unwrap();
    }
    dir
}

/// `squad sessions --prune` removes the checkpoints of workspaces unused for
/// `checkpoints.keep_days`, but never those a running session holds (issue 49).
#[tokio::test(flavor = "multi_thread")]
async fn prune_removes_old_checkpoints_but_not_a_live_sessions() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config("[checkpoints]\nkeep_days = 7\n");
    let (old, held, young) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    mock.set_responder(|_| MockResponse::text("ok"));
    for ws in [old.path(), held.path(), young.path()] {
        std::fs::write(ws.join("f.txt"), "x").unwrap();
        run_in(&sb, ws, Some(&mock), &["exec", "hello"])
            .await
            .assert_ok();
    }
    let data = sb.data_dir();
    // A session still running in `held` (started ten days ago).
    let _live = ::squad::checkpoint::Live::claim(&data, held.path()).unwrap();
    let old_store = age_store(&data, old.path(), 10);
    let held_store = age_store(&data, held.path(), 10);
    let young_store = age_store(&data, young.path(), 3);

    let run = run_in(&sb, sb.ws(), None, &["sessions", "--prune"]).await;
    run.assert_ok();
    let gone = old.path().canonicalize().unwrap();
    assert!(
        run.stdout
            .contains(&format!("removed the checkpoints of {}", gone.display())),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("kept 1"), "{}", run.stdout);
    assert!(!old_store.exists());
    assert!(held_store.exists(), "a live session's store stays");
    assert!(young_store.exists());
    // The sessions themselves are still listed.
    let run = run_in(&sb, old.path(), None, &["sessions"]).await;
    assert!(run.stdout.contains("hello"), "{}", run.stdout);
}
