use super::*;
use crate::protocol::{AgentId, AgentStatus, ApprovalAction, ApprovalPolicy, Event, EventKind};
use crate::tui::app::LeftPane;
use crate::tui::handle::SessionInfo;
use crate::tui::theme::Theme;

struct T {
    app: App,
    root: AgentId,
    t0: Instant,
}

fn setup() -> T {
    setup_with(Vec::new())
}

/// A session whose composer recalls `prompts` of earlier sessions.
fn setup_with(prompts: Vec<String>) -> T {
    let root = AgentId::new();
    let info = SessionInfo {
        log_path: None,
        replayed_seq: 0,
        prompts,
        session_id: "s".into(),
        workspace: "/tmp/w".into(),
        model: "m".into(),
        approval: ApprovalPolicy::Ask,
        role: "copilot".into(),
        root_agent: root,
    };
    let mut app = App::new(&info, Theme::default());
    let t0 = Instant::now();
    app.apply(
        &ev(
            root,
            EventKind::AgentSpawned {
                parent_id: None,
                role: "copilot".into(),
                model: "m".into(),
                task: String::new(),
                depth: 0,
            },
        ),
        t0,
    );
    T { app, root, t0 }
}

fn ev(agent_id: AgentId, kind: EventKind) -> Event {
    Event {
        seq: 1,
        ts: 0,
        agent_id,
        kind,
    }
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

fn type_text(app: &mut App, s: &str, now: Instant) {
    for c in s.chars() {
        assert!(app.on_key(key(KeyCode::Char(c)), now).is_empty());
    }
}

fn spawn_worker(t: &mut T, role: &str) -> AgentId {
    let w = AgentId::new();
    t.app.apply(
        &ev(
            w,
            EventKind::AgentSpawned {
                parent_id: Some(t.root),
                role: role.into(),
                model: "m".into(),
                task: "do it".into(),
                depth: 1,
            },
        ),
        t.t0,
    );
    w
}

fn request(t: &mut T, id: u64, at: Instant) {
    let root = t.root;
    t.app.apply(
        &ev(
            root,
            EventKind::ApprovalRequested {
                request_id: id,
                role: "copilot".into(),
                tool: "shell".into(),
                action: ApprovalAction::Command {
                    command: "rm -rf build".into(),
                },
            },
        ),
        at,
    );
}

#[test]
fn enter_sends_the_message_to_the_active_persona_and_clears() {
    let mut t = setup();
    type_text(&mut t.app, "hello", t.t0);
    let out = t.app.on_key(key(KeyCode::Enter), t.t0);
    assert_eq!(
        out,
        vec![Action::Send(Op::UserMessage {
            to: None,
            text: "hello".into()
        })]
    );
    assert!(t.app.composer.is_empty());
    // Empty input sends nothing.
    assert!(t.app.on_key(key(KeyCode::Enter), t.t0).is_empty());
    // Up on an empty composer recalls it.
    t.app.on_key(key(KeyCode::Up), t.t0);
    assert_eq!(t.app.composer.text(), "hello");
}

#[test]
fn alt_enter_makes_a_newline_and_paste_keeps_newlines() {
    let mut t = setup();
    type_text(&mut t.app, "a", t.t0);
    let out = t
        .app
        .on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT), t.t0);
    assert!(out.is_empty());
    t.app.on_paste("b\r\nc");
    assert_eq!(t.app.composer.text(), "a\nb\nc");
    // A stray trailing newline is not sent.
    t.app
        .on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::SHIFT), t.t0);
    let out = t.app.on_key(key(KeyCode::Enter), t.t0);
    assert_eq!(
        out,
        vec![Action::Send(Op::UserMessage {
            to: None,
            text: "a\nb\nc".into()
        })]
    );
}

