//! Checkpoints before each user message and `squad exec --resume ID --rewind N`, on the
//! real binary against the mock model server (issue 39, part 1).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::Value;

fn write_call(id: &str, path: &str, content: &str) -> MockResponse {
    let args = serde_json::json!({ "path": path, "content": content }).to_string();
    MockResponse::tool_call(id, "write_file", &args)
}

fn seq_of(events: &[Value], pred: impl Fn(&Value) -> bool) -> u64 {
    events.iter().find(|e| pred(e)).unwrap()["seq"]
        .as_u64()
        .unwrap()
}

/// Two messages, each writing; returns the sandbox after both.
async fn two_messages(mock: &MockServer) -> Sandbox {
    let sb = Sandbox::new();
    sb.write("a.txt", "one\n");
    mock.push_all([
        write_call("w1", "a.txt", "two\n"),
        MockResponse::text("done 1"),
    ]);
    let run = sb
        .exec(mock, &["--approval", "auto", "--json", "make it two"])
        .await;
    run.assert_ok();
    let events = run.events();
    let started = of_type(&events, "checkpoint_started");
    assert_eq!(started.len(), 1, "one checkpoint per user message");
    assert_eq!(started[0]["message"], 1);
    assert_eq!(started[0]["history_len"], 0);
    let taken = of_type(&events, "checkpoint_taken");
    assert_eq!(taken.len(), 1);
    assert!(taken[0]["checkpoint"].is_string(), "{:?}", taken[0]);
    assert_eq!(taken[0]["agent_id"], started[0]["agent_id"]);
    // The write of the turn ran only after its checkpoint was taken.
    let taken_at = seq_of(&events, |e| e["type"] == "checkpoint_taken");
    let write_at = seq_of(&events, |e| {
        e["type"] == "item_added" && e["item"]["call_id"] == "w1"
    });
    assert!(
        taken_at < write_at,
        "checkpoint {taken_at}, write {write_at}"
    );
    assert_eq!(sb.read("a.txt"), "two\n");

    mock.push_all([
        write_call("w2", "a.txt", "three\n"),
        write_call("w3", "sub/b.txt", "new\n"),
        MockResponse::text("done 2"),
    ]);
    let run = sb
        .exec(
            mock,
            &["--approval", "auto", "--json", "--resume", "last", "more"],
        )
        .await;
    run.assert_ok();
    let started = of_type(&run.events(), "checkpoint_started").len();
    assert_eq!(started, 1);
    sb
}

