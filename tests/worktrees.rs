//! Writing workers in worktrees of their own, end to end: the runtime's public API with the
//! real HTTP client against the mock server, on temporary git repositories that hold the
//! user's uncommitted and untracked changes. Workers write in their worktrees while they
//! run; their changes reach the workspace by merges when their results go up; a conflict
//! leaves the workspace as it was and a follow-up redoes the change; a despawned worker's
//! change is kept on its branch until the user merges it; outside git, file leases keep
//! workers apart. Every git command here carries its identity in the environment: no
//! global git configuration is needed.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use ::squad::protocol::{AgentId, ApprovalPolicy, Event, EventKind, HistoryItem, Op};
use common::agents::*;
use common::engine::*;
use common::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Ten numbered lines, line `n` replaced (none for 0).
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

/// A repository the way a user leaves it mid-work: `a.txt` and `b.txt` committed, then
/// `b.txt` edited (unstaged), `c.txt` added to the index, `notes.md` untracked.
fn repo() -> Sandbox {
    let sb = Sandbox::new();
    git(sb.ws(), &["init", "-q"]);
    sb.write("a.txt", &lines_with(0, ""));
    sb.write("b.txt", "b committed\n");
    git(sb.ws(), &["add", "-A"]);
    git(sb.ws(), &["commit", "-qm", "start"]);
    sb.write("b.txt", "b: the user's own edit\n");
    sb.write("c.txt", "c staged\n");
    git(sb.ws(), &["add", "c.txt"]);
    sb.write("notes.md", "the user's notes\n");
    sb
}

/// What must never change behind the user's back: HEAD, the index, the commits.
fn git_state(ws: &Path) -> (String, String, String) {
    (
        git(ws, &["rev-parse", "HEAD"]),
        git(ws, &["ls-files", "--stage"]),
        git(
            ws,
            &["log", "--exclude=squad/*", "--branches", "--format=%H %s"],
        ),
    )
}

/// The user's own uncommitted and untracked work, as the fixture left it.
fn assert_users_work_intact(sb: &Sandbox) {
    assert_eq!(sb.read("b.txt"), "b: the user's own edit\n");
    assert_eq!(sb.read("c.txt"), "c staged\n");
    assert_eq!(sb.read("notes.md"), "the user's notes\n");
}

/// The first user message of a request: a worker's task.
fn task_of(body: &Value) -> String {
    transcript(body)
        .into_iter()
        .find(|(role, _)| role == "user")
        .map(|(_, text)| text)
        .unwrap_or_default()
}

/// The last user message of a request.
fn last_user(body: &Value) -> String {
    transcript(body)
        .into_iter()
        .rev()
        .find(|(role, _)| role == "user")
        .map(|(_, text)| text)
        .unwrap_or_default()
}

fn write(id: &str, path: &str, content: &str) -> MockResponse {
    MockResponse::tool_call(
        id,
        "write_file",
        &json!({"path": path, "content": content}).to_string(),
    )
}

fn returns(id: &str, path: &str) -> MockResponse {
    MockResponse::tool_call(
        id,
        "return_results",
        &json!({"result": {"status": "success", "summary": format!("wrote {path}"),
            "artifacts": [{"file_path": path, "description": "the change", "change_type": "modified"}],
            "known_issues": []}})
        .to_string(),
    )
}

/// A persona that spawns one implementer per task at once, waits, then answers.
fn persona(body: &Value, tasks: &[&str]) -> MockResponse {
    match tool_count(body) {
        0 => MockResponse::tool_calls(
            tasks
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    call(
                        &format!("s{i}"),
                        "spawn_agent",
                        json!({"role_name": "implementer", "task_prompt": t}),
                    )
                })
                .collect(),
        ),
        n if n == tasks.len() => MockResponse::tool_call("w", "wait_for_agents", "{}"),
        _ => MockResponse::text("done"),
    }
}

/// The agent ids of events of one kind.
fn agents_with(seen: &[Event], f: impl Fn(&EventKind) -> bool) -> Vec<AgentId> {
    seen.iter()
        .filter(|e| f(&e.kind))
        .map(|e| e.agent_id)
        .collect()
}

async fn wait_idle(h: &mut ::squad::runtime::SessionHandle, seen: &mut Vec<Event>) {
    wait_event(h, seen, Duration::from_secs(40), |e| {
        matches!(e.kind, EventKind::Idle)
    })
    .await
    .expect("the team comes to rest");
}