#[test]
fn message_goes_to_the_worker_selected_in_the_tree() {
    let mut t = setup();
    let w = spawn_worker(&mut t, "coder");
    t.app.focus = Focus::Tree;
    t.app.on_key(key(KeyCode::Down), t.t0);
    assert_eq!(t.app.viewed(), w);
    // A printable key in the tree starts typing in the composer.
    type_text(&mut t.app, "status?", t.t0);
    assert_eq!(t.app.focus, Focus::Composer);
    let out = t.app.on_key(key(KeyCode::Enter), t.t0);
    assert_eq!(
        out,
        vec![Action::Send(Op::UserMessage {
            to: Some(w),
            text: "status?".into()
        })]
    );
}

#[test]
fn approval_keys_answer_the_front_request_in_order() {
    let mut t = setup();
    let t0 = t.t0;
    for id in [41, 42, 43] {
        request(&mut t, id, t0);
    }
    let later = t.t0 + Duration::from_secs(1);
    // Typed too soon after the dialog appeared: ignored.
    assert!(t.app.on_key(key(KeyCode::Char('y')), t.t0).is_empty());
    let cases = [
        (KeyCode::Char('y'), 41, ApprovalDecision::Approve),
        (KeyCode::Char('a'), 42, ApprovalDecision::ApproveForSession),
        (KeyCode::Esc, 43, ApprovalDecision::Deny),
    ];
    let mut now = later;
    for (code, id, decision) in cases {
        assert_eq!(
            t.app.on_key(key(code), now),
            vec![Action::Send(Op::Approval {
                request_id: id,
                decision
            })]
        );
        now += Duration::from_secs(1);
    }
    assert!(t.app.state.approvals.is_empty());
    request(&mut t, 44, now);
    now += Duration::from_secs(1);
    assert_eq!(
        t.app.on_key(key(KeyCode::Char('n')), now),
        vec![Action::Send(Op::Approval {
            request_id: 44,
            decision: ApprovalDecision::Deny
        })]
    );
    // With no approval pending, 'n' is just a character again.
    assert!(t.app.on_key(key(KeyCode::Char('n')), now).is_empty());
    assert_eq!(t.app.composer.text(), "n");
}

#[test]
fn ctrl_c_interrupts_then_quits_when_pressed_twice_quickly() {
    let mut t = setup();
    let root = t.root;
    t.app.apply(
        &ev(
            root,
            EventKind::AgentStatus {
                parent_id: None,
                status: AgentStatus::Running,
                reason: None,
            },
        ),
        t.t0,
    );
    assert_eq!(
        t.app.on_key(ctrl('c'), t.t0),
        vec![Action::Send(Op::Interrupt { agent_id: root })]
    );
    // Too late for a double press: interrupts again.
    let t1 = t.t0 + Duration::from_secs(3);
    assert_eq!(
        t.app.on_key(ctrl('c'), t1),
        vec![Action::Send(Op::Interrupt { agent_id: root })]
    );
    let t2 = t1 + Duration::from_millis(400);
    assert_eq!(
        t.app.on_key(ctrl('c'), t2),
        vec![Action::Send(Op::Shutdown), Action::Quit(Exit::Quit)]
    );
}

#[test]
fn esc_interrupts_only_a_busy_agent() {
    let mut t = setup();
    assert!(t.app.on_key(key(KeyCode::Esc), t.t0).is_empty());
    let root = t.root;
    t.app.apply(&ev(root, EventKind::TurnStarted), t.t0);
    assert_eq!(
        t.app.on_key(key(KeyCode::Esc), t.t0),
        vec![Action::Send(Op::Interrupt { agent_id: root })]
    );
}

#[test]
fn x_asks_before_despawning_a_worker() {
    let mut t = setup();
    let w = spawn_worker(&mut t, "coder");
    t.app.focus = Focus::Tree;
    // Not on the root persona.
    assert!(t.app.on_key(key(KeyCode::Char('x')), t.t0).is_empty());
    assert_eq!(t.app.overlay, None);
    t.app.on_key(key(KeyCode::Char('j')), t.t0);
    assert!(t.app.on_key(key(KeyCode::Char('x')), t.t0).is_empty());
    assert_eq!(t.app.overlay, Some(Overlay::ConfirmDespawn(w)));
    // 'n' keeps it.
    assert!(t.app.on_key(key(KeyCode::Char('n')), t.t0).is_empty());
    assert_eq!(t.app.overlay, None);
    t.app.on_key(key(KeyCode::Char('x')), t.t0);
    assert_eq!(
        t.app.on_key(key(KeyCode::Char('y')), t.t0),
        vec![Action::Send(Op::Despawn { agent_id: w })]
    );
    assert_eq!(t.app.overlay, None);
}

