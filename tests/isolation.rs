//! Worktree isolation on real temporary git repositories that hold the user's uncommitted
//! (staged and unstaged) and untracked changes: creating a worker's worktree, merging
//! workers back one at a time, conflicts, redo after a conflict, clean-up, stale
//! clean-up, and file leases outside git. Every git command here carries its identity in
//! the environment, so no global git configuration is needed or touched.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{git, git_output};
use squad::config::IsolationMode;
use squad::isolation::{self, ChangeKind, Isolation, MergeOutcome, Repo, Worktrees, remove_stale};
use squad::protocol::AgentId;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tempfile::TempDir;

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn read(dir: &Path, rel: &str) -> String {
    std::fs::read_to_string(dir.join(rel)).unwrap()
}

/// Ten numbered lines, one of them replaced.
fn lines_with(n: usize, replacement: &str) -> String {
    (1..=10)
        .map(|i| {
            if i == n {
                format!("{replacement}\n")
            } else {
                format!("line {i}\n")
            }
        })
        .collect()
}

/// A workspace the way a user leaves it mid-work, and squad's data dir beside it.
struct Fixture {
    _tmp: TempDir,
    ws: PathBuf,
    data: PathBuf,
}

impl Fixture {
    /// Committed: `a.txt` (ten lines), `b.txt`, `dir with space/c.txt`, `.gitignore`.
    /// Then, uncommitted: `b.txt` edited (unstaged); `dir with space/c.txt` edited and
    /// staged, then edited again (the index differs from both HEAD and the file);
    /// `notes.md` untracked; `target/out.o` ignored.
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("work space");
        let data = tmp.path().join("squad data");
        std::fs::create_dir_all(&ws).unwrap();
        git(&ws, &["init", "-q"]);
        write(&ws, "a.txt", &lines_with(0, ""));
        write(&ws, "b.txt", "b committed\n");
        write(&ws, "dir with space/c.txt", "c committed\n");
        write(&ws, ".gitignore", "target/\n");
        git(&ws, &["add", "-A"]);
        git(&ws, &["commit", "-qm", "start"]);
        write(&ws, "b.txt", "b user edit\n");
        write(&ws, "dir with space/c.txt", "c staged\n");
        git(&ws, &["add", "dir with space/c.txt"]);
        write(&ws, "dir with space/c.txt", "c staged then edited\n");
        write(&ws, "notes.md", "user notes\n");
        write(&ws, "target/out.o", "build output\n");
        Fixture {
            _tmp: tmp,
            ws,
            data,
        }
    }

    fn worktrees(&self, session: &str) -> Worktrees {
        let repo = Repo::discover(&self.ws).unwrap();
        Worktrees::open(repo, &self.data, session).unwrap()
    }

    /// What must never change behind the user's back: HEAD, the index, the commits.
    fn git_state(&self) -> (String, String, String) {
        (
            git(&self.ws, &["rev-parse", "HEAD"]),
            git(&self.ws, &["ls-files", "--stage"]),
            git(
                &self.ws,
                &["log", "--exclude=squad/*", "--branches", "--format=%H %s"],
            ),
        )
    }

    /// Every file of the workspace but `.git`, with its content.
    fn files(&self) -> BTreeMap<String, String> {
        files_under(&self.ws)
    }
}

fn files_under(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if entry.file_name() == ".git" {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.insert(
                    rel,
                    String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into(),
                );
            }
        }
    }
    out
}

fn squad_branches(ws: &Path) -> String {
    git(ws, &["branch", "--list", "squad/*"])
}

#[tokio::test]
async fn a_worktree_starts_from_the_users_uncommitted_and_untracked_state() {
    let fx = Fixture::new();
    let (state, files) = (fx.git_state(), fx.files());
    let status = git(&fx.ws, &["status", "--porcelain"]);
    let w = fx.worktrees("s1");
    let agent = AgentId::new();
    let root = w.create(agent).await.unwrap();

    assert!(
        root.starts_with(&fx.data),
        "outside the workspace: {root:?}"
    );
    assert_eq!(read(&root, "b.txt"), "b user edit\n");
    assert_eq!(
        read(&root, "dir with space/c.txt"),
        "c staged then edited\n"
    );
    assert_eq!(read(&root, "notes.md"), "user notes\n");
    assert!(!root.join("target").exists(), "ignored files stay out");
    assert_eq!(
        files_under(&root).len(),
        files.len() - 1,
        "all but the ignored file"
    );

    // The user's side: nothing moved.
    assert_eq!(fx.git_state(), state);
    assert_eq!(fx.files(), files);
    assert_eq!(git(&fx.ws, &["status", "--porcelain"]), status);
    let branch = format!("squad/{}", agent.short());
    assert!(squad_branches(&fx.ws).contains(&branch));
    assert!(git(&fx.ws, &["worktree", "list"]).contains(root.to_str().unwrap()));

    // Nothing changed yet, so the diff is empty.
    assert!(w.diff(agent).await.unwrap().is_empty());
}