#[tokio::test(flavor = "multi_thread")]
async fn two_writers_on_different_files_stay_out_of_the_workspace_until_their_results_merge() {
    let mock = MockServer::start().await;
    let sb = repo();
    let before = git_state(sb.ws());
    mock.set_responder(|body| {
        if !is_worker(body) {
            return persona(body, &["write one.txt", "write two.txt"]);
        }
        let file = if task_of(body).contains("one.txt") {
            "one.txt"
        } else {
            "two.txt"
        };
        match tool_count(body) {
            0 => write("w", file, &format!("{file} by its worker\n")),
            // Long enough to look at the workspace while both have written.
            _ => returns("r", file).with_delay(Duration::from_millis(2500)),
        }
    });
    let mut h = start_engine_with_data(&mock, &sb, ApprovalPolicy::Auto, |_| {}).await;
    let mut seen = Vec::new();
    say(&h, "write both files");

    // Both have written in their worktrees; the workspace has seen nothing of it.
    for _ in 0..2 {
        next_event(
            &mut h,
            &mut seen,
            |e| matches!(e.kind, EventKind::DiffStat(d) if d.files == 1 && d.added == 1),
        )
        .await;
    }
    assert!(!sb.ws().join("one.txt").exists() && !sb.ws().join("two.txt").exists());
    assert_users_work_intact(&sb);
    let created: Vec<PathBuf> = seen
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::WorktreeCreated { path, branch } => {
                assert!(branch.starts_with("squad/"), "{branch}");
                Some(path.clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(created.len(), 2);
    for wt in &created {
        assert!(
            !wt.starts_with(sb.ws()),
            "worktrees live outside the workspace"
        );
        // Each worker started from the user's state, uncommitted and untracked included.
        assert_eq!(
            std::fs::read_to_string(wt.join("b.txt")).unwrap(),
            "b: the user's own edit\n"
        );
        assert_eq!(
            std::fs::read_to_string(wt.join("notes.md")).unwrap(),
            "the user's notes\n"
        );
    }

    wait_idle(&mut h, &mut seen).await;
    let merged: Vec<Vec<String>> = seen
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Merged { files, .. } => Some(files.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(merged.len(), 2, "{merged:?}");
    // What each supervisor read is logged as its own event, for a resumed session.
    let reports: Vec<&::squad::protocol::MergeReport> = seen
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::MergeReport(r) => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(reports.len(), 2);
    assert!(
        reports
            .iter()
            .all(|r| r.state == ::squad::protocol::MergeState::Merged)
    );
    assert_eq!(sb.read("one.txt"), "one.txt by its worker\n");
    assert_eq!(sb.read("two.txt"), "two.txt by its worker\n");
    assert_users_work_intact(&sb);
    assert_eq!(
        git_state(sb.ws()),
        before,
        "nothing committed, the index untouched"
    );

    // The supervisor read which files each merge brought.
    let reqs = mock.requests();
    let last = reqs.iter().rev().find(|r| !is_worker(&r.body)).unwrap();
    let waited = tool_messages(&last.body)
        .into_iter()
        .find(|(id, _)| id == "w")
        .unwrap()
        .1;
    assert!(
        waited.contains(r#""state": "merged""#) && waited.contains("one.txt"),
        "{waited}"
    );
    h.ops.send(Op::Shutdown).unwrap();
    wait_event(&mut h, &mut seen, Duration::from_secs(20), |e| {
        matches!(e.kind, EventKind::Summary { .. })
    })
    .await
    .expect("the session ends");
    // Merged worktrees go with the session, branches included.
    for wt in &created {
        assert!(!wt.exists(), "{} is left", wt.display());
    }
    assert_eq!(git(sb.ws(), &["branch", "--list", "squad/*"]), "");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_same_line_twice_merges_the_first_reports_the_second_and_a_redo_merges_it() {
    let mock = MockServer::start().await;
    let sb = repo();
    let before = git_state(sb.ws());
    // What the redone worker found in its worktree when it was asked to redo.
    let found: Arc<Mutex<Option<String>>> = Arc::default();
    let found_by_worker = found.clone();
    let (data, ws) = (sb.data_dir(), sb.ws().to_path_buf());
    mock.set_responder(move |body| {
        if !is_worker(body) {
            let last = last_user(body);
            if last.contains("redo it") {
                return MockResponse::text("redone");
            }
            return match tool_count(body) {
                0 => MockResponse::tool_calls(vec![
                    call(
                        "s0",
                        "spawn_agent",
                        json!({"role_name": "implementer", "task_prompt": "first: line 3"}),
                    ),
                    call(
                        "s1",
                        "spawn_agent",
                        json!({"role_name": "implementer", "task_prompt": "second: line 3"}),
                    ),
                ]),
                2 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
                _ => MockResponse::text("one merged, one conflicts"),
            };
        }
        let first = task_of(body).starts_with("first");
        let redo = last_user(body).contains("conflict markers");
        if redo && tool_count(body) <= 2 {
            let root = root_of(&data, &ws, body);
            *found_by_worker.lock().unwrap() = std::fs::read_to_string(root.join("a.txt")).ok();
            return write("fix", "a.txt", &lines_with(3, "line 3 by both"));
        }
        if redo {
            return returns("r2", "a.txt");
        }
        match tool_count(body) {
            0 => write(
                "w",
                "a.txt",
                &lines_with(
                    3,
                    if first {
                        "line 3 first"
                    } else {
                        "line 3 second"
                    },
                ),
            ),
            // The second finishes well after the first: completion order decides.
            _ if first => returns("r", "a.txt"),
            _ => returns("r", "a.txt").with_delay(Duration::from_millis(1500)),
        }
    });
    let mut h = start_engine_with_data(&mock, &sb, ApprovalPolicy::Auto, |_| {}).await;
    let root = h.info.root_agent;
    let mut seen = Vec::new();
    say(&h, "change line 3 twice");
    wait_idle(&mut h, &mut seen).await;

    let merged = agents_with(&seen, |k| matches!(k, EventKind::Merged { .. }));
    let conflicted: Vec<(AgentId, Vec<::squad::protocol::ConflictFile>)> = seen
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::MergeConflict { conflicts } => Some((e.agent_id, conflicts.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(merged.len(), 1);
    assert_eq!(conflicted.len(), 1);
    let (second, conflicts) = &conflicted[0];
    assert_eq!(conflicts.len(), 1);
    assert_eq!(conflicts[0].path, "a.txt");
    assert_eq!(conflicts[0].kind, "contents");
    assert_eq!(conflicts[0].hunks.len(), 1);
    assert_eq!(conflicts[0].hunks[0].workspace.start, 3);
    // The first's change is in; the second's changed nothing, markers included.
    assert_eq!(sb.read("a.txt"), lines_with(3, "line 3 first"));
    assert!(!sb.read("a.txt").contains("<<<<<<<"));
    assert_users_work_intact(&sb);
    assert_eq!(git_state(sb.ws()), before);
    // The supervisor was told which file conflicts and what it can do.
    let reqs = mock.requests();
    let last = reqs.iter().rev().find(|r| !is_worker(&r.body)).unwrap();
    let waited = tool_messages(&last.body)
        .into_iter()
        .find(|(id, _)| id == "w")
        .unwrap()
        .1;
    assert!(waited.contains(r#""state": "conflict""#), "{waited}");
    assert!(waited.contains("a.txt (contents): workspace line 3 vs worker line 3"));
    assert!(waited.contains("speak_to_agent") && waited.contains("despawn_agent"));

    // The user asks the second worker to redo: its worktree moves onto the workspace's
    // state (markers only there), it settles them, and its next result merges.
    h.ops
        .send(Op::UserMessage {
            to: Some(*second),
            text: "redo it".into(),
        })
        .unwrap();
    let done = next_event(&mut h, &mut seen, |e| {
        e.agent_id == *second && matches!(e.kind, EventKind::Merged { .. })
    })
    .await;
    assert!(matches!(&done.kind, EventKind::Merged { files, .. } if files == &["a.txt"]));
    let found = found
        .lock()
        .unwrap()
        .clone()
        .expect("the worker read its a.txt");
    assert!(
        found.contains("<<<<<<< workspace (current)")
            && found.contains("line 3 first")
            && found.contains("line 3 second")
            && found.contains(">>>>>>> your change"),
        "{found}"
    );
    let told = seen.iter().find_map(|e| match &e.kind {
        EventKind::ItemAdded {
            item: HistoryItem::User { text },
        } if e.agent_id == *second && text.starts_with("redo it") => Some(text.clone()),
        _ => None,
    });
    assert!(told.unwrap().contains("conflict markers"));
    assert_eq!(sb.read("a.txt"), lines_with(3, "line 3 by both"));
    assert_users_work_intact(&sb);
    assert_eq!(git_state(sb.ws()), before);
    let _ = root;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_despawned_workers_change_is_kept_on_its_branch_and_merges_on_purpose() {
    let mock = MockServer::start().await;
    let sb = repo();
    mock.set_responder(|body| {
        if !is_worker(body) {
            return persona(body, &["write gone.txt"]);
        }
        match tool_count(body) {
            0 => write("w", "gone.txt", "never merged\n"),
            // Still at work when it is despawned.
            _ => returns("r", "gone.txt").with_delay(Duration::from_secs(30)),
        }
    });
    let mut h = start_engine_with_data(&mock, &sb, ApprovalPolicy::Auto, |_| {}).await;
    let mut seen = Vec::new();
    say(&h, "start one");
    let diff = next_event(&mut h, &mut seen, |e| {
        matches!(e.kind, EventKind::DiffStat(_))
    })
    .await;
    let worker = diff.agent_id;
    let path = seen
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::WorktreeCreated { path, .. } => Some(path.clone()),
            _ => None,
        })
        .unwrap();
    let branch = format!("squad/{}", worker.short());
    assert!(path.join("gone.txt").exists());
    assert!(git(sb.ws(), &["branch", "--list", &branch]).contains(&branch));

    // `d` in the tree: the runtime reads the worktree for the front end.
    h.ops.send(Op::ShowDiff { agent_id: worker }).unwrap();
    let shown = next_event(&mut h, &mut seen, |e| {
        matches!(e.kind, EventKind::Diff { .. })
    })
    .await;
    assert!(
        matches!(&shown.kind, EventKind::Diff { text } if text.contains("+++ b/gone.txt") && text.contains("+never merged")),
        "{shown:?}"
    );

    h.ops.send(Op::Despawn { agent_id: worker }).unwrap();
    let removed = next_event(&mut h, &mut seen, |e| {
        e.agent_id == worker && matches!(e.kind, EventKind::WorktreeRemoved { .. })
    })
    .await;
    assert!(
        matches!(
            removed.kind,
            EventKind::WorktreeRemoved {
                discarded: false,
                kept: true,
                ..
            }
        ),
        "{removed:?}"
    );
    assert!(!path.exists(), "its worktree is gone");
    assert!(!git(sb.ws(), &["worktree", "list"]).contains(&worker.short()));
    // Its change did not pass its checks: not merged, kept on its branch, the tree told.
    assert!(!sb.ws().join("gone.txt").exists());
    let kept = git(sb.ws(), &["show", &format!("{branch}:gone.txt")]);
    assert_eq!(kept.trim(), "never merged");
    assert!(
        seen.iter().any(|e| e.agent_id == worker
            && matches!(&e.kind, EventKind::MergeReport(r)
                if r.state == ::squad::protocol::MergeState::FailedChecks && r.note.contains(&branch))),
        "a failed_checks report naming the branch"
    );
    assert_users_work_intact(&sb);

    // A name that is no worker is told so, with the unmerged ones (its branch counts).
    h.ops
        .send(Op::MergeWorker {
            worker: "nobody".into(),
        })
        .unwrap();
    let refused = next_event(
        &mut h,
        &mut seen,
        |e| matches!(&e.kind, EventKind::Error { message } if message.starts_with("merge:")),
    )
    .await;
    assert!(
        matches!(&refused.kind, EventKind::Error { message }
            if message.contains("no worker `nobody`") && message.contains(&worker.short())),
        "{refused:?}"
    );

    // The user merges it on purpose (`/merge`): from the branch, which then goes.
    h.ops
        .send(Op::MergeWorker {
            worker: worker.short(),
        })
        .unwrap();
    let merged = next_event(&mut h, &mut seen, |e| {
        e.agent_id == worker && matches!(e.kind, EventKind::Merged { .. })
    })
    .await;
    assert!(
        matches!(&merged.kind, EventKind::Merged { files, record: Some(_) } if files == &["gone.txt"]),
        "{merged:?}"
    );
    assert_eq!(sb.read("gone.txt"), "never merged\n");
    assert_eq!(git(sb.ws(), &["branch", "--list", "squad/*"]), "");
    assert_users_work_intact(&sb);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_released_worker_leaves_its_merged_change_and_no_worktree_or_branch() {
    let mock = MockServer::start().await;
    let sb = repo();
    mock.set_responder(|body| {
        if !is_worker(body) {
            return persona(body, &["write kept.txt"]);
        }
        match tool_count(body) {
            0 => write("w", "kept.txt", "merged, then released\n"),
            _ => returns("r", "kept.txt"),
        }
    });
    // Released as soon as its result reached its supervisor.
    let mut h = start_engine_with_data(&mock, &sb, ApprovalPolicy::Auto, |c| {
        c.team.release_after_s = 0;
    })
    .await;
    let mut seen = Vec::new();
    say(&h, "start one");
    let merged = next_event(&mut h, &mut seen, |e| {
        matches!(e.kind, EventKind::Merged { .. })
    })
    .await;
    let worker = merged.agent_id;
    let removed = next_event(&mut h, &mut seen, |e| {
        e.agent_id == worker && matches!(e.kind, EventKind::WorktreeRemoved { .. })
    })
    .await;
    assert!(
        matches!(
            removed.kind,
            EventKind::WorktreeRemoved {
                discarded: false,
                ..
            }
        ),
        "{removed:?}"
    );
    assert!(
        seen.iter()
            .any(|e| e.agent_id == worker && matches!(e.kind, EventKind::Released)),
        "it was released"
    );
    assert_eq!(sb.read("kept.txt"), "merged, then released\n");
    assert_eq!(git(sb.ws(), &["branch", "--list", "squad/*"]), "");
    assert!(!git(sb.ws(), &["worktree", "list"]).contains(&worker.short()));
    assert_users_work_intact(&sb);

    // `d` on it: what its merge brought into the workspace, though its worktree is gone.
    h.ops.send(Op::ShowDiff { agent_id: worker }).unwrap();
    let shown = next_event(&mut h, &mut seen, |e| {
        matches!(e.kind, EventKind::Diff { .. })
    })
    .await;
    assert!(
        matches!(&shown.kind, EventKind::Diff { text }
            if text.contains("+++ b/kept.txt") && text.contains("+merged, then released")),
        "{shown:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn outside_git_a_file_another_worker_wrote_is_refused_naming_the_holder() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("shared.txt", "before\n");
    mock.set_responder(|body| {
        if !is_worker(body) {
            return persona(
                body,
                &["holder: write shared.txt", "other: write shared.txt"],
            );
        }
        let holder = task_of(body).starts_with("holder");
        match (holder, tool_count(body)) {
            (true, 0) => write("w", "shared.txt", "the holder's\n"),
            // Holds the file a while before its result goes up.
            (true, _) => returns("r", "shared.txt").with_delay(Duration::from_millis(2500)),
            // Comes second.
            (false, 0) => {
                write("w", "shared.txt", "the other's\n").with_delay(Duration::from_millis(800))
            }
            // Asked again once the holder's result was delivered.
            (false, 2) => write("w2", "shared.txt", "the other's\n"),
            (false, _) => MockResponse::tool_call(
                "r",
                "return_results",
                &good_result("tried to write it").to_string(),
            ),
        }
    });
    let mut h = start_engine_with_data(&mock, &sb, ApprovalPolicy::Auto, |_| {}).await;
    let mut seen = Vec::new();
    say(&h, "both write shared.txt");
    wait_idle(&mut h, &mut seen).await;

    assert!(
        !seen
            .iter()
            .any(|e| matches!(e.kind, EventKind::WorktreeCreated { .. })),
        "no worktrees outside git"
    );
    let holder = seen
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::AgentSpawned { task, .. } if task.starts_with("holder") => Some(e.agent_id),
            _ => None,
        })
        .unwrap();
    let refused = seen
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ItemAdded {
                item:
                    HistoryItem::ToolResult {
                        name,
                        output,
                        is_error: true,
                        ..
                    },
            } if name == "write_file" => Some(output.clone()),
            _ => None,
        })
        .expect("the second write is refused");
    assert!(
        refused.contains("shared.txt is being changed by worker implementer")
            && refused.contains(&holder.short()),
        "{refused}"
    );
    assert_eq!(sb.read("shared.txt"), "the holder's\n");

    // The holder's result has been delivered: the lease has lapsed.
    let other = seen
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::AgentSpawned { task, .. } if task.starts_with("other") => Some(e.agent_id),
            _ => None,
        })
        .unwrap();
    h.ops
        .send(Op::UserMessage {
            to: Some(other),
            text: "try again".into(),
        })
        .unwrap();
    next_event(&mut h, &mut seen, |e| {
        e.agent_id == other
            && matches!(&e.kind, EventKind::ItemAdded { item: HistoryItem::ToolResult { name, is_error: false, .. } } if name == "write_file")
    })
    .await;
    assert_eq!(sb.read("shared.txt"), "the other's\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_removes_worktrees_of_ended_sessions_and_prints_one_line_per_merge() {
    use ::squad::isolation::{Repo, Worktrees};
    let mock = MockServer::start().await;
    let sb = repo();
    // A session that ended without cleaning up: its worktree and branch are still there.
    let stale = {
        let w = Worktrees::open(Repo::discover(sb.ws()).unwrap(), &sb.data_dir(), "old").unwrap();
        w.create(AgentId::new()).await.unwrap()
    };
    assert!(stale.exists());
    mock.set_responder(|body| {
        if !is_worker(body) {
            return persona(body, &["write one.txt", "write two.txt"]);
        }
        let file = if task_of(body).contains("one.txt") {
            "one.txt"
        } else {
            "two.txt"
        };
        match tool_count(body) {
            0 => write("w", file, "new\n"),
            _ => returns("r", file),
        }
    });
    let run = sb.exec(&mock, &["--approval", "auto", "write both"]).await;
    run.assert_ok();
    assert!(
        run.stderr.contains("removed 1 worktree of ended sessions"),
        "{}",
        run.stderr
    );
    assert!(!stale.exists());
    let merges: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("⇄ [implementer "))
        .collect();
    assert_eq!(merges.len(), 2, "{}", run.stderr);
    assert!(
        merges
            .iter()
            .any(|l| l.ends_with("] merged into the workspace: one.txt")),
        "{merges:?}"
    );
    assert_eq!(sb.read("one.txt"), "new\n");
    assert_eq!(sb.read("two.txt"), "new\n");
    assert_users_work_intact(&sb);
    // Merged worktrees went with the session.
    assert_eq!(git(sb.ws(), &["branch", "--list", "squad/*"]), "");
    assert_eq!(git(sb.ws(), &["worktree", "list"]).lines().count(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_run_continues_in_the_same_worktree_and_merges_at_the_end() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let mock = MockServer::start().await;
    let sb = repo();
    // The first run hangs in the worker's second model call; the continued run does not.
    let hang = Arc::new(AtomicBool::new(true));
    let hang_in = hang.clone();
    mock.set_responder(move |body| {
        if !is_worker(body) {
            return persona(body, &["write out.txt"]);
        }
        match tool_count(body) {
            0 => write("w", "out.txt", "written in the worktree\n"),
            _ if hang_in.load(Ordering::SeqCst) => {
                returns("r", "out.txt").with_delay(Duration::from_secs(60))
            }
            _ => returns("r", "out.txt"),
        }
    });
    let mut cmd = sb.command(Some(&mock));
    cmd.args(["exec", "--approval", "auto", "have a worker write out.txt"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let first_root = loop {
        let wrote = mock
            .requests()
            .into_iter()
            .find(|r| is_worker(&r.body) && tool_count(&r.body) == 1);
        if let Some(r) = wrote {
            break root_of(&sb.data_dir(), sb.ws(), &r.body);
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the worker never wrote"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    assert_eq!(
        std::fs::read_to_string(first_root.join("out.txt")).unwrap(),
        "written in the worktree\n"
    );
    assert!(!sb.ws().join("out.txt").exists());

    hang.store(false, Ordering::SeqCst);
    let before = mock.requests().len();
    let run = sb
        .exec(
            &mock,
            &["--approval", "auto", "--resume", "last", "--continue"],
        )
        .await;
    run.assert_ok();
    let continued = mock
        .requests()
        .into_iter()
        .skip(before)
        .find(|r| is_worker(&r.body))
        .expect("the worker goes on");
    assert_eq!(
        root_of(&sb.data_dir(), sb.ws(), &continued.body),
        first_root,
        "the same worktree"
    );
    let logs = std::fs::read_dir(sb.data_dir().join("sessions")).unwrap();
    let made: usize = logs
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .map(|log| log.matches("\"type\":\"worktree_created\"").count())
        .sum();
    assert_eq!(made, 1, "no new worktree");
    assert!(
        run.stderr.contains("] merged into the workspace: out.txt"),
        "{}",
        run.stderr
    );
    assert_eq!(sb.read("out.txt"), "written in the worktree\n");
    assert_users_work_intact(&sb);
    assert_eq!(git(sb.ws(), &["branch", "--list", "squad/*"]), "");
}

/// A worker that only reads and reports never gets a worktree (no git process for it);
/// one whose only change is through `run_tests` gets one, since its handler says it may
/// change files, and the file its tests wrote reaches the workspace by the merge.
#[tokio::test(flavor = "multi_thread")]
async fn a_reading_worker_gets_no_worktree_and_a_testing_worker_gets_one_at_its_first_run() {
    let mock = MockServer::start().await;
    let sb = repo();
    mock.set_responder(|body| {
        if !is_worker(body) {
            return match tool_count(body) {
                0 => MockResponse::tool_calls(vec![
                    call(
                        "s0",
                        "spawn_agent",
                        json!({"role_name": "implementer", "task_prompt": "read a.txt"}),
                    ),
                    call(
                        "s1",
                        "spawn_agent",
                        json!({"role_name": "tester", "task_prompt": "run the tests"}),
                    ),
                ]),
                2 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
                _ => MockResponse::text("done"),
            };
        }
        let reading = task_of(body).contains("read a.txt");
        match (reading, tool_count(body)) {
            (true, 0) => MockResponse::tool_call("r0", "read_file", r#"{"path": "a.txt"}"#),
            (false, 0) => MockResponse::tool_call("t0", "run_tests", "{}"),
            (true, _) => MockResponse::tool_call(
                "r",
                "return_results",
                &json!({"result": {"status": "success", "summary": "a.txt has ten lines",
                    "artifacts": [], "known_issues": []}})
                .to_string(),
            ),
            (false, _) => returns("r", "report.txt"),
        }
    });
    let mut h = start_engine_with_data(&mock, &sb, ApprovalPolicy::Auto, |c| {
        c.tools.test_command = Some("echo passed > report.txt".to_string());
    })
    .await;
    let mut seen = Vec::new();
    say(&h, "read and test");
    wait_idle(&mut h, &mut seen).await;

    let spawned = agents_with(&seen, |k| {
        matches!(
            k,
            EventKind::AgentSpawned {
                parent_id: Some(_),
                ..
            }
        )
    });
    assert_eq!(spawned.len(), 2);
    let with_worktree = agents_with(&seen, |k| matches!(k, EventKind::WorktreeCreated { .. }));
    assert_eq!(with_worktree.len(), 1, "only the tester");
    assert_eq!(
        sb.read("report.txt"),
        "passed\n",
        "merged into the workspace"
    );
    // One branch was ever made: the reader's would have been `squad/<its id>`.
    let reader = spawned.iter().find(|a| !with_worktree.contains(a)).unwrap();
    assert!(
        !seen.iter().any(|e| e.agent_id == *reader
            && matches!(
                e.kind,
                EventKind::WorktreeCreated { .. } | EventKind::DiffStat(_)
            )),
        "the reader caused no git work"
    );
    assert_users_work_intact(&sb);
}

/// Workers that may write but only read and report cost no git process at all: the real
/// `squad exec` runs with a `git` first on its PATH that logs each call, and with three
/// such workers in a repository the log holds only the session's own one-time calls
/// (finding git's version and the repository), the same as with none.
#[tokio::test(flavor = "multi_thread")]
async fn workers_that_only_read_and_report_start_no_git_process() {
    use std::os::unix::fs::PermissionsExt;
    let mock = MockServer::start().await;
    let sb = repo();
    let real = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join("git"))
        .find(|p| p.is_file())
        .expect("git on PATH");
    let shim = sb.home.path().join("shim");
    std::fs::create_dir_all(&shim).unwrap();
    let log = sb.home.path().join("git-calls");
    std::fs::write(
        shim.join("git"),
        format!(
            "#!/bin/sh\necho \"$GIT_DIR $*\" >> '{}'\nexec '{}' \"$@\"\n",
            log.display(),
            real.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(shim.join("git"), std::fs::Permissions::from_mode(0o755)).unwrap();
    mock.set_responder(|body| {
        if !is_worker(body) {
            return match tool_count(body) {
                0 => MockResponse::tool_calls(
                    (0..3)
                        .map(|i| {
                            call(
                                &format!("s{i}"),
                                "spawn_agent",
                                json!({"role_name": "implementer", "task_prompt": format!("read a.txt ({i})")}),
                            )
                        })
                        .collect(),
                ),
                3 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
                _ => MockResponse::text("done"),
            };
        }
        match tool_count(body) {
            0 => MockResponse::tool_call("r0", "read_file", r#"{"path": "a.txt"}"#),
            _ => MockResponse::tool_call(
                "r",
                "return_results",
                &json!({"result": {"status": "success", "summary": "a.txt has ten lines",
                    "artifacts": [], "known_issues": []}})
                .to_string(),
            ),
        }
    });
    let path = std::env::join_paths(
        std::iter::once(shim).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let mut cmd = sb.command(Some(&mock));
    cmd.env("PATH", path)
        .args(["exec", "--approval", "auto", "read it three times"])
        .stdin(std::process::Stdio::null());
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("squad finished")
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let workers = mock
        .requests()
        .iter()
        .filter(|r| is_worker(&r.body))
        .count();
    assert_eq!(workers, 6, "three workers, two requests each");
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    // The checkpoint before the user's message runs in squad's shadow repository (issue
    // 39): one, whatever the workers do.
    let (checkpoint, calls): (Vec<&str>, Vec<&str>) =
        calls.lines().partition(|c| c.contains("/checkpoints/"));
    let commits = checkpoint.iter().filter(|c| c.contains(" commit-tree "));
    assert_eq!(commits.count(), 1, "one checkpoint: {checkpoint:#?}");
    // A new store's first checkpoint reads the user's repository once to borrow its
    // objects and index (issue 49 part 3): its layout and object format, and whether
    // autocrlf or an attributes file may convert files. Once per session, none per worker.
    let (borrow, calls): (Vec<&str>, Vec<&str>) = calls.into_iter().partition(|c| {
        c.contains(" --show-object-format") || c.contains(" config --get-regexp ^core")
    });
    assert!(borrow.len() <= 2, "the store's borrow, once: {borrow:#?}");
    // The session's own, and the workers' one shared base (a snapshot of the workspace
    // as the persona saw it when it spawned them): none per worker.
    let base = ["add --all", "write-tree", "commit-tree"];
    // (+1: the snapshot's parent, HEAD, a `rev-parse`.)
    assert!(
        calls.len() <= 3 + base.len() + 1,
        "only the session's own: {calls:#?}"
    );
    for call in &calls {
        assert!(
            call.ends_with(" version")
                || call.contains(" rev-parse ")
                || base.iter().any(|b| call.contains(b)),
            "a git process for a worker that did not write: {call}"
        );
    }
    for b in base {
        let n = calls.iter().filter(|c| c.contains(b)).count();
        assert!(n <= 1, "one base for the three: {calls:#?}");
    }
    assert_eq!(git(sb.ws(), &["worktree", "list"]).lines().count(), 1);
}

/// [`repo`] with `n` more committed files (`many/f_<i>.txt`, "file <i>"), `slow.dat`,
/// whose checkout takes 2 s (a smudge filter of the repository's own config), and
/// `zz/last.txt`, written after it (later in index order; with parallel checkout the
/// filtered files go before the ones handed to its helpers): a worktree made for a first write is still being filled seconds after that
/// call ran, and `zz/last.txt` is not there before.
fn slow_repo(n: usize) -> Sandbox {
    let sb = repo();
    for i in 0..n {
        sb.write(&format!("many/f_{i}.txt"), &format!("file {i}\n"));
    }
    sb.write(".gitattributes", "slow.dat filter=slow\n");
    sb.write("slow.dat", "slow to check out\n");
    sb.write("zz/last.txt", "the last file\n");
    git(sb.ws(), &["config", "filter.slow.smudge", "sleep 2; cat"]);
    let added = ["many", ".gitattributes", "slow.dat", "zz"];
    git(sb.ws(), &[&["add"][..], &added].concat());
    git(
        sb.ws(),
        &[&["commit", "-qm", "many", "--"][..], &added].concat(),
    );
    sb
}

/// The marker beside a worktree while its files are still being written.
fn fill_marker(root: &Path) -> PathBuf {
    root.with_extension("filling")
}

/// Every file under `root` but git's own, with its content.
fn files_under(root: &Path) -> std::collections::BTreeMap<String, String> {
    let mut out = std::collections::BTreeMap::new();
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
                let rel = path.strip_prefix(root).unwrap().to_string_lossy();
                let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
                out.insert(rel.into_owned(), text);
            }
        }
    }
    out
}

/// The worktree a worker was given.
fn worktree_of(seen: &[Event], worker: AgentId) -> PathBuf {
    seen.iter()
        .find_map(|e| match &e.kind {
            EventKind::WorktreeCreated { path, .. } if e.agent_id == worker => Some(path.clone()),
            _ => None,
        })
        .expect("the worker got a worktree")
}

/// Each merge's files.
fn merges(seen: &[Event]) -> Vec<Vec<String>> {
    seen.iter()
        .filter_map(|e| match &e.kind {
            EventKind::Merged { files, .. } => Some(files.clone()),
            _ => None,
        })
        .collect()
}

/// The worker's first call, an `edit_file` in a repository of thousands of files, runs
/// while the rest of its worktree is still being written; once written (its next call, a
/// read, waits for that), every other file is there as the workspace has it, `git status`
/// in the worktree shows only the edit, and only the edit is merged.
#[tokio::test(flavor = "multi_thread")]
async fn a_first_edit_among_thousands_of_files_runs_before_the_rest_is_written() {
    let mock = MockServer::start().await;
    let sb = slow_repo(3000);
    let before = files_under(sb.ws());
    mock.set_responder(|body| {
        if !is_worker(body) {
            return persona(body, &["edit many/f_1234.txt"]);
        }
        match tool_count(body) {
            0 => MockResponse::tool_call(
                "e",
                "edit_file",
                &json!({"path": "many/f_1234.txt", "old_text": "file 1234",
                    "new_text": "file 1234, edited"})
                .to_string(),
            ),
            1 => MockResponse::tool_call("r", "read_file", r#"{"path": "a.txt"}"#),
            // Time to look at the worktree before its change is merged.
            _ => returns("ret", "many/f_1234.txt").with_delay(Duration::from_secs(3)),
        }
    });
    let mut h = start_engine_with_data(&mock, &sb, ApprovalPolicy::Auto, |_| {}).await;
    let mut seen = Vec::new();
    say(&h, "edit one file");
    let diff = next_event(&mut h, &mut seen, |e| {
        matches!(e.kind, EventKind::DiffStat(d) if d.files == 1 && d.added == 1 && d.removed == 1)
    })
    .await;
    let wt = worktree_of(&seen, diff.agent_id);
    assert!(
        fill_marker(&wt).exists(),
        "the edit ran before the worktree was filled"
    );
    assert_eq!(
        std::fs::read_to_string(wt.join("many/f_1234.txt")).unwrap(),
        "file 1234, edited\n"
    );
    next_event(&mut h, &mut seen, |e| {
        matches!(&e.kind, EventKind::ItemAdded { item: HistoryItem::ToolResult { call_id, .. } } if call_id == "r")
    })
    .await;
    assert!(!fill_marker(&wt).exists(), "filled before the read ran");
    let mut expected = before.clone();
    expected.insert("many/f_1234.txt".into(), "file 1234, edited\n".into());
    assert_eq!(files_under(&wt), expected);
    assert_eq!(
        git(&wt, &["status", "--porcelain", "--untracked-files=all"]),
        " M many/f_1234.txt\n"
    );
    wait_idle(&mut h, &mut seen).await;

    assert_eq!(merges(&seen), [vec!["many/f_1234.txt".to_string()]]);
    assert_eq!(files_under(sb.ws()), expected);
    assert_users_work_intact(&sb);
}

/// A first `write_file` of a new file, then at once a `read_file` of a file the fill has
/// yet to write: the read waits for it and sees it.
#[tokio::test(flavor = "multi_thread")]
async fn a_read_right_after_the_first_write_waits_for_the_rest_and_sees_it() {
    let mock = MockServer::start().await;
    let sb = slow_repo(200);
    mock.set_responder(|body| {
        if !is_worker(body) {
            return persona(body, &["write new.txt"]);
        }
        match tool_count(body) {
            0 => write("w", "new.txt", "new\n"),
            1 => MockResponse::tool_call("r", "read_file", r#"{"path": "zz/last.txt"}"#),
            _ => returns("ret", "new.txt"),
        }
    });
    let mut h = start_engine_with_data(&mock, &sb, ApprovalPolicy::Auto, |_| {}).await;
    let mut seen = Vec::new();
    say(&h, "write it");
    let diff = next_event(
        &mut h,
        &mut seen,
        |e| matches!(e.kind, EventKind::DiffStat(d) if d.files == 1 && d.added == 1),
    )
    .await;
    let wt = worktree_of(&seen, diff.agent_id);
    assert!(fill_marker(&wt).exists(), "the write ran while filling");
    wait_idle(&mut h, &mut seen).await;

    let read = mock
        .requests()
        .into_iter()
        .filter(|r| is_worker(&r.body))
        .find_map(|r| {
            tool_messages(&r.body)
                .into_iter()
                .find(|(id, _)| id == "r")
                .map(|(_, out)| out)
        })
        .expect("the read's result went back");
    assert!(read.contains("the last file"), "{read}");
    assert_eq!(merges(&seen), [vec!["new.txt".to_string()]]);
    assert!(!fill_marker(&wt).exists());
}

/// `return_results` right after the first write, long before the worktree is filled:
/// the merge waits for the fill and brings only the worker's file, not a deletion of
/// every file not yet written.
#[tokio::test(flavor = "multi_thread")]
async fn a_result_returned_right_after_the_first_write_merges_only_that_write() {
    let mock = MockServer::start().await;
    let sb = slow_repo(500);
    let before = files_under(sb.ws());
    mock.set_responder(|body| {
        if !is_worker(body) {
            return persona(body, &["write new.txt"]);
        }
        match tool_count(body) {
            0 => write("w", "new.txt", "new\n"),
            _ => returns("ret", "new.txt"),
        }
    });
    let mut h = start_engine_with_data(&mock, &sb, ApprovalPolicy::Auto, |_| {}).await;
    let mut seen = Vec::new();
    say(&h, "write it");
    let diff = next_event(&mut h, &mut seen, |e| {
        matches!(e.kind, EventKind::DiffStat(_))
    })
    .await;
    assert!(fill_marker(&worktree_of(&seen, diff.agent_id)).exists());
    wait_idle(&mut h, &mut seen).await;

    assert_eq!(merges(&seen), [vec!["new.txt".to_string()]]);
    let mut expected = before;
    expected.insert("new.txt".into(), "new\n".into());
    assert_eq!(files_under(sb.ws()), expected);
    assert_users_work_intact(&sb);
}

/// A first call that deletes and moves files (a patch) does not run before the worktree
/// is whole: when it ran every other file was there, and its effect is what is merged.
#[tokio::test(flavor = "multi_thread")]
async fn a_first_call_that_deletes_or_moves_waits_for_the_whole_worktree() {
    let mock = MockServer::start().await;
    let sb = slow_repo(50);
    let patch = "*** Begin Patch\n*** Delete File: a.txt\n*** Update File: many/f_3.txt\n\
                 *** Move to: moved/f_3.txt\n@@\n-file 3\n+file 3, moved\n*** End Patch\n";
    mock.set_responder(move |body| {
        if !is_worker(body) {
            return persona(body, &["move things"]);
        }
        match tool_count(body) {
            0 => MockResponse::tool_call("p", "apply_patch", &json!({"patch": patch}).to_string()),
            _ => returns("r", "moved/f_3.txt"),
        }
    });
    let mut h = start_engine_with_data(&mock, &sb, ApprovalPolicy::Auto, |_| {}).await;
    let mut seen = Vec::new();
    say(&h, "move");
    let diff = next_event(&mut h, &mut seen, |e| {
        matches!(e.kind, EventKind::DiffStat(_))
    })
    .await;
    let wt = worktree_of(&seen, diff.agent_id);
    assert!(!fill_marker(&wt).exists());
    let mut expected = files_under(sb.ws());
    expected.remove("a.txt");
    expected.remove("many/f_3.txt");
    expected.insert("moved/f_3.txt".into(), "file 3, moved\n".into());
    assert_eq!(files_under(&wt), expected, "whole when the patch ran");
    wait_idle(&mut h, &mut seen).await;

    assert_eq!(
        merges(&seen),
        [vec![
            "a.txt".to_string(),
            "many/f_3.txt".to_string(),
            "moved/f_3.txt".to_string()
        ]]
    );
    assert_eq!(files_under(sb.ws()), expected);
}

/// When the worktree's files cannot all be written (a required filter fails on one), the
/// worker's supervisor and the front end are told, the worker's next calls are refused
/// instead of running in a half-written tree, nothing is merged, and nothing hangs.
#[tokio::test(flavor = "multi_thread")]
async fn a_worktree_that_cannot_be_filled_is_told_and_its_calls_refused() {
    let mock = MockServer::start().await;
    let sb = repo();
    sb.write(".gitattributes", "broken.txt filter=broken\n");
    sb.write("broken.txt", "cannot be checked out\n");
    git(sb.ws(), &["config", "filter.broken.clean", "cat"]);
    git(sb.ws(), &["config", "filter.broken.smudge", "false"]);
    git(sb.ws(), &["config", "filter.broken.required", "true"]);
    git(sb.ws(), &["add", ".gitattributes", "broken.txt"]);
    git(
        sb.ws(),
        &[
            "commit",
            "-qm",
            "filter",
            "--",
            ".gitattributes",
            "broken.txt",
        ],
    );
    mock.set_responder(|body| {
        if !is_worker(body) {
            return persona(body, &["write new.txt"]);
        }
        match tool_count(body) {
            0 => write("w", "new.txt", "new\n"),
            1 => MockResponse::tool_call("r", "read_file", r#"{"path": "a.txt"}"#),
            _ => returns("ret", "new.txt"),
        }
    });
    let mut h = start_engine_with_data(&mock, &sb, ApprovalPolicy::Auto, |_| {}).await;
    let mut seen = Vec::new();
    say(&h, "write it");
    wait_idle(&mut h, &mut seen).await;

    let worker = agents_with(&seen, |k| matches!(k, EventKind::WorktreeCreated { .. }))[0];
    let errors: Vec<String> = seen
        .iter()
        .filter(|e| e.agent_id == worker)
        .filter_map(|e| match &e.kind {
            EventKind::Error { message } => Some(message.clone()),
            _ => None,
        })
        .collect();
    assert!(
        errors
            .iter()
            .any(|m| m.contains("could not all be written") && m.contains("refused")),
        "{errors:?}"
    );
    let refused = seen
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ItemAdded {
                item:
                    HistoryItem::ToolResult {
                        call_id,
                        output,
                        is_error: true,
                        ..
                    },
            } if call_id == "r" => Some(output.clone()),
            _ => None,
        })
        .expect("the read was refused");
    assert!(refused.contains("your worktree is incomplete"), "{refused}");
    assert!(merges(&seen).is_empty());
    assert!(!sb.ws().join("new.txt").exists());
    assert_users_work_intact(&sb);
}

/// A `post_tool_use` hook of the first write runs in the worktree like a command: only
/// once all its files are there (the real binary, with the hook in the user's config).
#[tokio::test(flavor = "multi_thread")]
async fn a_hook_of_the_first_write_sees_the_whole_worktree() {
    let mock = MockServer::start().await;
    let sb = slow_repo(300);
    std::fs::create_dir_all(sb.config_dir()).unwrap();
    std::fs::write(
        sb.config_dir().join("config.toml"),
        r#"
[[hooks]]
event = "post_tool_use"
matcher = "write_file"
command = "cat zz/last.txt > hook-saw.txt"
"#,
    )
    .unwrap();
    mock.set_responder(|body| {
        if !is_worker(body) {
            return persona(body, &["write new.txt"]);
        }
        match tool_count(body) {
            0 => write("w", "new.txt", "new\n"),
            _ => returns("ret", "new.txt"),
        }
    });
    let run = sb.exec(&mock, &["--approval", "auto", "write it"]).await;
    run.assert_ok();
    assert_eq!(sb.read("new.txt"), "new\n");
    // Written in the worktree by the hook, merged with the worker's change.
    assert_eq!(sb.read("hook-saw.txt"), "the last file\n");
}

/// The real binary: a worker whose `run_command` only reads (`ls`, `git status`, `cat`…)
/// runs it in the workspace and gets no worktree; a worker whose command writes gets its
/// worktree before it runs, and its file reaches the workspace by the merge.
#[tokio::test(flavor = "multi_thread")]
async fn a_reading_command_gets_no_worktree_and_a_writing_one_does() {
    let mock = MockServer::start().await;
    let sb = repo();
    let (data, ws) = (sb.data_dir(), sb.ws().to_path_buf());
    let roots: Arc<Mutex<Vec<(bool, PathBuf)>>> = Arc::default();
    let seen_roots = roots.clone();
    let workspace = ws.clone();
    mock.set_responder(move |body| {
        if !is_worker(body) {
            return persona(body, &["look around", "write out.txt"]);
        }
        let reading = task_of(body).contains("look around");
        match tool_count(body) {
            0 if reading => MockResponse::tool_call(
                "c0",
                "run_command",
                &json!({"command": "ls -la && git status --short && cat a.txt | head -3 2>/dev/null"})
                    .to_string(),
            ),
            0 => MockResponse::tool_call(
                "c0",
                "run_command",
                &json!({"command": "echo written > out.txt"}).to_string(),
            ),
            _ => {
                sync_push(&seen_roots, (reading, root_of(&data, &workspace, body)));
                if reading {
                    MockResponse::tool_call(
                        "r",
                        "return_results",
                        &json!({"result": {"status": "success", "summary": "looked",
                            "artifacts": [], "known_issues": []}})
                        .to_string(),
                    )
                } else {
                    returns("r", "out.txt")
                }
            }
        }
    });
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "look and write"])
        .await;
    run.assert_ok();
    let events = run.events();
    let created = of_type(&events, "worktree_created");
    assert_eq!(created.len(), 1, "only the writer: {created:#?}");
    let roots = roots.lock().unwrap().clone();
    let reader: Vec<&PathBuf> = roots.iter().filter(|(r, _)| *r).map(|(_, p)| p).collect();
    let writer: Vec<&PathBuf> = roots.iter().filter(|(r, _)| !*r).map(|(_, p)| p).collect();
    assert_eq!(reader, [&ws], "the reader ran in the workspace");
    assert_eq!(writer.len(), 1);
    assert_ne!(writer[0], &ws, "the writer ran in its worktree");
    assert_eq!(
        PathBuf::from(created[0]["path"].as_str().unwrap()),
        *writer[0]
    );
    // The reader's command ran and saw the workspace's files.
    let outputs: Vec<String> = mock
        .requests()
        .iter()
        .filter(|r| is_worker(&r.body) && task_of(&r.body).contains("look around"))
        .flat_map(|r| tool_messages(&r.body))
        .map(|(_, text)| text)
        .collect();
    assert!(
        outputs
            .iter()
            .any(|o| o.contains("line 1") && o.contains("notes.md")),
        "{outputs:#?}"
    );
    assert_eq!(sb.read("out.txt"), "written\n", "merged into the workspace");
    assert_users_work_intact(&sb);
}

fn sync_push<T>(list: &Mutex<Vec<T>>, item: T) {
    list.lock().unwrap().push(item);
}