#[test]
fn slash_commands() {
    let mut t = setup();
    type_text(&mut t.app, "/role architect", t.t0);
    assert_eq!(
        t.app.on_key(key(KeyCode::Enter), t.t0),
        vec![Action::Send(Op::SwitchPersona {
            role: "architect".into()
        })]
    );
    // Tab completes a command name.
    type_text(&mut t.app, "/st", t.t0);
    t.app.on_key(key(KeyCode::Tab), t.t0);
    assert_eq!(t.app.composer.text(), "/stats");
    assert_eq!(t.app.focus, Focus::Composer);
    t.app.on_key(key(KeyCode::Enter), t.t0);
    assert_eq!(t.app.overlay, Some(Overlay::Stats));
    t.app.on_key(key(KeyCode::Esc), t.t0);
    assert_eq!(t.app.overlay, None);
    // /new and /resume leave this session's screen for another session.
    type_text(&mut t.app, "/new", t.t0);
    assert_eq!(
        t.app.on_key(key(KeyCode::Enter), t.t0),
        vec![Action::Send(Op::Shutdown), Action::Quit(Exit::NewSession)]
    );
    type_text(&mut t.app, "/resume 2026", t.t0);
    assert_eq!(
        t.app.on_key(key(KeyCode::Enter), t.t0),
        vec![
            Action::Send(Op::Shutdown),
            Action::Quit(Exit::Resume(Some("2026".into())))
        ]
    );
    // An unknown command stays in the composer to be fixed.
    type_text(&mut t.app, "/bogus", t.t0);
    assert!(t.app.on_key(key(KeyCode::Enter), t.t0).is_empty());
    assert_eq!(t.app.composer.text(), "/bogus");
    t.app.composer.take();
    type_text(&mut t.app, "/quit", t.t0);
    assert_eq!(
        t.app.on_key(key(KeyCode::Enter), t.t0),
        vec![Action::Send(Op::Shutdown), Action::Quit(Exit::Quit)]
    );
}

#[test]
fn tab_cycles_focus_and_help_opens() {
    let mut t = setup();
    assert_eq!(t.app.focus, Focus::Composer);
    t.app.on_key(key(KeyCode::Tab), t.t0);
    assert_eq!(t.app.focus, Focus::Tree);
    t.app.on_key(key(KeyCode::BackTab), t.t0);
    assert_eq!(t.app.focus, Focus::Composer);
    t.app.on_key(key(KeyCode::BackTab), t.t0);
    assert_eq!(t.app.focus, Focus::Conversation);
    t.app.on_key(key(KeyCode::Char('?')), t.t0);
    assert_eq!(t.app.overlay, Some(Overlay::Help));
    t.app.on_key(key(KeyCode::Char('?')), t.t0);
    assert_eq!(t.app.overlay, None);
}

fn task(t: &mut T, id: &str, assignee: Option<AgentId>) {
    let root = t.root;
    let task = crate::protocol::Task {
        id: id.into(),
        title: format!("task {id}"),
        description: None,
        role: None,
        depends_on: Vec::new(),
        status: crate::protocol::TaskStatus::Running,
        assignee,
        notes: Vec::new(),
        result: None,
        paths: Vec::new(),
        wait: false,
        claimed: false,
    };
    t.app
        .apply(&ev(root, EventKind::TaskUpdated { task }), t.t0);
}