/// Waits (up to a minute: checking out 10,000 files on a busy disk is slow) for the spare
/// the last `create` started to be ready.
async fn spare_made(w: &Worktrees) {
    for _ in 0..600 {
        if w.spare_ready() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("no spare worktree after a minute");
}

#[tokio::test]
async fn a_worktree_made_from_a_warm_spare_is_the_same_as_a_fresh_one() {
    let fx = Fixture::new();
    // Committed, then deleted by the user: the spare (at HEAD) has it, the worker must not.
    write(&fx.ws, "old.txt", "old\n");
    git(&fx.ws, &["add", "old.txt"]);
    git(&fx.ws, &["commit", "-qm", "old", "--", "old.txt"]);
    std::fs::remove_file(fx.ws.join("old.txt")).unwrap();
    let (state, files) = (fx.git_state(), fx.files());
    let w = fx.worktrees("s1");
    w.warm().await;
    assert!(w.spare_ready());

    let (a, b) = (AgentId::new(), AgentId::new());
    let ra = w.create(a).await.unwrap();
    assert!(!ra.join("old.txt").exists());
    assert_eq!(read(&ra, "b.txt"), "b user edit\n");
    assert_eq!(read(&ra, "dir with space/c.txt"), "c staged then edited\n");
    assert_eq!(read(&ra, "notes.md"), "user notes\n");
    assert_eq!(files_under(&ra).len(), files.len() - 1);
    assert!(w.diff(a).await.unwrap().is_empty());
    assert!(squad_branches(&fx.ws).contains(&format!("squad/{}", a.short())));
    assert_eq!(fx.git_state(), state);

    // Used spares are replaced, and the next worker gets one too.
    spare_made(&w).await;
    let rb = w.create(b).await.unwrap();
    write(&rb, "from_b.txt", "b\n");
    assert_eq!(
        merged(w.merge(b).await.unwrap()),
        vec!["from_b.txt".into()] as Vec<String>
    );
    spare_made(&w).await;

    // Closing removes the spare; removing the workers leaves only the user's worktree.
    w.close().await.unwrap();
    assert!(!w.spare_ready());
    w.remove(a).await.unwrap();
    w.remove(b).await.unwrap();
    let list = git(&fx.ws, &["worktree", "list", "--porcelain"]);
    assert_eq!(
        list.lines().filter(|l| l.starts_with("worktree ")).count(),
        1,
        "{list}"
    );
    assert_eq!(squad_branches(&fx.ws), "");
}

#[tokio::test]
async fn two_workers_on_different_files_merge_one_after_the_other() {
    let fx = Fixture::new();
    let state = fx.git_state();
    let w = fx.worktrees("s1");
    let (a, b) = (AgentId::new(), AgentId::new());
    let (ra, rb) = (w.create(a).await.unwrap(), w.create(b).await.unwrap());
    let before = fx.files();

    write(&ra, "a.txt", &lines_with(2, "two by A"));
    write(&ra, "src/new_a.rs", "fn a() {}\n");
    write(&rb, "a.txt", &lines_with(9, "nine by B"));
    write(&rb, "dir with space/d.txt", "d by B\n");

    // While they work, the workspace does not change.
    assert_eq!(fx.files(), before);
    let da = w.diff(a).await.unwrap();
    assert_eq!(da.label(), "+2 \u{2212}1");
    assert_eq!(
        da.files
            .iter()
            .map(|f| (f.path.as_str(), f.kind))
            .collect::<Vec<_>>(),
        [
            ("a.txt", ChangeKind::Modified),
            ("src/new_a.rs", ChangeKind::Added)
        ]
    );
    let text = w.diff_text(a).await.unwrap();
    assert!(text.contains("+two by A"), "{text}");
    assert!(text.contains("+fn a() {}"), "{text}");

    let (ma, mb) = tokio::join!(w.merge(a), w.merge(b));
    assert_eq!(
        merged(ma.unwrap()),
        vec!["a.txt".into(), "src/new_a.rs".into()] as Vec<String>
    );
    assert_eq!(
        merged(mb.unwrap()),
        vec!["a.txt".into(), "dir with space/d.txt".into()] as Vec<String>
    );

    let a_txt = read(&fx.ws, "a.txt");
    assert!(
        a_txt.contains("two by A") && a_txt.contains("nine by B"),
        "{a_txt}"
    );
    assert_eq!(read(&fx.ws, "src/new_a.rs"), "fn a() {}\n");
    assert_eq!(read(&fx.ws, "dir with space/d.txt"), "d by B\n");
    // The user's own work is intact and nothing was committed or staged.
    assert_eq!(read(&fx.ws, "b.txt"), "b user edit\n");
    assert_eq!(
        read(&fx.ws, "dir with space/c.txt"),
        "c staged then edited\n"
    );
    assert_eq!(read(&fx.ws, "notes.md"), "user notes\n");
    assert_eq!(read(&fx.ws, "target/out.o"), "build output\n");
    assert_eq!(fx.git_state(), state);

    // Merged work is not merged twice.
    assert_eq!(w.merge(a).await.unwrap(), MergeOutcome::Unchanged);
}

#[tokio::test]
async fn the_same_line_twice_merges_first_and_reports_the_second_as_a_conflict() {
    let fx = Fixture::new();
    let w = fx.worktrees("s1");
    let (a, b) = (AgentId::new(), AgentId::new());
    let (ra, rb) = (w.create(a).await.unwrap(), w.create(b).await.unwrap());
    write(&ra, "a.txt", &lines_with(5, "five by A"));
    write(&rb, "a.txt", &lines_with(5, "five by B"));
    write(&rb, "b_only.txt", "B's other file\n");

    let (ma, mb) = tokio::join!(w.merge(a), w.merge(b));
    assert!(matches!(ma.unwrap(), MergeOutcome::Merged { .. }));
    let after_first = fx.files();
    let MergeOutcome::Conflict { conflicts } = mb.unwrap() else {
        panic!("expected a conflict");
    };
    assert_eq!(conflicts.len(), 1, "{conflicts:?}");
    let c = &conflicts[0];
    assert_eq!(c.path, "a.txt");
    assert_eq!(c.kind, "contents");
    assert_eq!(c.hunks.len(), 1);
    assert_eq!(
        (c.hunks[0].workspace.start, c.hunks[0].workspace.count),
        (5, 1)
    );
    assert_eq!((c.hunks[0].worker.start, c.hunks[0].worker.count), (5, 1));
    assert_eq!(
        c.to_string(),
        "a.txt (contents): workspace line 5 vs worker line 5"
    );

    // The failed merge changed nothing, B's other file included; no markers anywhere.
    assert_eq!(fx.files(), after_first);
    assert!(read(&fx.ws, "a.txt").contains("five by A"));
    assert!(!fx.ws.join("b_only.txt").exists());
    for (path, text) in fx.files() {
        assert!(!text.contains("<<<<<<<"), "markers in {path}");
    }
}

#[tokio::test]
async fn after_a_redo_on_the_current_state_the_next_merge_is_clean() {
    let fx = Fixture::new();
    let w = fx.worktrees("s1");
    let (a, b) = (AgentId::new(), AgentId::new());
    let (ra, rb) = (w.create(a).await.unwrap(), w.create(b).await.unwrap());
    write(&ra, "a.txt", &lines_with(5, "five by A"));
    write(&rb, "a.txt", &lines_with(5, "five by B"));
    write(&rb, "b_only.txt", "B's other file\n");
    assert!(matches!(
        w.merge(a).await.unwrap(),
        MergeOutcome::Merged { .. }
    ));
    assert!(matches!(
        w.merge(b).await.unwrap(),
        MergeOutcome::Conflict { .. }
    ));
    let workspace = fx.files();

    let conflicts = w.redo(b).await.unwrap();
    assert_eq!(conflicts.len(), 1);
    assert_eq!(conflicts[0].path, "a.txt");
    // Markers in the worktree only, labelled in words; B's other work kept.
    let marked = read(&rb, "a.txt");
    assert!(
        marked.contains("<<<<<<< workspace (current)\nfive by A\n"),
        "{marked}"
    );
    assert!(
        marked.contains("=======\nfive by B\n>>>>>>> your change\n"),
        "{marked}"
    );
    assert_eq!(read(&rb, "b_only.txt"), "B's other file\n");
    assert_eq!(fx.files(), workspace);
    // The worker's own `git diff` shows its change on top of the current state.
    let wt_diff = git(&rb, &["diff"]);
    assert!(
        wt_diff.contains("+<<<<<<< workspace (current)"),
        "{wt_diff}"
    );

    // The worker settles it; now the merge is clean and brings both of its changes.
    write(&rb, "a.txt", &lines_with(5, "five by A and B"));
    assert_eq!(
        merged(w.merge(b).await.unwrap()),
        vec!["a.txt".into(), "b_only.txt".into()] as Vec<String>
    );
    assert_eq!(read(&fx.ws, "a.txt"), lines_with(5, "five by A and B"));
    assert_eq!(read(&fx.ws, "b_only.txt"), "B's other file\n");
    assert_eq!(read(&fx.ws, "b.txt"), "b user edit\n");
}

#[tokio::test]
async fn a_users_edit_after_the_worker_started_is_merged_with_not_overwritten() {
    let fx = Fixture::new();
    let w = fx.worktrees("s1");
    let a = AgentId::new();
    let ra = w.create(a).await.unwrap();
    write(&ra, "a.txt", &lines_with(2, "two by A"));
    // The user goes on working while the worker runs: another line of the same file,
    // and a file the worker deletes but the user changed.
    write(&fx.ws, "a.txt", &lines_with(8, "eight by the user"));
    std::fs::remove_file(ra.join("notes.md")).unwrap();
    write(&fx.ws, "notes.md", "user notes, more\n");

    let MergeOutcome::Conflict { conflicts } = w.merge(a).await.unwrap() else {
        panic!("the deletion of a file the user changed must conflict");
    };
    assert_eq!(conflicts.len(), 1, "{conflicts:?}");
    assert_eq!(conflicts[0].path, "notes.md");
    assert_eq!(conflicts[0].kind, "modify/delete");
    assert!(
        conflicts[0].message.contains("the workspace"),
        "{}",
        conflicts[0].message
    );
    assert_eq!(read(&fx.ws, "a.txt"), lines_with(8, "eight by the user"));

    // The worker puts the file back; then both edits of a.txt meet cleanly.
    write(&ra, "notes.md", "user notes, more\n");
    assert_eq!(
        merged(w.merge(a).await.unwrap()),
        vec!["a.txt".into()] as Vec<String>
    );
    let a_txt = read(&fx.ws, "a.txt");
    assert!(
        a_txt.contains("two by A") && a_txt.contains("eight by the user"),
        "{a_txt}"
    );
}

#[tokio::test]
async fn deleted_new_and_binary_files_merge_and_a_binary_clash_is_named() {
    let fx = Fixture::new();
    write(&fx.ws, "logo.bin", "\0\x01\x02 original");
    git(&fx.ws, &["add", "logo.bin"]);
    git(&fx.ws, &["commit", "-qm", "logo", "--", "logo.bin"]);
    let w = fx.worktrees("s1");
    let (a, b) = (AgentId::new(), AgentId::new());
    let (ra, rb) = (w.create(a).await.unwrap(), w.create(b).await.unwrap());
    std::fs::remove_file(ra.join("dir with space/c.txt")).unwrap();
    std::fs::write(ra.join("logo.bin"), b"\0\x01\x02 by A").unwrap();
    std::fs::write(ra.join("icon.bin"), b"\0\xff new").unwrap();
    std::fs::write(rb.join("logo.bin"), b"\0\x01\x02 by B").unwrap();

    let summary = w.diff(a).await.unwrap();
    assert!(
        summary
            .files
            .iter()
            .any(|f| f.path == "logo.bin" && f.binary)
    );
    assert!(
        summary
            .files
            .iter()
            .any(|f| f.path == "dir with space/c.txt" && f.kind == ChangeKind::Deleted)
    );
    assert_eq!(
        merged(w.merge(a).await.unwrap()),
        vec![
            "dir with space/c.txt".into(),
            "icon.bin".into(),
            "logo.bin".into()
        ] as Vec<String>
    );
    assert!(
        !fx.ws.join("dir with space").exists(),
        "an emptied folder goes too"
    );
    assert_eq!(
        std::fs::read(fx.ws.join("icon.bin")).unwrap(),
        b"\0\xff new"
    );
    assert_eq!(
        std::fs::read(fx.ws.join("logo.bin")).unwrap(),
        b"\0\x01\x02 by A"
    );

    let MergeOutcome::Conflict { conflicts } = w.merge(b).await.unwrap() else {
        panic!("both changed the binary file");
    };
    assert_eq!(conflicts[0].path, "logo.bin");
    assert_eq!(conflicts[0].kind, "binary");
    assert!(conflicts[0].hunks.is_empty());
    assert_eq!(
        std::fs::read(fx.ws.join("logo.bin")).unwrap(),
        b"\0\x01\x02 by A"
    );
}

#[tokio::test]
async fn a_repository_without_commits_and_a_workspace_below_its_top_work() {
    let tmp = tempfile::tempdir().unwrap();
    let top = tmp.path().join("repo");
    let ws = top.join("sub dir");
    std::fs::create_dir_all(&ws).unwrap();
    git(&top, &["init", "-q"]);
    write(&ws, "main.txt", "hello\n");
    write(&top, "outside.txt", "above the workspace\n");

    let repo = Repo::discover(&ws).unwrap();
    assert_eq!(repo.prefix, PathBuf::from("sub dir"));
    let w = Worktrees::open(repo, &tmp.path().join("data"), "s1").unwrap();
    let a = AgentId::new();
    let root = w.create(a).await.unwrap();
    assert!(root.ends_with("sub dir"), "{root:?}");
    assert_eq!(read(&root, "main.txt"), "hello\n");
    write(&root, "main.txt", "hello, world\n");
    write(&root, "added.txt", "new\n");

    let MergeOutcome::Merged { files, .. } = w.merge(a).await.unwrap() else {
        panic!("clean merge");
    };
    assert_eq!(files, ["sub dir/added.txt", "sub dir/main.txt"]);
    assert_eq!(read(&ws, "main.txt"), "hello, world\n");
    assert_eq!(read(&top, "outside.txt"), "above the workspace\n");
    // Still no commit on the user's side, and nothing staged.
    assert!(
        !git_output(&top, &["rev-parse", "--verify", "-q", "HEAD"])
            .status
            .success()
    );
    assert_eq!(git(&top, &["ls-files", "--stage"]), "");
}

#[tokio::test]
async fn a_repository_with_a_submodule_keeps_it_as_it_is() {
    let tmp = tempfile::tempdir().unwrap();
    let lib = tmp.path().join("lib");
    std::fs::create_dir_all(&lib).unwrap();
    git(&lib, &["init", "-q"]);
    write(&lib, "lib.txt", "lib\n");
    git(&lib, &["add", "-A"]);
    git(&lib, &["commit", "-qm", "lib"]);
    let ws = tmp.path().join("app");
    std::fs::create_dir_all(&ws).unwrap();
    git(&ws, &["init", "-q"]);
    write(&ws, "app.txt", "app\n");
    let lib_url = lib.to_str().unwrap();
    git(
        &ws,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            lib_url,
            "vendor/lib",
        ],
    );
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-qm", "app"]);
    let state = (
        git(&ws, &["rev-parse", "HEAD"]),
        git(&ws, &["ls-files", "--stage"]),
    );

    let w = Worktrees::open(Repo::discover(&ws).unwrap(), &tmp.path().join("data"), "s1").unwrap();
    let a = AgentId::new();
    let root = w.create(a).await.unwrap();
    // git does not populate submodules in a new worktree: the folder is there, empty.
    assert!(root.join("vendor/lib").is_dir());
    assert!(!root.join("vendor/lib/lib.txt").exists());
    write(&root, "app.txt", "app by A\n");
    let summary = w.diff(a).await.unwrap();
    assert_eq!(
        summary.files.len(),
        1,
        "the empty submodule is no change: {summary:?}"
    );
    assert_eq!(
        merged(w.merge(a).await.unwrap()),
        vec!["app.txt".into()] as Vec<String>
    );
    assert_eq!(read(&ws, "vendor/lib/lib.txt"), "lib\n");
    assert_eq!(
        (
            git(&ws, &["rev-parse", "HEAD"]),
            git(&ws, &["ls-files", "--stage"])
        ),
        state
    );
    assert!(w.remove(a).await.unwrap());
    assert!(!root.exists());
    assert_eq!(squad_branches(&ws), "");
}

