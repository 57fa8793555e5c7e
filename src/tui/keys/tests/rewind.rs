//! `/rewind` (Esc Esc) and `/undo` (`u` on a worker): what the keys send and what the
//! core's answers open.

use super::*;
use crate::protocol::{ChangedFile, CheckpointSummary, ConflictFile, FileChangeKind};

fn listed(t: &mut T) {
    let list = vec![
        CheckpointSummary {
            message: 1,
            text: "write the parser".into(),
            changes: Ok(vec![ChangedFile {
                path: "src/parse.rs".into(),
                kind: FileChangeKind::Modified,
            }]),
        },
        CheckpointSummary {
            message: 2,
            text: "now the tests".into(),
            changes: Ok(Vec::new()),
        },
    ];
    t.app
        .apply(&ev(t.root, EventKind::Checkpoints { list }), t.t0);
}

#[test]
fn esc_esc_on_an_empty_composer_opens_rewind_and_enter_rewinds_both() {
    let mut t = setup();
    let later = t.t0 + Duration::from_millis(300);
    assert!(t.app.on_key(key(KeyCode::Esc), t.t0).is_empty());
    assert_eq!(
        t.app.on_key(key(KeyCode::Esc), later),
        vec![Action::Send(Op::ListCheckpoints)]
    );
    assert_eq!(t.app.overlay, Some(Overlay::Rewind));
    listed(&mut t);
    // The newest message is picked first; ↑ goes to the older one.
    t.app.on_key(key(KeyCode::Up), later);
    t.app.on_key(key(KeyCode::Enter), later);
    let sent = t.app.on_key(key(KeyCode::Enter), later);
    let rewind = Op::Rewind {
        message: 1,
        files: true,
        conversation: true,
        force: false,
    };
    assert_eq!(sent, vec![Action::Send(rewind)]);
    assert_eq!(t.app.overlay, None);
    // Once the conversation is back, the message returns to the composer.
    let rewound = EventKind::Rewound {
        message: 1,
        files: vec!["src/parse.rs".into()],
        removed: Vec::new(),
        history: Some(Vec::new()),
    };
    t.app.apply(&ev(t.root, rewound), later);
    assert_eq!(t.app.composer.text(), "write the parser");
}

#[test]
fn esc_esc_far_apart_or_with_text_or_on_a_busy_agent_does_not_rewind() {
    let mut t = setup();
    t.app.on_key(key(KeyCode::Esc), t.t0);
    assert!(
        t.app
            .on_key(key(KeyCode::Esc), t.t0 + Duration::from_secs(2))
            .is_empty()
    );
    type_text(&mut t.app, "draft", t.t0);
    let soon = t.t0 + Duration::from_secs(2) + Duration::from_millis(100);
    assert!(t.app.on_key(key(KeyCode::Esc), soon).is_empty());
    assert_eq!(t.app.overlay, None);
    let mut t = setup();
    let root = t.root;
    t.app.apply(&ev(root, EventKind::TurnStarted), t.t0);
    for _ in 0..2 {
        assert_eq!(
            t.app.on_key(key(KeyCode::Esc), t.t0),
            vec![Action::Send(Op::Interrupt { agent_id: root })]
        );
    }
    assert_eq!(t.app.overlay, None);
}

#[test]
fn a_refused_rewind_asks_and_y_forces_it_n_keeps_the_files() {
    let mut t = setup();
    type_text(&mut t.app, "/rewind", t.t0);
    assert_eq!(
        t.app.on_key(key(KeyCode::Enter), t.t0),
        vec![Action::Send(Op::ListCheckpoints)]
    );
    listed(&mut t);
    t.app.on_key(key(KeyCode::Enter), t.t0);
    // "Restore the files only".
    t.app.on_key(key(KeyCode::Down), t.t0);
    t.app.on_key(key(KeyCode::Down), t.t0);
    let sent = t.app.on_key(key(KeyCode::Enter), t.t0);
    let op = |force| Op::Rewind {
        message: 2,
        files: true,
        conversation: false,
        force,
    };
    assert_eq!(sent, vec![Action::Send(op(false))]);
    let refused = EventKind::RewindRefused {
        message: 2,
        conflicts: vec!["notes.md".into()],
    };
    t.app.apply(&ev(t.root, refused.clone()), t.t0);
    assert_eq!(t.app.overlay, Some(Overlay::Rewind));
    assert_eq!(
        t.app.on_key(key(KeyCode::Char('y')), t.t0),
        vec![Action::Send(op(true))]
    );
    t.app.apply(&ev(t.root, refused), t.t0);
    assert!(t.app.on_key(key(KeyCode::Char('n')), t.t0).is_empty());
    assert_eq!(t.app.overlay, None);
}

#[test]
fn u_on_a_merged_worker_asks_then_undoes_and_a_refusal_asks_again() {
    let mut t = setup();
    let w = spawn_worker(&mut t, "coder");
    t.app.focus = Focus::Tree;
    t.app.tree.selected = Some(w);
    let undo = |force| Action::Send(Op::UndoMerge { agent_id: w, force });
    assert!(t.app.on_key(key(KeyCode::Char('u')), t.t0).is_empty());
    assert_eq!(t.app.overlay, Some(Overlay::ConfirmUndo(w)));
    assert_eq!(
        t.app.on_key(key(KeyCode::Char('y')), t.t0),
        vec![undo(false)]
    );
    let conflict = ConflictFile {
        path: "a.txt".into(),
        kind: "contents".into(),
        message: String::new(),
        hunks: Vec::new(),
    };
    let refused = EventKind::UndoRefused {
        conflicts: vec![conflict],
    };
    t.app.apply(&ev(w, refused), t.t0);
    assert_eq!(t.app.overlay, Some(Overlay::ConfirmUndo(w)));
    assert_eq!(
        t.app.on_key(key(KeyCode::Char('y')), t.t0),
        vec![undo(true)]
    );
    // On the persona, /undo says what to select instead.
    t.app.tree.selected = Some(t.root);
    t.app.focus = Focus::Composer;
    type_text(&mut t.app, "/undo", t.t0);
    assert!(t.app.on_key(key(KeyCode::Enter), t.t0).is_empty());
}

#[test]
fn merge_sends_the_named_or_selected_worker_and_the_tree_says_failed_checks() {
    let mut t = setup();
    let w = spawn_worker(&mut t, "coder");
    let merge = |worker: String| Action::Send(Op::MergeWorker { worker });
    type_text(&mut t.app, "/merge coder", t.t0);
    assert_eq!(
        t.app.on_key(key(KeyCode::Enter), t.t0),
        vec![merge("coder".into())]
    );
    // Without a name: the worker shown; on the persona, what to select instead.
    t.app.tree.selected = Some(w);
    type_text(&mut t.app, "/merge", t.t0);
    assert_eq!(
        t.app.on_key(key(KeyCode::Enter), t.t0),
        vec![merge(w.short())]
    );
    t.app.tree.selected = Some(t.root);
    type_text(&mut t.app, "/merge", t.t0);
    assert!(t.app.on_key(key(KeyCode::Enter), t.t0).is_empty());
    // A change kept unmerged: the tree's word for it.
    let report = crate::protocol::MergeReport {
        state: crate::protocol::MergeState::FailedChecks,
        files: Vec::new(),
        conflicts: Vec::new(),
        note: "kept on squad/x".into(),
    };
    t.app.apply(&ev(w, EventKind::MergeReport(report)), t.t0);
    let a = t.app.state.agent(w).unwrap();
    assert_eq!(
        a.merge.map(crate::protocol::MergeState::as_str),
        Some("unmerged (failed checks)")
    );
}