#[test]
fn ctrl_t_steps_the_task_panel_and_tab_visits_what_shows() {
    let mut t = setup();
    // Typed in the composer, it changes the layout and types nothing.
    t.app.on_key(ctrl('t'), t.t0);
    assert_eq!(t.app.left, LeftPane::TreeAndTasks);
    assert!(t.app.composer.is_empty());
    let mut seen = Vec::new();
    for _ in 0..4 {
        t.app.on_key(key(KeyCode::Tab), t.t0);
        seen.push(t.app.focus);
    }
    assert_eq!(
        seen,
        [
            Focus::Tree,
            Focus::Tasks,
            Focus::Conversation,
            Focus::Composer
        ]
    );
    // `t` in the tree: the panel instead of the tree, focus moves to it.
    t.app.focus = Focus::Tree;
    t.app.on_key(key(KeyCode::Char('t')), t.t0);
    assert_eq!(t.app.left, LeftPane::Tasks);
    assert_eq!(t.app.focus, Focus::Tasks);
    t.app.on_key(key(KeyCode::BackTab), t.t0);
    assert_eq!(t.app.focus, Focus::Composer, "no tree to go back to");
    t.app.focus = Focus::Tasks;
    t.app.on_key(ctrl('t'), t.t0);
    assert_eq!(t.app.left, LeftPane::Tree);
    assert_eq!(t.app.focus, Focus::Tree);
}

#[test]
fn selecting_a_task_shows_its_worker() {
    let mut t = setup();
    let a = spawn_worker(&mut t, "coder");
    let b = spawn_worker(&mut t, "tester");
    task(&mut t, "T1", Some(b));
    task(&mut t, "T2", None);
    task(&mut t, "T3", Some(a));
    type_text(&mut t.app, "/tasks", t.t0);
    t.app.on_key(key(KeyCode::Enter), t.t0);
    assert_eq!(t.app.focus, Focus::Tasks);
    assert_eq!(t.app.tasks.selected.as_deref(), Some("T1"));
    assert_eq!(t.app.viewed(), b);
    // A task without a worker keeps the view.
    t.app.on_key(key(KeyCode::Down), t.t0);
    assert_eq!(t.app.viewed(), b);
    t.app.on_key(key(KeyCode::End), t.t0);
    assert_eq!(t.app.tasks.selected.as_deref(), Some("T3"));
    assert_eq!(t.app.viewed(), a);
    // `i` opens the worker's details; Enter goes to its conversation.
    t.app.on_key(key(KeyCode::Char('i')), t.t0);
    assert_eq!(t.app.overlay, Some(Overlay::Details(a)));
    t.app.on_key(key(KeyCode::Esc), t.t0);
    t.app.on_key(key(KeyCode::Enter), t.t0);
    assert_eq!(t.app.focus, Focus::Conversation);
    // Other letters go to the composer, as in the tree.
    t.app.focus = Focus::Tasks;
    t.app.on_key(key(KeyCode::Char('h')), t.t0);
    assert_eq!(t.app.focus, Focus::Composer);
    assert_eq!(t.app.composer.text(), "h");
}

#[test]
fn timeline_opens_and_closes() {
    let mut t = setup();
    type_text(&mut t.app, "/timeline", t.t0);
    t.app.on_key(key(KeyCode::Enter), t.t0);
    assert_eq!(t.app.overlay, Some(Overlay::Timeline));
    t.app.on_key(key(KeyCode::Esc), t.t0);
    assert_eq!(t.app.overlay, None);
}

/// A question with `options`, asked by `agent` (`seq` orders it among the dialogs).
fn ask(t: &mut T, agent: AgentId, seq: u64, id: u64, options: &[&str], at: Instant) {
    t.app.apply(
        &Event {
            seq,
            ts: 0,
            agent_id: agent,
            kind: EventKind::QuestionAsked {
                request_id: id,
                role: "coder".into(),
                question: "Which database?".into(),
                options: options.iter().map(|o| o.to_string()).collect(),
            },
        },
        at,
    );
}

fn answer(request_id: u64, answer: Option<&str>) -> Vec<Action> {
    vec![Action::Send(Op::Answer {
        request_id,
        answer: answer.map(str::to_string),
    })]
}