#[tokio::test]
async fn removing_a_worker_removes_its_worktree_and_branch() {
    let fx = Fixture::new();
    let w = fx.worktrees("s1");
    let (a, b) = (AgentId::new(), AgentId::new());
    let ra = w.create(a).await.unwrap();
    let rb = w.create(b).await.unwrap();
    write(&ra, "unmerged.txt", "discarded work\n");

    assert!(w.remove(a).await.unwrap());
    assert!(!ra.exists());
    assert!(!git(&fx.ws, &["worktree", "list"]).contains(ra.to_str().unwrap()));
    let branches = squad_branches(&fx.ws);
    assert!(!branches.contains(&a.short()), "{branches}");
    assert!(
        branches.contains(&b.short()),
        "the other worker keeps its own: {branches}"
    );
    assert!(rb.exists());
    assert!(!fx.ws.join("unmerged.txt").exists());
    assert!(
        !w.remove(a).await.unwrap(),
        "a second removal has nothing to do"
    );
    assert!(w.root(a).is_none());

    assert!(w.remove(b).await.unwrap());
    assert_eq!(squad_branches(&fx.ws), "");
    assert_eq!(
        git(&fx.ws, &["worktree", "list", "--porcelain"])
            .lines()
            .filter(|l| l.starts_with("worktree "))
            .count(),
        1,
        "only the user's own"
    );
}

