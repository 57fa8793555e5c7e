use super::*;
use crate::protocol::{ApprovalPolicy, EventKind, HistoryItem, ToolCall};
use crossterm::event::{KeyModifiers, MouseEvent};
use ratatui::buffer::Buffer;

fn ev(agent_id: AgentId, kind: EventKind) -> Event {
    Event {
        seq: 0,
        ts: 0,
        agent_id,
        kind,
    }
}

fn spawn(app: &mut App, id: AgentId, parent: Option<AgentId>, role: &str, t: Instant) {
    app.apply(
        &ev(
            id,
            EventKind::AgentSpawned {
                parent_id: parent,
                role: role.into(),
                model: "m".into(),
                task: String::new(),
                depth: 0,
            },
        ),
        t,
    );
}

fn mouse(kind: MouseEventKind, column: u16, row: u16) -> MouseEvent {
    MouseEvent {
        kind,
        column,
        row,
        modifiers: KeyModifiers::NONE,
    }
}

fn draw(app: &mut App, w: u16, h: u16, t: Instant) -> Buffer {
    let area = Rect::new(0, 0, w, h);
    let mut buf = Buffer::empty(area);
    app.render_to(area, &mut buf, t);
    buf
}

fn setup() -> (App, AgentId, AgentId, Instant) {
    let root = AgentId::new();
    let info = SessionInfo {
        log_path: None,
        replayed_seq: 0,
        prompts: Vec::new(),
        session_id: "s".into(),
        workspace: "/w".into(),
        model: "m".into(),
        approval: ApprovalPolicy::Ask,
        role: "copilot".into(),
        root_agent: root,
    };
    let mut app = App::new(&info, Theme::default());
    let t = Instant::now();
    spawn(&mut app, root, None, "copilot", t);
    let worker = AgentId::new();
    spawn(&mut app, worker, Some(root), "coder", t);
    (app, root, worker, t)
}

#[test]
fn click_selects_a_tree_row_and_wheel_scrolls() {
    let (mut app, root, worker, t) = setup();
    for i in 0..60 {
        let item = HistoryItem::user(format!("m{i}"));
        app.apply(&ev(root, EventKind::ItemAdded { item }), t);
    }
    draw(&mut app, 80, 24, t);
    // Border row 0, header row 1, root row 2, worker row 3.
    app.on_mouse(mouse(MouseEventKind::Down(MouseButton::Left), 5, 3));
    assert_eq!(app.viewed(), worker);
    assert_eq!(app.focus, Focus::Tree);
    app.on_mouse(mouse(MouseEventKind::Down(MouseButton::Left), 5, 2));
    assert_eq!(app.viewed(), root);
    // The wheel over the conversation scrolls it and stops following.
    app.on_mouse(mouse(MouseEventKind::ScrollUp, 50, 10));
    draw(&mut app, 80, 24, t);
    assert!(!app.views[&root].follow);
}

#[test]
fn click_on_a_tool_line_expands_it() {
    let (mut app, root, _, t) = setup();
    let item = HistoryItem::Assistant {
        text: String::new(),
        tool_calls: vec![ToolCall {
            id: "c1".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"a.rs"}"#.into(),
        }],
        reasoning: Vec::new(),
    };
    app.apply(&ev(root, EventKind::ItemAdded { item }), t);
    draw(&mut app, 80, 24, t);
    // Conversation pane starts at x=28; its first inner row is y=1.
    app.on_mouse(mouse(MouseEventKind::Down(MouseButton::Left), 40, 1));
    let conv = &app.state.agents[&root].conversation;
    assert!(matches!(&conv.entries[0].kind, crate::tui::state::EntryKind::Tool(t) if t.expanded));
    assert_eq!(app.focus, Focus::Conversation);
}

#[test]
fn narrow_switcher_steps_with_left_and_right() {
    let (mut app, root, worker, t) = setup();
    draw(&mut app, 60, 20, t);
    app.focus = Focus::Tree;
    let right =
        crossterm::event::KeyEvent::new(crossterm::event::KeyCode::Right, KeyModifiers::NONE);
    let left = crossterm::event::KeyEvent::new(crossterm::event::KeyCode::Left, KeyModifiers::NONE);
    app.on_key(right, t);
    assert_eq!(app.viewed(), worker);
    app.on_key(left, t);
    assert_eq!(app.viewed(), root);
}

#[test]
fn click_on_a_task_selects_it_and_its_worker() {
    let (mut app, root, worker, t) = setup();
    for (id, assignee) in [("T1", None), ("T2", Some(worker))] {
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
        app.apply(&ev(root, EventKind::TaskUpdated { task }), t);
    }
    app.left = LeftPane::Tasks;
    draw(&mut app, 80, 24, t);
    // Border row 0, header row 1, T1 rows 2-3, T2 rows 4-5.
    app.on_mouse(mouse(MouseEventKind::Down(MouseButton::Left), 5, 5));
    assert_eq!(app.tasks.selected.as_deref(), Some("T2"));
    assert_eq!(app.viewed(), worker);
    assert_eq!(app.focus, Focus::Tasks);
    // The wheel over the panel moves the selection.
    app.on_mouse(mouse(MouseEventKind::ScrollUp, 5, 5));
    assert_eq!(app.tasks.selected.as_deref(), Some("T1"));
}