#[test]
fn question_keys_pick_an_option_type_an_answer_or_decline() {
    let mut t = setup();
    let w = spawn_worker(&mut t, "coder");
    let opts = ["Postgres", "SQLite", "in memory"];
    let mut now = t.t0;
    ask(&mut t, w, 1, 1, &opts, now);
    // Typed-ahead: keys in the dialog's first moments change nothing.
    assert!(t.app.on_key(key(KeyCode::Char('2')), now).is_empty());
    assert!(t.app.on_key(key(KeyCode::Enter), now).is_empty());
    now += Duration::from_secs(1);
    // A digit picks that option.
    assert_eq!(
        t.app.on_key(key(KeyCode::Char('2')), now),
        answer(1, Some("SQLite"))
    );
    assert!(t.app.state.questions.is_empty());

    // ↑ from the field highlights the last option, ↑ again the one above; Enter sends it.
    ask(&mut t, w, 2, 2, &opts, now);
    now += Duration::from_secs(1);
    assert!(t.app.on_key(key(KeyCode::Up), now).is_empty());
    assert!(t.app.on_key(key(KeyCode::Up), now).is_empty());
    assert_eq!(t.app.question.as_ref().unwrap().choice, Some(1));
    assert!(t.app.on_key(key(KeyCode::Down), now).is_empty());
    assert_eq!(
        t.app.on_key(key(KeyCode::Enter), now),
        answer(2, Some("in memory"))
    );

    // Typing (digits too, once text is there) fills the field; Enter sends the text.
    ask(&mut t, w, 3, 3, &opts, now);
    now += Duration::from_secs(1);
    assert!(
        t.app.on_key(key(KeyCode::Enter), now).is_empty(),
        "nothing to send yet"
    );
    type_text(&mut t.app, "MySQL 8", now);
    assert_eq!(
        t.app.on_key(key(KeyCode::Enter), now),
        answer(3, Some("MySQL 8"))
    );
    assert!(t.app.composer.is_empty(), "the composer got none of it");

    // Esc declines.
    ask(&mut t, w, 4, 4, &[], now);
    now += Duration::from_secs(1);
    assert!(
        t.app.on_key(key(KeyCode::Char('1')), now).is_empty(),
        "no options: a digit is text"
    );
    t.app.on_paste("line one\nline two");
    assert_eq!(
        t.app.question.as_ref().unwrap().typed(),
        "1line one line two"
    );
    assert_eq!(t.app.on_key(key(KeyCode::Esc), now), answer(4, None));
    assert!(t.app.question.is_none());
    // With nothing pending, keys are the composer's again.
    assert!(t.app.on_key(key(KeyCode::Char('x')), now).is_empty());
    assert_eq!(t.app.composer.text(), "x");
}

#[test]
fn questions_and_approvals_are_answered_one_at_a_time_oldest_first() {
    let mut t = setup();
    let w = spawn_worker(&mut t, "coder");
    let mut now = t.t0;
    ask(&mut t, w, 10, 1, &["yes", "no"], now);
    t.app.apply(
        &Event {
            seq: 11,
            ts: 0,
            agent_id: t.root,
            kind: EventKind::ApprovalRequested {
                request_id: 41,
                role: "copilot".into(),
                tool: "shell".into(),
                action: ApprovalAction::Command {
                    command: "rm -rf build".into(),
                },
            },
        },
        now,
    );
    ask(&mut t, w, 12, 2, &["yes", "no"], now);
    now += Duration::from_secs(1);
    // 'y' is not an approval while the question is in front: it is typed.
    assert!(t.app.on_key(key(KeyCode::Char('y')), now).is_empty());
    assert_eq!(t.app.on_key(key(KeyCode::Enter), now), answer(1, Some("y")));
    // The approval came to the front just now: its guard holds, then 'n' answers it.
    assert!(t.app.on_key(key(KeyCode::Char('n')), now).is_empty());
    now += Duration::from_secs(1);
    assert_eq!(
        t.app.on_key(key(KeyCode::Char('n')), now),
        vec![Action::Send(Op::Approval {
            request_id: 41,
            decision: ApprovalDecision::Deny
        })]
    );
    now += Duration::from_secs(1);
    assert_eq!(
        t.app.on_key(key(KeyCode::Char('2')), now),
        answer(2, Some("no"))
    );
    assert!(t.app.state.dialog().is_none());
}