/// `remove_stale` once a dead session's lock is free. Other tests of this binary start
/// git processes all the time, and a child forked at the moment the session is dropped
/// holds a copy of its lock's file descriptor until it execs: for that instant the session
/// still looks alive (a real start would clean it up the next time).
async fn remove_stale_once_unlocked(data: &Path) -> Vec<isolation::Removed> {
    for _ in 0..100 {
        let removed = remove_stale(data);
        if !removed.is_empty() {
            return removed;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    Vec::new()
}

#[tokio::test]
async fn worktrees_of_sessions_that_no_longer_run_are_removed_at_start() {
    let fx = Fixture::new();
    let live = fx.worktrees("live-session");
    let live_root = live.create(AgentId::new()).await.unwrap();
    let (dead_agent, dead_root) = {
        let dead = fx.worktrees("dead-session");
        // Its spare goes too, without being reported (it held no one's work).
        dead.warm().await;
        assert!(dead.spare_ready());
        let agent = AgentId::new();
        let root = dead.create(agent).await.unwrap();
        // (the replacement spare, made in the background, is left behind too)
        spare_made(&dead).await;
        (agent, root)
        // `dead` goes away without removing anything, as a killed process would; its
        // lock goes with it.
    };
    let repo_top = Repo::discover(&fx.ws).unwrap().top;

    let removed = remove_stale_once_unlocked(&fx.data).await;
    assert_eq!(removed.len(), 1, "{removed:?}");
    assert_eq!(removed[0].session, "dead-session");
    assert_eq!(removed[0].branch, format!("squad/{}", dead_agent.short()));
    assert_eq!(removed[0].problem, None);
    assert!(!removed[0].kept, "it had changed nothing");
    assert!(!dead_root.exists());
    assert!(!fx.data.join("worktrees/dead-session").exists());
    let list = git(&fx.ws, &["worktree", "list", "--porcelain"]);
    assert_eq!(
        list.lines().filter(|l| l.starts_with("worktree ")).count(),
        2,
        "the user's and the live session's: {list}"
    );
    assert!(!squad_branches(&repo_top).contains(&dead_agent.short()));
    // The running session is untouched.
    assert!(live_root.exists());
    assert_eq!(squad_branches(&fx.ws).lines().count(), 1);
    assert!(remove_stale(&fx.data).is_empty());

    // A session resumed under its old id keeps what it had.
    let again = fx.worktrees("dead-session");
    assert!(again.reopen(dead_agent).is_none(), "it was removed");
    let agent = AgentId::new();
    let root = again.create(agent).await.unwrap();
    drop(again);
    let resumed = fx.worktrees("dead-session");
    assert_eq!(resumed.reopen(agent), Some(root.clone()));
    assert!(
        remove_stale(&fx.data).is_empty(),
        "claimed again: not stale"
    );
    assert!(root.exists());
    // A second process cannot claim a session that runs.
    let repo = Repo::discover(&fx.ws).unwrap();
    assert!(Worktrees::open(repo, &fx.data, "dead-session").is_err());
}

#[tokio::test]
async fn start_picks_worktrees_in_a_repository_and_leases_outside_one() {
    let fx = Fixture::new();
    let started = isolation::start(IsolationMode::Worktree, &fx.ws, &fx.data, "s1");
    assert!(matches!(started.isolation, Isolation::Worktrees(_)));
    let started = isolation::start(IsolationMode::Shared, &fx.ws, &fx.data, "s2");
    assert!(matches!(
        started.isolation,
        Isolation::Shared { why: None, .. }
    ));

    let plain = tempfile::tempdir().unwrap();
    let started = isolation::start(IsolationMode::Worktree, plain.path(), &fx.data, "s3");
    let Isolation::Shared {
        leases,
        why: Some(why),
    } = started.isolation
    else {
        panic!("outside git, workers share the workspace");
    };
    assert!(why.contains("not in a git work tree"), "{why}");

    let file = plain.path().join("shared.rs");
    let (writer, other) = (AgentId::new(), AgentId::new());
    leases.claim(&file, writer, "coder").unwrap();
    leases.claim(&file, writer, "coder").unwrap();
    let err = leases.claim(&file, other, "tester").unwrap_err();
    assert_eq!(err.holder.agent, writer);
    let text = err.to_string();
    assert!(text.contains("shared.rs"), "{text}");
    assert!(
        text.contains("coder") && text.contains(&writer.short()),
        "{text}"
    );
    leases
        .claim(&plain.path().join("other.rs"), other, "tester")
        .unwrap();

    assert_eq!(leases.release(writer), vec![file.clone()]);
    leases.claim(&file, other, "tester").unwrap();
    assert_eq!(leases.holder(&file).unwrap().agent, other);
}

#[tokio::test]
async fn an_unmerged_change_of_an_ended_session_is_kept_on_its_branch() {
    let fx = Fixture::new();
    let agent = AgentId::new();
    {
        let dead = fx.worktrees("crashed-session");
        let root = dead.create(agent).await.unwrap();
        write(&root, "half done.txt", "the worker's work\n");
        // Dropped without clean-up, as a killed process would.
    }
    let removed = remove_stale_once_unlocked(&fx.data).await;
    assert_eq!(removed.len(), 1, "{removed:?}");
    assert!(removed[0].kept, "{removed:?}");
    assert_eq!(removed[0].problem, None);
    assert!(!removed[0].path.exists(), "the worktree folder is gone");
    let branch = format!("squad/{}", agent.short());
    let repo_top = Repo::discover(&fx.ws).unwrap().top;
    assert!(squad_branches(&repo_top).contains(&agent.short()));
    // The change is on the branch, and the user's tree did not get it.
    assert_eq!(
        git(&fx.ws, &["show", &format!("{branch}:half done.txt")]),
        "the worker's work\n"
    );
    assert!(!fx.ws.join("half done.txt").exists());
    // The user's own commits and identity are untouched: the record is squad's.
    let author = git(&fx.ws, &["log", "-1", "--format=%an", &branch]);
    assert_eq!(author.trim(), "squad");
    assert!(remove_stale(&fx.data).is_empty());
}

/// Workers that start writing together get their worktrees side by side (git's own locks
/// waited for), all at the same state of the workspace; a worker asking later starts from
/// the workspace as it is then: a merge's change and the user's newer edit are in it.
#[tokio::test(flavor = "multi_thread")]
async fn eight_worktrees_made_at_once_share_one_state_and_a_merge_moves_the_next_one_on() {
    let fx = Fixture::new();
    let w = std::sync::Arc::new(fx.worktrees("s1"));
    let agents: Vec<AgentId> = (0..8).map(|_| AgentId::new()).collect();
    let made = futures::future::join_all(agents.iter().map(|a| {
        let w = w.clone();
        let a = *a;
        async move { w.create(a).await }
    }))
    .await;
    let roots: Vec<PathBuf> = made.into_iter().map(Result::unwrap).collect();
    let trees: std::collections::BTreeSet<String> = roots
        .iter()
        .map(|r| git(r, &["rev-parse", "HEAD^{tree}"]))
        .collect();
    assert_eq!(trees.len(), 1, "one state for all: {trees:?}");
    for root in &roots {
        assert_eq!(read(root, "b.txt"), "b user edit\n");
        assert_eq!(read(root, "notes.md"), "user notes\n");
    }
    assert_eq!(squad_branches(&fx.ws).lines().count(), 8);

    write(&roots[0], "from-first.txt", "merged\n");
    assert!(matches!(
        w.merge(agents[0]).await.unwrap(),
        MergeOutcome::Merged { .. }
    ));
    let next = w.create(AgentId::new()).await.unwrap();
    assert_eq!(read(&next, "from-first.txt"), "merged\n");
    write(
        &fx.ws,
        "spec.md",
        "written just before the next worker's first change\n",
    );
    let later = w.create(AgentId::new()).await.unwrap();
    assert_eq!(
        read(&later, "spec.md"),
        "written just before the next worker's first change\n"
    );
}

/// Committed files enough for a fill to take a moment: `many/f_<i>.txt`.
fn add_many(ws: &Path, n: usize) {
    for i in 0..n {
        write(ws, &format!("many/f_{i}.txt"), &format!("file {i}\n"));
    }
    git(ws, &["add", "many"]);
    git(ws, &["commit", "-qm", "many", "--", "many"]);
}

/// Where a worktree's fill lists the first call's paths while it runs.
fn fill_marker(root: &Path) -> PathBuf {
    root.with_extension("filling")
}

fn strings(paths: &[&str]) -> Vec<String> {
    paths.iter().map(|p| p.to_string()).collect()
}

/// A worker's first call writes `a.txt` (there) and `src/new.rs` (new): its worktree
/// has `a.txt` before the call runs and everything else once filled, and then looks
/// exactly like one made whole: the same files, only the worker's change in
/// `git status`, only that change merged.
#[tokio::test(flavor = "multi_thread")]
async fn a_worktree_made_for_a_first_write_has_its_files_at_once_and_the_rest_after() {
    let fx = Fixture::new();
    add_many(&fx.ws, 300);
    let files = fx.files();
    let w = fx.worktrees("s1");
    let agent = AgentId::new();
    let writes = strings(&["a.txt", "./src/new.rs"]);
    let (root, early) = w.create_for(agent, Some(&writes), None).await.unwrap();
    assert!(early, "the call may run before the fill ends");
    // The first call's file is there for it, as the workspace has it.
    assert_eq!(read(&root, "a.txt"), lines_with(0, ""));
    write(&root, "a.txt", &lines_with(4, "four by the worker"));
    write(&root, "src/new.rs", "fn new() {}\n");
    // Measured while filling or after: the same figures.
    let d = w.diff(agent).await.unwrap();
    assert_eq!(
        d.files
            .iter()
            .map(|f| (f.path.as_str(), f.kind))
            .collect::<Vec<_>>(),
        [
            ("a.txt", ChangeKind::Modified),
            ("src/new.rs", ChangeKind::Added)
        ]
    );
    assert_eq!(d.label(), "+2 \u{2212}1");

    w.ready(agent).await.unwrap();
    assert!(!fill_marker(&root).exists());
    assert!(w.unwritten(agent).is_none());
    let mut expected = files.clone();
    expected.remove("target/out.o");
    expected.insert("a.txt".into(), lines_with(4, "four by the worker"));
    expected.insert("src/new.rs".into(), "fn new() {}\n".into());
    assert_eq!(files_under(&root), expected);
    assert_eq!(
        git(&root, &["status", "--porcelain", "--untracked-files=all"]),
        " M a.txt\n?? src/new.rs\n"
    );
    assert_eq!(
        merged(w.merge(agent).await.unwrap()),
        vec!["a.txt".into(), "src/new.rs".into()] as Vec<String>
    );
    w.remove(agent).await.unwrap();
    assert!(!root.exists());
}

/// A first call that names no files, or whose files the fill could disturb (a folder at
/// its path, a symlink or a file on its way, `..`, `.gitattributes`), gets the whole tree
/// before it runs.
#[tokio::test(flavor = "multi_thread")]
async fn a_first_call_that_may_not_run_early_gets_the_whole_tree_first() {
    let fx = Fixture::new();
    std::os::unix::fs::symlink("dir with space", fx.ws.join("link")).unwrap();
    write(&fx.ws, "plain", "a file\n");
    git(&fx.ws, &["add", "link", "plain"]);
    git(&fx.ws, &["commit", "-qm", "link", "--", "link", "plain"]);
    let whole = fx.files().len() - 1;
    let w = fx.worktrees("s1");
    let cases: [Option<&[&str]>; 7] = [
        None,
        Some(&["dir with space"]),
        Some(&["link/c.txt"]),
        Some(&["link"]),
        Some(&["plain/below.txt"]),
        Some(&["../outside.txt"]),
        Some(&["a.txt", ".gitattributes"]),
    ];
    for writes in cases {
        let agent = AgentId::new();
        let writes = writes.map(strings);
        let (root, early) = w.create_for(agent, writes.as_deref(), None).await.unwrap();
        assert!(!early, "{writes:?}");
        assert!(!fill_marker(&root).exists(), "{writes:?}");
        assert_eq!(files_under(&root).len(), whole, "{writes:?}");
        assert_eq!(git(&root, &["status", "--porcelain"]), "", "{writes:?}");
    }
}

/// A crash during a fill: the first call's file is changed, another file is half written,
/// the rest missing, git's index lock left behind. At the resume the fill runs again over
/// every file but the first call's, so nothing the worker wrote is lost and nothing half
/// written stays.
#[tokio::test(flavor = "multi_thread")]
async fn a_fill_cut_short_by_a_crash_is_finished_at_resume_keeping_the_first_calls_file() {
    let fx = Fixture::new();
    add_many(&fx.ws, 50);
    let files = fx.files();
    let agent = AgentId::new();
    let dir = fx.worktrees("s1").dir().to_path_buf();
    let scratch = tempfile::tempdir().unwrap();
    let repo = Repo::discover(&fx.ws).unwrap();
    let (wt, fill) = isolation::Worktree::create_lazy(
        &repo,
        &dir,
        &agent.short(),
        scratch.path(),
        &strings(&["a.txt"]),
    )
    .unwrap();
    let fill = fill.expect("filled behind its first call");
    assert_eq!(fill.kept(), ["a.txt"]);
    drop(fill); // the process dies before it ran
    let root = wt.root.clone();
    assert_eq!(std::fs::read(fill_marker(&root)).unwrap(), b"a.txt\0");
    write(&root, "a.txt", "the worker's first write\n");
    write(&root, "b.txt", "b us");
    write(&root, "many/f_7.txt", "");
    std::fs::write(wt.git_dir.join("index.lock"), "").unwrap();

    let w = fx.worktrees("s1");
    assert_eq!(w.reopen(agent), Some(root.clone()));
    w.ready(agent).await.unwrap();
    assert!(!fill_marker(&root).exists());
    assert!(!wt.git_dir.join("index.lock").exists());
    let mut expected = files.clone();
    expected.remove("target/out.o");
    expected.insert("a.txt".into(), "the worker's first write\n".into());
    assert_eq!(files_under(&root), expected);
    assert_eq!(git(&root, &["status", "--porcelain"]), " M a.txt\n");
}

/// An ended session's worktree whose fill a crash cut short: its fill is finished before
/// the worker's change is kept, so the kept commit holds that change and no deletions.
#[tokio::test(flavor = "multi_thread")]
async fn an_ended_sessions_unfilled_worktree_keeps_only_the_workers_change() {
    let fx = Fixture::new();
    add_many(&fx.ws, 50);
    let agent = AgentId::new();
    let dir = fx.worktrees("crashed").dir().to_path_buf();
    let scratch = tempfile::tempdir().unwrap();
    let repo = Repo::discover(&fx.ws).unwrap();
    let (wt, fill) = isolation::Worktree::create_lazy(
        &repo,
        &dir,
        &agent.short(),
        scratch.path(),
        &strings(&["notes.md"]),
    )
    .unwrap();
    drop(fill);
    write(&wt.root, "notes.md", "the worker's notes\n");
    let removed = remove_stale_once_unlocked(&fx.data).await;
    assert_eq!(removed.len(), 1, "{removed:?}");
    assert!(removed[0].kept, "{removed:?}");
    let branch = format!("squad/{}", agent.short());
    assert_eq!(
        git(
            &fx.ws,
            &["diff", "--name-status", &format!("{branch}~1"), &branch]
        ),
        "M\tnotes.md\n"
    );
}

/// A fill git cannot finish (here a required filter fails on one file) is told, for good:
/// the worktree is refused instead of being used half written, and it can still go.
#[tokio::test(flavor = "multi_thread")]
async fn a_fill_that_fails_leaves_the_worktree_refused_and_removable() {
    let fx = Fixture::new();
    write(&fx.ws, ".gitattributes", "broken.txt filter=broken\n");
    write(&fx.ws, "broken.txt", "cannot be checked out\n");
    git(&fx.ws, &["config", "filter.broken.clean", "cat"]);
    git(&fx.ws, &["config", "filter.broken.smudge", "false"]);
    git(&fx.ws, &["config", "filter.broken.required", "true"]);
    git(&fx.ws, &["add", ".gitattributes", "broken.txt"]);
    git(
        &fx.ws,
        &[
            "commit",
            "-qm",
            "filter",
            "--",
            ".gitattributes",
            "broken.txt",
        ],
    );
    let w = fx.worktrees("s1");
    let agent = AgentId::new();
    let (root, early) = w
        .create_for(agent, Some(&strings(&["a.txt"])), None)
        .await
        .unwrap();
    assert!(early);
    let err = w.ready(agent).await.unwrap_err().to_string();
    assert!(err.contains("could not all be written"), "{err}");
    assert!(w.unwritten(agent).is_some());
    // For good, and for everything that would read the tree.
    assert!(w.ready(agent).await.is_err());
    assert!(w.merge(agent).await.is_err());
    assert!(w.diff_text(agent).await.is_err());
    assert!(fill_marker(&root).exists(), "a resume would try again");
    assert!(w.remove(agent).await.unwrap());
    assert!(!root.exists());
    assert!(!fill_marker(&root).exists());
}

/// The files a clean merge wrote; panics on any other outcome.
fn merged(outcome: MergeOutcome) -> Vec<String> {
    match outcome {
        MergeOutcome::Merged { files, .. } => files,
        other => panic!("expected a clean merge, got {other:?}"),
    }
}
