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
    // A refused rewind has its own exit code: it is no usage error (2).
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert!(run.stderr.contains("a.txt"), "{}", run.stderr);
    assert!(run.stderr.contains("--force"), "{}", run.stderr);
    assert_eq!(sb.read("a.txt"), "mine\n", "nothing overwritten");
    assert_eq!(sb.read("sub/b.txt"), "new\n", "nothing changed at all");

    let run = sb.exec(&mock, &["--resume", "last", "--rewind", "9"]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
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

use ::squad::protocol::{AgentId, ApprovalPolicy, Event, EventKind, HistoryItem, Op};

/// A session in [`repo`] whose one message had an implementer change line 3 of `a.txt`
/// and make `w.txt`; its change is merged and the team rests.
struct AfterMerge {
    mock: MockServer,
    sb: Sandbox,
    h: ::squad::runtime::SessionHandle,
    seen: Vec<Event>,
    worker: AgentId,
}

impl AfterMerge {
    async fn start() -> Self {
        use common::agents::*;
        use serde_json::json;
        let mock = MockServer::start().await;
        let sb = repo();
        let h =
            common::engine::start_engine_with_data(&mock, &sb, ApprovalPolicy::Auto, |_| {}).await;
        mock.set_responder(|body| {
            if is_worker(body) {
                return match tool_count(body) {
                    0 => MockResponse::tool_calls(vec![
                        call(
                            "w1",
                            "write_file",
                            json!({"path": "a.txt", "content": lines(&[(3, "line 3 by the worker")])}),
                        ),
                        call("w2", "write_file", json!({"path": "w.txt", "content": "new\n"})),
                    ]),
                    _ => MockResponse::tool_call(
                        "r",
                        "return_results",
                        &good_result("done").to_string(),
                    ),
                };
            }
            match tool_count(body) {
                0 => spawn("implementer", "change line 3"),
                1 => MockResponse::tool_call("wait", "wait_for_agents", "{}"),
                _ => MockResponse::text("the worker changed line 3"),
            }
        });
        let mut s = Self {
            mock,
            sb,
            h,
            seen: Vec::new(),
            worker: AgentId::new(),
        };
        common::engine::say(&s.h, "have a worker change line 3");
        s.worker = s
            .next(|e| matches!(e.kind, EventKind::Merged { .. }))
            .await
            .agent_id;
        s.next(|e| matches!(e.kind, EventKind::Idle)).await;
        assert_eq!(s.sb.read("a.txt"), lines(&[(3, "line 3 by the worker")]));
        assert_eq!(s.sb.read("w.txt"), "new\n");
        s
    }

    async fn next(&mut self, f: impl Fn(&Event) -> bool) -> Event {
        common::engine::next_event(&mut self.h, &mut self.seen, f).await
    }

    /// Sends `op` and waits for the event that answers it.
    async fn ask(&mut self, op: Op, answer: impl Fn(&Event) -> bool) -> Event {
        self.h.ops.send(op).unwrap();
        self.next(answer).await
    }

    async fn undo(&mut self, force: bool) -> Event {
        let op = Op::UndoMerge {
            agent_id: self.worker,
            force,
        };
        self.ask(op, |e| {
            matches!(
                e.kind,
                EventKind::MergeUndone { .. }
                    | EventKind::UndoRefused { .. }
                    | EventKind::Error { .. }
            )
        })
        .await
    }

    async fn rewind(&mut self, message: u32, force: bool) -> Event {
        let op = Op::Rewind {
            message,
            files: true,
            conversation: true,
            force,
        };
        self.ask(op, |e| {
            matches!(
                e.kind,
                EventKind::RewindRefused { .. } | EventKind::Rewound { .. }
            )
        })
        .await
    }

    async fn checkpoints(&mut self) -> Vec<::squad::protocol::CheckpointSummary> {
        let listed = self
            .ask(Op::ListCheckpoints, |e| {
                matches!(e.kind, EventKind::Checkpoints { .. })
            })
            .await;
        let EventKind::Checkpoints { list } = listed.kind else {
            unreachable!()
        };
        list
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn undo_takes_a_merged_worker_change_out_and_keeps_the_users_edit_since() {
    let mut s = AfterMerge::start().await;
    // The user edits another line of the merged file, then takes the worker's change back.
    let users = lines(&[(3, "line 3 by the worker"), (9, "line 9 by the user")]);
    s.sb.write("a.txt", &users);
    let done = s.undo(false).await;
    let EventKind::MergeUndone { files } = &done.kind else {
        panic!("{done:?}")
    };
    assert_eq!(files, &["a.txt", "w.txt"]);
    assert_eq!(done.agent_id, s.worker);
    assert_eq!(s.sb.read("a.txt"), lines(&[(9, "line 9 by the user")]));
    assert!(!s.sb.ws().join("w.txt").exists());

    // Nothing is left to undo: said, and nothing changes.
    let said = s.undo(false).await;
    assert_eq!(said.agent_id, s.worker);
    assert!(
        format!("{said:?}").contains("no merged change to undo"),
        "{said:?}"
    );
    assert_eq!(s.sb.read("a.txt"), lines(&[(9, "line 9 by the user")]));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_undo_over_lines_the_user_changed_asks_and_changes_nothing_until_forced() {
    let mut s = AfterMerge::start().await;
    let users = lines(&[(3, "line 3 as the user fixed it")]);
    s.sb.write("a.txt", &users);
    let asked = s.undo(false).await;
    let EventKind::UndoRefused { conflicts } = &asked.kind else {
        panic!("{asked:?}")
    };
    assert_eq!(conflicts.len(), 1);
    assert_eq!(conflicts[0].path, "a.txt");
    assert_eq!(s.sb.read("a.txt"), users, "the user's edit is kept");
    assert_eq!(s.sb.read("w.txt"), "new\n", "nothing was undone");
    let done = s.undo(true).await;
    assert!(
        matches!(done.kind, EventKind::MergeUndone { .. }),
        "{done:?}"
    );
    assert_eq!(s.sb.read("a.txt"), lines(&[]));
    assert!(!s.sb.ws().join("w.txt").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn rewind_in_a_session_lists_messages_and_puts_back_a_merge_but_asks_about_the_users_file() {
    use ::squad::protocol::FileChangeKind;
    let mut s = AfterMerge::start().await;
    s.sb.write("notes.md", "the user's notes\n");

    let list = s.checkpoints().await;
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

    // The merge is squad's and goes without asking; the user's new file is asked about.
    let refused = s.rewind(1, false).await;
    assert!(
        matches!(&refused.kind, EventKind::RewindRefused { conflicts, .. } if conflicts == &["notes.md"]),
        "{refused:?}"
    );
    assert_eq!(s.sb.read("w.txt"), "new\n", "nothing changed");
    std::fs::remove_file(s.sb.ws().join("notes.md")).unwrap();
    let done = s.rewind(1, false).await;
    let EventKind::Rewound { history, .. } = &done.kind else {
        panic!("{done:?}")
    };
    assert_eq!(history.as_deref(), Some(&[][..] as &[HistoryItem]));
    assert_eq!(s.sb.read("a.txt"), lines(&[]));
    assert!(!s.sb.ws().join("w.txt").exists());

    // The rewind can itself be taken back: the state before it is listed.
    let list = s.checkpoints().await;
    let texts: Vec<(u32, &str)> = list.iter().map(|c| (c.message, c.text.as_str())).collect();
    assert_eq!(
        texts,
        [
            (1, "have a worker change line 3"),
            (2, "(before the rewind to message 1)")
        ]
    );
    let done = s.rewind(2, false).await;
    assert!(
        matches!(done.kind, EventKind::Rewound { message: 2, .. }),
        "{done:?}"
    );
    assert_eq!(s.sb.read("a.txt"), lines(&[(3, "line 3 by the worker")]));
    assert_eq!(s.sb.read("w.txt"), "new\n");
    // And back again, to go on from the rewound conversation.
    let done = s.rewind(1, false).await;
    assert!(
        matches!(done.kind, EventKind::Rewound { message: 1, .. }),
        "{done:?}"
    );
    assert_eq!(s.sb.read("a.txt"), lines(&[]));

    // The persona's next request starts from the rewound conversation.
    s.mock.set_responder(|_| MockResponse::text("fresh start"));
    common::engine::say(&s.h, "start again");
    s.next(|e| {
        matches!(&e.kind, EventKind::ItemAdded { item: HistoryItem::Assistant { text, .. } } if text == "fresh start")
    })
    .await;
    let t = transcript(&s.mock.requests().last().unwrap().body);
    let roles: Vec<&str> = t.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(roles, ["system", "user"], "{t:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rewind_while_the_persona_works_stops_the_team_first() {
    let mut s = AfterMerge::start().await;
    s.mock.set_responder(|_| {
        MockResponse::text("slow answer").with_delay(std::time::Duration::from_secs(20))
    });
    common::engine::say(&s.h, "take your time");
    s.next(|e| matches!(e.kind, EventKind::TurnStarted)).await;
    let done = s.rewind(1, false).await;
    assert!(matches!(done.kind, EventKind::Rewound { .. }), "{done:?}");
    let stopped = s
        .seen
        .iter()
        .position(|e| matches!(e.kind, EventKind::Stopped { .. }));
    let rewound = s.seen.len() - 1;
    assert!(
        stopped.is_some_and(|at| at < rewound),
        "stopped before rewinding"
    );
    assert_eq!(s.sb.read("a.txt"), lines(&[]));
}

/// How to run squad so that a file with mode 000 is unreadable to it: directly when the
/// tests do not run as root; as root, with the capabilities that read anything dropped
/// (`setpriv`). `None` when neither works here.
fn unreadable_to_squad(secret: &std::path::Path) -> Option<Vec<&'static str>> {
    if std::fs::read(secret).is_err() {
        return Some(Vec::new());
    }
    let wrapper = vec![
        "setpriv",
        "--bounding-set=-dac_override,-dac_read_search",
        "--inh-caps=-all",
        "--",
    ];
    let cat = std::process::Command::new(wrapper[0])
        .args(&wrapper[1..])
        .arg("cat")
        .arg(secret)
        .output();
    match cat {
        Ok(out) if !out.status.success() => Some(wrapper),
        _ => None,
    }
}

/// One unreadable file no longer turns checkpoints off: the checkpoint is taken without
/// it, the run says so once, and a rewind puts back the rest (issue 50).
#[tokio::test(flavor = "multi_thread")]
async fn an_unreadable_file_is_skipped_and_told_once() {
    use std::os::unix::fs::PermissionsExt;
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("a.txt", "one\n");
    sb.write("secret.txt", "do not read\n");
    let secret = sb.ws().join("secret.txt");
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o000)).unwrap();
    let Some(wrapper) = unreadable_to_squad(&secret) else {
        eprintln!("skipped: no way here to make a file unreadable to squad (root, no setpriv)");
        return;
    };
    mock.push_all([
        write_call("w1", "a.txt", "two\n"),
        MockResponse::text("done"),
    ]);
    let mut cmd = sb.command_under(&wrapper, Some(&mock));
    cmd.args(["exec", "--approval", "auto", "--json", "make it two"]);
    let run = Run::from(run_with_timeout(cmd).await);
    run.assert_ok();
    let events = run.events();
    let taken = of_type(&events, "checkpoint_taken");
    assert!(taken[0]["checkpoint"].is_string(), "{:?}", taken[0]);
    let told: Vec<&Value> = events
        .iter()
        .filter(|e| e.to_string().contains("secret.txt"))
        .collect();
    assert_eq!(told.len(), 1, "said once: {told:?}");
    assert_eq!(told[0]["type"], "notice");
    assert_eq!(
        told[0]["message"],
        "rewind will not restore secret.txt: it cannot be read"
    );
    assert_eq!(sb.read("a.txt"), "two\n");

    // Without --json, the run says it on its standard error.
    mock.push(MockResponse::text("nothing"));
    let mut cmd = sb.command_under(&wrapper, Some(&mock));
    cmd.args(["exec", "--resume", "last", "look"]);
    let run = Run::from(run_with_timeout(cmd).await);
    run.assert_ok();
    assert!(
        run.stderr
            .contains("rewind will not restore secret.txt: it cannot be read"),
        "{}",
        run.stderr
    );

    let mut cmd = sb.command_under(&wrapper, Some(&mock));
    cmd.args([
        "exec",
        "--resume",
        "last",
        "--rewind",
        "1",
        "--rewind-what",
        "files",
    ]);
    let run = Run::from(run_with_timeout(cmd).await);
    run.assert_ok();
    assert_eq!(sb.read("a.txt"), "one\n");
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(sb.read("secret.txt"), "do not read\n", "left as it was");
}

/// A checkpoint that fails (here: squad's data dir has a file where the checkpoints' folder
/// goes) no longer passes in silence: the run says so once and goes on with the turn.
#[tokio::test(flavor = "multi_thread")]
async fn a_failed_checkpoint_is_told_and_the_turn_goes_on() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("a.txt", "one\n");
    std::fs::create_dir_all(sb.data_dir()).unwrap();
    std::fs::write(sb.data_dir().join("checkpoints"), "not a folder").unwrap();
    mock.push_all([
        write_call("w1", "a.txt", "two\n"),
        MockResponse::text("done"),
    ]);
    let mut cmd = sb.command(Some(&mock));
    cmd.args(["exec", "--approval", "auto", "--json", "make it two"]);
    let run = Run::from(run_with_timeout(cmd).await);
    run.assert_ok();
    let events = run.events();
    let taken = of_type(&events, "checkpoint_taken");
    assert!(taken[0]["error"].is_string(), "{:?}", taken[0]);
    let told: Vec<&Value> = of_type(&events, "notice")
        .into_iter()
        .filter(|e| {
            e["message"]
                .as_str()
                .unwrap()
                .contains("checkpoints failed")
        })
        .collect();
    assert_eq!(told.len(), 1, "said once: {told:?}");
    assert_eq!(sb.read("a.txt"), "two\n");
}