fn status(t: &mut T, id: AgentId, status: AgentStatus) {
    t.app.apply(
        &ev(
            id,
            EventKind::AgentStatus {
                parent_id: None,
                status,
                reason: None,
            },
        ),
        t.t0,
    );
}

#[test]
fn ctrl_p_and_commands_pause_go_on_and_stop() {
    let mut t = setup();
    let now = t.t0;
    assert_eq!(t.app.on_key(ctrl('p'), now), vec![Action::Send(Op::Pause)]);
    let root = t.root;
    t.app.apply(&ev(root, EventKind::Paused), now);
    assert!(t.app.state.paused);
    assert_eq!(t.app.on_key(ctrl('p'), now), vec![Action::Send(Op::Resume)]);
    // `/pause` while paused says so instead of sending anything.
    type_text(&mut t.app, "/pause", now);
    assert!(t.app.on_key(key(KeyCode::Enter), now).is_empty());
    type_text(&mut t.app, "/unpause", now);
    assert_eq!(
        t.app.on_key(key(KeyCode::Enter), now),
        vec![Action::Send(Op::Resume)]
    );
    t.app.apply(&ev(root, EventKind::Resumed), now);
    assert!(!t.app.state.paused);
    type_text(&mut t.app, "/stop", now);
    assert_eq!(
        t.app.on_key(key(KeyCode::Enter), now),
        vec![Action::Send(Op::Stop)]
    );
    type_text(&mut t.app, "/continue", now);
    assert_eq!(
        t.app.on_key(key(KeyCode::Enter), now),
        vec![Action::Send(Op::Continue { agent_id: None })]
    );
}

#[test]
fn quitting_with_workers_at_work_asks_first() {
    let mut t = setup();
    let w = spawn_worker(&mut t, "coder");
    status(&mut t, w, AgentStatus::Running);
    let now = t.t0;
    type_text(&mut t.app, "/quit", now);
    assert!(t.app.on_key(key(KeyCode::Enter), now).is_empty());
    assert_eq!(t.app.overlay, Some(Overlay::ConfirmQuit));
    assert!(t.app.on_key(key(KeyCode::Char('n')), now).is_empty());
    assert_eq!(t.app.overlay, None);
    // Two Ctrl+C ask too; `y` quits.
    t.app.on_key(ctrl('c'), now);
    assert!(t.app.on_key(ctrl('c'), now).is_empty());
    assert_eq!(t.app.overlay, Some(Overlay::ConfirmQuit));
    assert_eq!(
        t.app.on_key(key(KeyCode::Char('y')), now),
        vec![Action::Send(Op::Shutdown), Action::Quit(Exit::Quit)]
    );
    // With every worker done, quitting does not ask.
    let mut t = setup();
    let w = spawn_worker(&mut t, "coder");
    status(&mut t, w, AgentStatus::Completed);
    type_text(&mut t.app, "/quit", now);
    assert_eq!(
        t.app.on_key(key(KeyCode::Enter), now),
        vec![Action::Send(Op::Shutdown), Action::Quit(Exit::Quit)]
    );
}

#[test]
fn c_in_the_tree_continues_an_interrupted_agent() {
    let mut t = setup();
    let w = spawn_worker(&mut t, "coder");
    status(&mut t, w, AgentStatus::Interrupted);
    t.app.focus = Focus::Tree;
    t.app.tree.selected = Some(w);
    assert_eq!(
        t.app.on_key(key(KeyCode::Char('c')), t.t0),
        vec![Action::Send(Op::Continue { agent_id: Some(w) })]
    );
    // On an agent that is not interrupted, `c` is typed into the composer.
    status(&mut t, w, AgentStatus::Completed);
    t.app.focus = Focus::Tree;
    assert!(t.app.on_key(key(KeyCode::Char('c')), t.t0).is_empty());
    assert_eq!(t.app.composer.text(), "c");
}