#[tokio::test(flavor = "multi_thread")]
async fn rewind_puts_back_the_files_then_the_conversation() {
    let mock = MockServer::start().await;
    let sb = two_messages(&mock).await;
    assert_eq!(sb.read("sub/b.txt"), "new\n");
    // The user's git is not squad's: no repository was made in the workspace.
    assert!(!sb.ws().join(".git").exists());

    let run = sb
        .exec(
            &mock,
            &[
                "--resume",
                "last",
                "--rewind",
                "2",
                "--rewind-what",
                "files",
            ],
        )
        .await;
    run.assert_ok();
    assert!(run.stderr.contains("to before message 2"), "{}", run.stderr);
    assert_eq!(sb.read("a.txt"), "two\n");
    assert!(!sb.ws().join("sub").exists(), "the file made since is gone");

    let run = sb.exec(&mock, &["--resume", "last", "--rewind", "1"]).await;
    run.assert_ok();
    assert_eq!(sb.read("a.txt"), "one\n");
    assert!(
        run.stderr.contains("conversation: 0 items kept"),
        "{}",
        run.stderr
    );

    // The resumed persona hears only the new message: its conversation was rewound.
    mock.push(MockResponse::text("fresh"));
    sb.exec(&mock, &["--resume", "last", "start again"])
        .await
        .assert_ok();
    let t = transcript(&mock.requests().last().unwrap().body);
    let roles: Vec<&str> = t.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(roles, ["system", "user"], "{t:?}");
    assert_eq!(t[1].1, "start again");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_user_edit_since_is_named_and_kept_unless_forced() {
    let mock = MockServer::start().await;
    let sb = two_messages(&mock).await;
    sb.write("a.txt", "mine\n");
    let run = sb.exec(&mock, &["--resume", "last", "--rewind", "1"]).await;
    assert_ne!(run.code, 0);
    assert!(run.stderr.contains("a.txt"), "{}", run.stderr);
    assert!(run.stderr.contains("--force"), "{}", run.stderr);
    assert_eq!(sb.read("a.txt"), "mine\n", "nothing overwritten");
    assert_eq!(sb.read("sub/b.txt"), "new\n", "nothing changed at all");

    let run = sb.exec(&mock, &["--resume", "last", "--rewind", "9"]).await;
    assert_ne!(run.code, 0);
    assert!(run.stderr.contains("no user message 9"), "{}", run.stderr);

    let run = sb
        .exec(&mock, &["--resume", "last", "--rewind", "1", "--force"])
        .await;
    run.assert_ok();
    assert_eq!(sb.read("a.txt"), "one\n");
    assert!(!sb.ws().join("sub/b.txt").exists());
}

/// Ten numbered lines, each of `changed` replaced by its text.
fn lines(changed: &[(usize, &str)]) -> String {
    (1..=10)
        .map(|i| match changed.iter().find(|(n, _)| *n == i) {
            Some((_, text)) => format!("{text}\n"),
            None => format!("line {i}\n"),
        })
        .collect()
}

/// A git repository with `a.txt` committed, made before the session starts (isolation is
/// chosen at start).
fn repo() -> Sandbox {
    let sb = Sandbox::new();
    git(sb.ws(), &["init", "-q"]);
    sb.write("a.txt", &lines(&[]));
    git(sb.ws(), &["add", "-A"]);
    git(sb.ws(), &["commit", "-qm", "start"]);
    sb
}

/// In [`repo`], the persona's one message spawned an implementer that changed
/// line 3 of `a.txt` and made `w.txt`; its change is merged and the team rests. Returns
/// the worker's id.
async fn merged_worker(
    mock: &MockServer,
    sb: &Sandbox,
    h: &mut ::squad::runtime::SessionHandle,
    seen: &mut Vec<::squad::protocol::Event>,
) -> ::squad::protocol::AgentId {
    use common::agents::*;
    use serde_json::json;
    mock.set_responder(|body| {
        if is_worker(body) {
            return match tool_count(body) {
                0 => MockResponse::tool_calls(vec![
                    call(
                        "w1",
                        "write_file",
                        json!({"path": "a.txt", "content": lines(&[(3, "line 3 by the worker")])}),
                    ),
                    call(
                        "w2",
                        "write_file",
                        json!({"path": "w.txt", "content": "new\n"}),
                    ),
                ]),
                _ => {
                    MockResponse::tool_call("r", "return_results", &good_result("done").to_string())
                }
            };
        }
        match tool_count(body) {
            0 => spawn("implementer", "change line 3"),
            1 => MockResponse::tool_call("wait", "wait_for_agents", "{}"),
            _ => MockResponse::text("the worker changed line 3"),
        }
    });
    common::engine::say(h, "have a worker change line 3");
    let merged = common::engine::wait_event(h, seen, std::time::Duration::from_secs(30), |e| {
        matches!(e.kind, ::squad::protocol::EventKind::Merged { .. })
    })
    .await;
    let kinds: Vec<String> = seen
        .iter()
        .map(|e| format!("{:?}", e.kind).chars().take(200).collect())
        .collect();
    let merged = merged.unwrap_or_else(|| panic!("{kinds:#?}"));
    let idle = common::engine::wait_event(h, seen, std::time::Duration::from_secs(30), |e| {
        matches!(e.kind, ::squad::protocol::EventKind::Idle)
    })
    .await;
    let kinds: Vec<String> = seen
        .iter()
        .map(|e| format!("{:?}", e.kind).chars().take(120).collect())
        .collect();
    assert!(idle.is_some(), "{kinds:#?}");
    assert_eq!(sb.read("a.txt"), lines(&[(3, "line 3 by the worker")]));
    assert_eq!(sb.read("w.txt"), "new\n");
    merged.agent_id
}

#[tokio::test(flavor = "multi_thread")]
async fn undo_takes_a_merged_worker_change_out_and_keeps_the_users_edit_since() {
    use ::squad::protocol::{ApprovalPolicy, EventKind, Op};
    let mock = MockServer::start().await;
    let sb = repo();
    let mut h =
        common::engine::start_engine_with_data(&mock, &sb, ApprovalPolicy::Auto, |_| {}).await;
    let mut seen = Vec::new();
    let worker = merged_worker(&mock, &sb, &mut h, &mut seen).await;
    // The user edits another line of the merged file, then takes the worker's change back.
    let users = lines(&[(3, "line 3 by the worker"), (9, "line 9 by the user")]);
    sb.write("a.txt", &users);
    let undo = |force| Op::UndoMerge {
        agent_id: worker,
        force,
    };
    h.ops.send(undo(false)).unwrap();
    let done = common::engine::next_event(&mut h, &mut seen, |e| {
        matches!(
            e.kind,
            EventKind::MergeUndone { .. } | EventKind::UndoRefused { .. }
        )
    })
    .await;
    let EventKind::MergeUndone { files } = &done.kind else {
        panic!("{done:?}")
    };
    assert_eq!(files, &["a.txt", "w.txt"]);
    assert_eq!(done.agent_id, worker);
    assert_eq!(sb.read("a.txt"), lines(&[(9, "line 9 by the user")]));
    assert!(!sb.ws().join("w.txt").exists());

    // Nothing is left to undo: said, and nothing changes.
    h.ops.send(undo(false)).unwrap();
    let said = common::engine::next_event(&mut h, &mut seen, |e| {
        e.agent_id == worker && matches!(e.kind, EventKind::Error { .. })
    })
    .await;
    assert!(
        format!("{said:?}").contains("no merged change to undo"),
        "{said:?}"
    );
    assert_eq!(sb.read("a.txt"), lines(&[(9, "line 9 by the user")]));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_undo_over_lines_the_user_changed_asks_and_changes_nothing_until_forced() {
    use ::squad::protocol::{ApprovalPolicy, EventKind, Op};
    let mock = MockServer::start().await;
    let sb = repo();
    let mut h =
        common::engine::start_engine_with_data(&mock, &sb, ApprovalPolicy::Auto, |_| {}).await;
    let mut seen = Vec::new();
    let worker = merged_worker(&mock, &sb, &mut h, &mut seen).await;
    let users = lines(&[(3, "line 3 as the user fixed it")]);
    sb.write("a.txt", &users);
    h.ops
        .send(Op::UndoMerge {
            agent_id: worker,
            force: false,
        })
        .unwrap();
    let asked = common::engine::next_event(&mut h, &mut seen, |e| {
        matches!(
            e.kind,
            EventKind::MergeUndone { .. } | EventKind::UndoRefused { .. }
        )
    })
    .await;
    let EventKind::UndoRefused { conflicts } = &asked.kind else {
        panic!("{asked:?}")
    };
    assert_eq!(conflicts.len(), 1);
    assert_eq!(conflicts[0].path, "a.txt");
    assert_eq!(sb.read("a.txt"), users, "the user's edit is kept");
    assert_eq!(sb.read("w.txt"), "new\n", "nothing was undone");
    h.ops
        .send(Op::UndoMerge {
            agent_id: worker,
            force: true,
        })
        .unwrap();
    common::engine::next_event(&mut h, &mut seen, |e| {
        matches!(e.kind, EventKind::MergeUndone { .. })
    })
    .await;
    assert_eq!(sb.read("a.txt"), lines(&[]));
    assert!(!sb.ws().join("w.txt").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn rewind_in_a_session_lists_messages_and_puts_back_a_merge_but_asks_about_the_users_file() {
    use ::squad::protocol::{ApprovalPolicy, EventKind, FileChangeKind, HistoryItem, Op};
    let mock = MockServer::start().await;
    let sb = repo();
    let mut h =
        common::engine::start_engine_with_data(&mock, &sb, ApprovalPolicy::Auto, |_| {}).await;
    let mut seen = Vec::new();
    merged_worker(&mock, &sb, &mut h, &mut seen).await;
    sb.write("notes.md", "the user's notes\n");

    h.ops.send(Op::ListCheckpoints).unwrap();
    let listed = common::engine::next_event(&mut h, &mut seen, |e| {
        matches!(e.kind, EventKind::Checkpoints { .. })
    })
    .await;
    let EventKind::Checkpoints { list } = &listed.kind else {
        unreachable!()
    };
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(list[0].message, 1);
    assert_eq!(list[0].text, "have a worker change line 3");
    let mut changes: Vec<(String, FileChangeKind)> = (list[0].changes.clone().unwrap())
        .into_iter()
        .map(|c| (c.path, c.kind))
        .collect();
    changes.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        changes,
        [
            ("a.txt".to_string(), FileChangeKind::Modified),
            ("notes.md".to_string(), FileChangeKind::Added),
            ("w.txt".to_string(), FileChangeKind::Added),
        ]
    );

    let rewind_to = |message| Op::Rewind {
        message,
        files: true,
        conversation: true,
        force: false,
    };
    // The merge is squad's and goes without asking; the user's new file is asked about.
    let rewind = |force| Op::Rewind {
        message: 1,
        files: true,
        conversation: true,
        force,
    };
    h.ops.send(rewind(false)).unwrap();
    let refused = common::engine::next_event(&mut h, &mut seen, |e| {
        matches!(
            e.kind,
            EventKind::RewindRefused { .. } | EventKind::Rewound { .. }
        )
    })
    .await;
    assert!(
        matches!(&refused.kind, EventKind::RewindRefused { conflicts, .. } if conflicts == &["notes.md"]),
        "{refused:?}"
    );
    assert_eq!(sb.read("w.txt"), "new\n", "nothing changed");
    std::fs::remove_file(sb.ws().join("notes.md")).unwrap();
    h.ops.send(rewind(false)).unwrap();
    let done = common::engine::next_event(&mut h, &mut seen, |e| {
        matches!(
            e.kind,
            EventKind::RewindRefused { .. } | EventKind::Rewound { .. }
        )
    })
    .await;
    let EventKind::Rewound { history, .. } = &done.kind else {
        panic!("{done:?}")
    };
    assert_eq!(history.as_deref(), Some(&[][..] as &[HistoryItem]));
    assert_eq!(sb.read("a.txt"), lines(&[]));
    assert!(!sb.ws().join("w.txt").exists());

    // The rewind can itself be taken back: the state before it is listed.
    h.ops.send(Op::ListCheckpoints).unwrap();
    let listed = common::engine::next_event(&mut h, &mut seen, |e| {
        matches!(e.kind, EventKind::Checkpoints { .. })
    })
    .await;
    let EventKind::Checkpoints { list } = &listed.kind else {
        unreachable!()
    };
    let texts: Vec<(u32, &str)> = list.iter().map(|c| (c.message, c.text.as_str())).collect();
    assert_eq!(
        texts,
        [
            (1, "have a worker change line 3"),
            (2, "(before the rewind to message 1)")
        ]
    );
    h.ops.send(rewind_to(2)).unwrap();
    common::engine::next_event(&mut h, &mut seen, |e| {
        matches!(&e.kind, EventKind::Rewound { message: 2, .. })
    })
    .await;
    assert_eq!(sb.read("a.txt"), lines(&[(3, "line 3 by the worker")]));
    assert_eq!(sb.read("w.txt"), "new\n");
    // And back again, to go on from the rewound conversation.
    h.ops.send(rewind_to(1)).unwrap();
    common::engine::next_event(&mut h, &mut seen, |e| {
        matches!(&e.kind, EventKind::Rewound { message: 1, .. })
    })
    .await;
    assert_eq!(sb.read("a.txt"), lines(&[]));

    // The persona's next request starts from the rewound conversation.
    mock.set_responder(|_| MockResponse::text("fresh start"));
    common::engine::say(&h, "start again");
    common::engine::next_event(&mut h, &mut seen, |e| {
        matches!(&e.kind, EventKind::ItemAdded { item: HistoryItem::Assistant { text, .. } } if text == "fresh start")
    })
    .await;
    let t = transcript(&mock.requests().last().unwrap().body);
    let roles: Vec<&str> = t.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(roles, ["system", "user"], "{t:?}");
}