#[test]
fn s_in_the_agents_view_saves_the_selected_workers_role_under_a_typed_name() {
    let mut t = setup();
    let w = spawn_worker(&mut t, "coder");
    type_text(&mut t.app, "/agents", t.t0);
    t.app.on_key(key(KeyCode::Enter), t.t0);
    assert_eq!(t.app.overlay, Some(Overlay::Agents));
    // The persona's role is a role file already.
    assert!(t.app.on_key(key(KeyCode::Char('s')), t.t0).is_empty());
    assert_eq!(t.app.overlay, Some(Overlay::Agents));
    assert!(
        t.app
            .notice
            .as_ref()
            .is_some_and(|(n, _)| n.contains("select a worker"))
    );
    t.app.on_key(key(KeyCode::Down), t.t0);
    t.app.on_key(key(KeyCode::Char('s')), t.t0);
    assert_eq!(t.app.overlay, Some(Overlay::SaveRole(w)));
    assert_eq!(t.app.role_name, format!("coder_{}", w.short()));
    // Esc goes back to the agents view; `s` again starts from the suggestion.
    t.app.on_key(key(KeyCode::Esc), t.t0);
    assert_eq!(t.app.overlay, Some(Overlay::Agents));
    t.app.on_key(key(KeyCode::Char('s')), t.t0);
    for _ in 0..20 {
        t.app.on_key(key(KeyCode::Backspace), t.t0);
    }
    // `q` and `i` are letters of the name here, not keys that close or open overlays.
    type_text(&mut t.app, "quick fix", t.t0);
    assert_eq!(t.app.overlay, Some(Overlay::SaveRole(w)));
    assert_eq!(
        t.app.on_key(key(KeyCode::Enter), t.t0),
        vec![Action::Send(Op::SaveRole {
            agent_id: w,
            name: "quickfix".into()
        })]
    );
    assert_eq!(t.app.overlay, Some(Overlay::Agents));
    // The core's answer shows in the status bar.
    t.app.apply(
        &ev(
            w,
            EventKind::RoleSaved {
                name: "quickfix".into(),
                path: "/tmp/w/.squad/roles/quickfix.toml".into(),
            },
        ),
        t.t0,
    );
    assert!(
        t.app
            .notice
            .as_ref()
            .is_some_and(|(n, _)| n.contains("saved role quickfix")),
        "{:?}",
        t.app.notice
    );
    // A refusal too.
    t.app.on_key(key(KeyCode::Char('s')), t.t0);
    t.app.on_key(key(KeyCode::Enter), t.t0);
    let refused = "a role named `x` exists (built-in); pick another name";
    t.app.apply(
        &ev(
            w,
            EventKind::Error {
                message: refused.into(),
            },
        ),
        t.t0,
    );
    assert_eq!(
        t.app.notice.as_ref().map(|(n, _)| n.as_str()),
        Some(refused)
    );
    // A released worker has nothing left to cancel.
    t.app.apply(&ev(w, EventKind::Released), t.t0);
    t.app.on_key(key(KeyCode::Char('x')), t.t0);
    assert_eq!(t.app.overlay, Some(Overlay::Agents));
    assert!(
        t.app
            .notice
            .as_ref()
            .is_some_and(|(n, _)| n.contains("released already"))
    );
}

#[test]
fn up_recalls_prompts_of_earlier_sessions_before_this_ones() {
    let mut t = setup_with(vec!["older".into(), "earlier".into()]);
    type_text(&mut t.app, "now", t.t0);
    t.app.on_key(key(KeyCode::Enter), t.t0);
    for want in ["now", "earlier", "older", "older"] {
        t.app.on_key(key(KeyCode::Up), t.t0);
        assert_eq!(t.app.composer.text(), want);
    }
    t.app.on_key(key(KeyCode::Down), t.t0);
    assert_eq!(t.app.composer.text(), "earlier");
}

fn files_event(t: &mut T, paths: &[&str]) {
    let paths = paths.iter().map(|p| p.to_string()).collect();
    let root = t.root;
    t.app.apply(&ev(root, EventKind::Files { paths }), t.t0);
}

#[test]
fn at_asks_the_core_for_files_once_and_tab_attaches_the_best_match() {
    let mut t = setup();
    type_text(&mut t.app, "explain ", t.t0);
    let asked = t.app.on_key(key(KeyCode::Char('@')), t.t0);
    assert_eq!(asked, vec![Action::Send(Op::ListFiles)]);
    files_event(&mut t, &["README.md", "src/main.rs", "src/tui/composer.rs"]);
    type_text(&mut t.app, "cmp", t.t0);
    assert!(t.app.on_key(key(KeyCode::Tab), t.t0).is_empty());
    assert_eq!(t.app.composer.text(), "explain @src/tui/composer.rs ");
    assert_eq!(
        t.app.focus,
        Focus::Composer,
        "Tab accepted, it did not move focus"
    );
    // A second mention asks again (the tree may have changed), and Down picks the next.
    assert_eq!(
        t.app.on_key(key(KeyCode::Char('@')), t.t0),
        vec![Action::Send(Op::ListFiles)]
    );
    type_text(&mut t.app, "s", t.t0);
    t.app.on_key(key(KeyCode::Down), t.t0);
    t.app.on_key(key(KeyCode::Enter), t.t0);
    assert_eq!(
        t.app.composer.text(),
        "explain @src/tui/composer.rs @src/tui/composer.rs "
    );
    let out = t.app.on_key(key(KeyCode::Enter), t.t0);
    assert!(
        matches!(&out[..], [Action::Send(Op::UserMessage { text, .. })] if text.ends_with("composer.rs"))
    );
}

#[test]
fn esc_closes_the_popup_without_interrupting_and_enter_then_sends() {
    let mut t = setup();
    t.app.on_key(key(KeyCode::Char('@')), t.t0);
    files_event(&mut t, &["a.rs"]);
    type_text(&mut t.app, "a", t.t0);
    assert!(t.app.on_key(key(KeyCode::Esc), t.t0).is_empty());
    let out = t.app.on_key(key(KeyCode::Enter), t.t0);
    assert_eq!(
        out,
        vec![Action::Send(Op::UserMessage {
            to: None,
            text: "@a".into()
        })]
    );
    // No match: Enter sends what was typed.
    t.app.on_key(key(KeyCode::Char('@')), t.t0);
    type_text(&mut t.app, "zzz", t.t0);
    let out = t.app.on_key(key(KeyCode::Enter), t.t0);
    assert!(matches!(&out[..], [Action::Send(Op::UserMessage { text, .. })] if text == "@zzz"));
}

#[test]
fn bang_runs_a_command_instead_of_sending_a_message() {
    let mut t = setup();
    type_text(&mut t.app, "!git status --short", t.t0);
    let out = t.app.on_key(key(KeyCode::Enter), t.t0);
    assert_eq!(
        out,
        vec![Action::Send(Op::RunCommand {
            command: "git status --short".into()
        })]
    );
    assert!(t.app.composer.is_empty());
}

mod rewind;

#[test]
fn a_refused_role_switch_takes_its_handing_over_notice_down() {
    let mut t = setup();
    type_text(&mut t.app, "/role opencode", t.t0);
    let sent = t.app.on_key(key(KeyCode::Enter), t.t0);
    assert_eq!(
        sent,
        vec![Action::Send(Op::SwitchPersona {
            role: "opencode".into()
        })]
    );
    let notice = |t: &T| t.app.notice.as_ref().map(|(n, _)| n.clone());
    assert_eq!(
        notice(&t).as_deref(),
        Some("handing the session to opencode…")
    );
    let refused = "squad runs agent roles only as workers (spawn_agent), not as the persona";
    t.app.apply(
        &ev(
            t.root,
            EventKind::Error {
                message: refused.into(),
            },
        ),
        t.t0,
    );
    assert_eq!(
        notice(&t),
        None,
        "the refusal is in the conversation instead"
    );
}
