//! The whole screen as one value: session state plus view state (focus, selection,
//! scroll, overlays). Input goes in through `on_key` / `on_paste` / `on_mouse`, which
//! return the [`Action`]s to carry out and do no I/O, so the loop in `event_loop` is a thin
//! shell and everything here can be driven by tests.

use crate::protocol::{AgentId, AgentStatus, Event, Op};
use crate::tui::commands;
use crate::tui::composer::Composer;
use crate::tui::conversation::ConvView;
use crate::tui::format::elapsed;
use crate::tui::handle::SessionInfo;
use crate::tui::state::SessionState;
use crate::tui::theme::{Theme, status_symbol};
use crate::tui::tree::{self, TreeView};
use crate::tui::{approval, details, help, popup, status_bar};
use crossterm::event::{Event as TermEvent, MouseButton, MouseEvent, MouseEventKind};
use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Widget};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Below this width the tree gives way to a one-line agent switcher.
pub const NARROW_WIDTH: u16 = 70;
/// How long a notice stays in the status bar.
const NOTICE_TTL: Duration = Duration::from_secs(5);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Focus {
    Tree,
    Conversation,
    Composer,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overlay {
    Help,
    Details(AgentId),
    Cost,
    ConfirmDespawn(AgentId),
    /// The tree, full screen (`/agents`).
    Agents,
}

/// What the caller must do after an input.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    Send(Op),
    /// Leave this session's screen (an `Op::Shutdown` has been sent just before).
    Quit(Exit),
}

/// What the user wants after leaving a session's screen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exit {
    Quit,
    /// `/new`: a fresh session in the same workspace.
    NewSession,
    /// `/resume [ID]`: a saved session (the latest other one without an id).
    Resume(Option<String>),
}

/// Where things were drawn in the last frame, for mouse hit-testing.
#[derive(Clone, Copy, Debug, Default)]
struct Areas {
    tree: Rect,
    switcher: Rect,
    conv: Rect,
    conv_inner: Rect,
    composer: Rect,
}

pub struct App {
    pub state: SessionState,
    pub theme: Theme,
    pub focus: Focus,
    pub tree: TreeView,
    pub composer: Composer,
    pub overlay: Option<Overlay>,
    pub(crate) views: HashMap<AgentId, ConvView>,
    pub(crate) overlay_scroll: usize,
    pub(crate) approval_scroll: usize,
    /// The approval at the front of the queue and when it got there: answers typed in
    /// the first moments are ignored, so a keystroke meant for the composer cannot
    /// approve something the user has not seen.
    pub(crate) approval_front: Option<(u64, Instant)>,
    pub(crate) last_ctrl_c: Option<Instant>,
    pub(crate) notice: Option<(String, Instant)>,
    home: Option<PathBuf>,
    areas: Areas,
    /// Whether the last frame was narrow (switcher instead of tree): ← → then switch.
    pub(crate) narrow: bool,
}

impl App {
    pub fn new(info: &SessionInfo, theme: Theme) -> Self {
        Self {
            state: SessionState::new(info),
            theme,
            focus: Focus::Composer,
            tree: TreeView::default(),
            composer: Composer::new(),
            overlay: None,
            views: HashMap::new(),
            overlay_scroll: 0,
            approval_scroll: 0,
            approval_front: None,
            last_ctrl_c: None,
            notice: None,
            home: std::env::var_os("HOME").map(PathBuf::from),
            areas: Areas::default(),
            narrow: false,
        }
    }

    /// Sets the home directory shown as `~` (tests pin it for stable snapshots).
    pub fn set_home(&mut self, home: Option<PathBuf>) {
        self.home = home;
    }

    /// Folds in one event from the runtime.
    pub fn apply(&mut self, ev: &Event, now: Instant) {
        self.state.apply(ev, now);
        self.sync_approval_front(now);
    }

    pub(crate) fn sync_approval_front(&mut self, now: Instant) {
        let front = self.state.approvals.front().map(|p| p.request_id);
        match (front, self.approval_front) {
            (None, _) => self.approval_front = None,
            (Some(id), Some((cur, _))) if id == cur => {}
            (Some(id), _) => {
                self.approval_front = Some((id, now));
                self.approval_scroll = 0;
            }
        }
    }

    /// The agent whose conversation is on screen.
    pub fn viewed(&self) -> AgentId {
        self.tree.current(&self.state)
    }

    /// Who the composer's message goes to: `None` for the active persona.
    pub fn target(&self) -> Option<AgentId> {
        let v = self.viewed();
        (v != self.state.root_agent).then_some(v)
    }

    pub(crate) fn view_mut(&mut self, id: AgentId) -> &mut ConvView {
        self.views.entry(id).or_default()
    }

    pub(crate) fn set_notice(&mut self, text: impl Into<String>, now: Instant) {
        self.notice = Some((text.into(), now));
    }

    /// Whether anything on screen changes with time alone (elapsed clocks, notices).
    pub fn animating(&self) -> bool {
        self.notice.is_some()
            || self
                .state
                .agents
                .values()
                .any(|a| a.status == AgentStatus::Running || a.status == AgentStatus::Waiting)
    }

    /// Any terminal input.
    pub fn on_terminal_event(&mut self, ev: TermEvent, now: Instant) -> Vec<Action> {
        match ev {
            TermEvent::Key(k) => self.on_key(k, now),
            TermEvent::Paste(text) => {
                self.on_paste(&text);
                Vec::new()
            }
            TermEvent::Mouse(m) => self.on_mouse(m),
            _ => Vec::new(),
        }
    }

    /// Bracketed paste: the text goes into the composer as is, newlines included (never
    /// to a dialog: pasted text must not answer an approval).
    pub fn on_paste(&mut self, text: &str) {
        if self.overlay.is_some_and(|o| o != Overlay::Help) {
            self.overlay = None;
        }
        self.focus = Focus::Composer;
        self.composer.paste(text);
    }

    pub fn on_mouse(&mut self, m: MouseEvent) -> Vec<Action> {
        if !self.state.approvals.is_empty() {
            return Vec::new();
        }
        let inside =
            |r: Rect| m.column >= r.x && m.column < r.right() && m.row >= r.y && m.row < r.bottom();
        match m.kind {
            MouseEventKind::ScrollUp | MouseEventKind::ScrollDown => {
                let up = m.kind == MouseEventKind::ScrollUp;
                if matches!(self.overlay, Some(Overlay::Agents)) || inside(self.areas.tree) {
                    self.tree.move_by(&self.state, if up { -1 } else { 1 });
                } else if self.overlay.is_some() {
                    self.overlay_scroll = if up {
                        self.overlay_scroll.saturating_sub(3)
                    } else {
                        self.overlay_scroll + 3
                    };
                } else {
                    let id = self.viewed();
                    self.view_mut(id).scroll(if up { -3 } else { 3 });
                }
            }
            MouseEventKind::Down(MouseButton::Left) => {
                if let Some(row) = self.tree.row_at(m.column, m.row)
                    && (inside(self.areas.tree) || self.overlay == Some(Overlay::Agents))
                {
                    if self.tree.select_row(&self.state, row) {
                        self.focus = Focus::Tree;
                    }
                } else if self.overlay.is_some() {
                    return Vec::new();
                } else if inside(self.areas.switcher) {
                    self.focus = Focus::Tree;
                    let mid = self.areas.switcher.x + self.areas.switcher.width / 2;
                    self.tree
                        .move_by(&self.state, if m.column < mid { -1 } else { 1 });
                } else if inside(self.areas.conv) {
                    self.focus = Focus::Conversation;
                    let inner = self.areas.conv_inner;
                    if m.row >= inner.y {
                        let id = self.viewed();
                        let row = (m.row - inner.y) as usize;
                        if let Some(idx) = self.view_mut(id).entry_at_row(row)
                            && let Some(a) = self.state.agents.get_mut(&id)
                            && a.conversation.toggle_tool(idx)
                        {
                            self.view_mut(id).selected = Some(idx);
                        }
                    }
                } else if inside(self.areas.composer) {
                    self.focus = Focus::Composer;
                }
            }
            _ => {}
        }
        Vec::new()
    }

    /// Draws the whole screen.
    pub fn render(&mut self, frame: &mut Frame<'_>, now: Instant) {
        let area = frame.area();
        self.render_to(area, frame.buffer_mut(), now);
    }

    /// Draws into a buffer (what `render` does, usable without a terminal).
    pub fn render_to(&mut self, area: Rect, buf: &mut Buffer, now: Instant) {
        if self
            .notice
            .as_ref()
            .is_some_and(|(_, at)| now.saturating_duration_since(*at) > NOTICE_TTL)
        {
            self.notice = None;
        }
        if area.width < 10 || area.height < 5 {
            buf.set_string(area.x, area.y, "squad: window too small", Style::default());
            return;
        }
        let [main, status] =
            Layout::vertical([Constraint::Min(1), Constraint::Length(1)]).areas(area);
        self.areas = Areas::default();
        let narrow = area.width < NARROW_WIDTH;
        self.narrow = narrow;

        if self.overlay == Some(Overlay::Agents) {
            self.render_tree_pane(main, buf, true, now);
        } else if narrow {
            let composer_h = self.composer.height(main.width).min(main.height / 2).max(3);
            let [switcher, conv, composer] = Layout::vertical([
                Constraint::Length(1),
                Constraint::Min(1),
                Constraint::Length(composer_h),
            ])
            .areas(main);
            self.render_switcher(switcher, buf);
            self.render_conversation(conv, buf, now);
            self.render_composer(composer, buf);
        } else {
            let tree_w = (area.width * 35 / 100).clamp(24, 44);
            let [tree_area, right] =
                Layout::horizontal([Constraint::Length(tree_w), Constraint::Min(1)]).areas(main);
            let composer_h = self
                .composer
                .height(right.width)
                .min(right.height / 2)
                .max(3);
            let [conv, composer] =
                Layout::vertical([Constraint::Min(1), Constraint::Length(composer_h)]).areas(right);
            self.render_tree_pane(tree_area, buf, self.focus == Focus::Tree, now);
            self.render_conversation(conv, buf, now);
            self.render_composer(composer, buf);
        }
        self.render_status(status, buf);
        if self.overlay.is_none() && self.focus == Focus::Composer {
            self.render_completion(buf);
        }
        self.render_overlay(main, buf, now);
        if let Some(p) = self.state.approvals.front().cloned() {
            let waiting = self.state.approvals.len() - 1;
            approval::render(
                buf,
                area,
                &p,
                waiting,
                &mut self.approval_scroll,
                &self.theme,
            );
        }
    }

    fn pane_block(&self, title: Line<'static>, focused: bool) -> Block<'static> {
        Block::bordered()
            .border_type(if focused {
                BorderType::Thick
            } else {
                BorderType::Rounded
            })
            .border_style(self.theme.border(focused))
            .title(title)
    }

    fn render_tree_pane(&mut self, area: Rect, buf: &mut Buffer, focused: bool, now: Instant) {
        let title = Line::styled(
            " agents ",
            if focused {
                self.theme.accent().add_modifier(Modifier::BOLD)
            } else {
                Style::default()
            },
        );
        let block = self.pane_block(title, focused);
        let inner = block.inner(area);
        block.render(area, buf);
        let inner = Rect::new(
            inner.x + 1,
            inner.y,
            inner.width.saturating_sub(2),
            inner.height,
        );
        self.tree
            .render(&self.state, inner, buf, &self.theme, focused, now);
        self.areas.tree = area;
    }

    fn render_switcher(&mut self, area: Rect, buf: &mut Buffer) {
        let line = tree::switcher_line(
            &mut self.tree,
            &self.state,
            &self.theme,
            area.width as usize,
        );
        buf.set_line(area.x, area.y, &line, area.width);
        if self.focus == Focus::Tree {
            buf.set_style(area, self.theme.selected());
        }
        self.areas.switcher = area;
    }

    fn conversation_title(&self, id: AgentId, now: Instant) -> Line<'static> {
        let t = &self.theme;
        let Some(a) = self.state.agent(id) else {
            return Line::raw(" conversation ");
        };
        let mut spans = vec![
            Span::raw(" "),
            Span::styled(format!("{} ", status_symbol(a.status)), t.status(a.status)),
            Span::styled(
                a.role.clone(),
                Style::default().add_modifier(Modifier::BOLD),
            ),
        ];
        if id == self.state.root_agent {
            spans.push(Span::styled(" ★", t.warn()));
        } else {
            spans.push(Span::styled(format!(" {}", id.short()), t.dim()));
        }
        let mut status = a.status.to_string();
        if let Some(d) = a.busy_for(now) {
            status.push_str(&format!(" {}", elapsed(d)));
        }
        spans.push(Span::styled(format!(" · {status} "), t.dim()));
        Line::from(spans)
    }

    fn render_conversation(&mut self, area: Rect, buf: &mut Buffer, now: Instant) {
        let id = self.viewed();
        let focused = self.focus == Focus::Conversation;
        let title = self.conversation_title(id, now);
        let block = self.pane_block(title, focused);
        let inner = block.inner(area);
        self.areas.conv = area;
        self.areas.conv_inner = inner;

        let t = self.theme;
        let indicator = self.state.agent(id).and_then(|a| {
            if !a.conversation.streaming.is_empty() {
                return None;
            }
            let took = a.busy_for(now).map(elapsed).unwrap_or_default();
            match a.status {
                AgentStatus::Running => Some(Line::from(vec![
                    Span::styled("● ", t.status(AgentStatus::Running)),
                    Span::styled(format!("working {took} · Esc interrupts"), t.dim()),
                ])),
                AgentStatus::Waiting => Some(Line::from(vec![
                    Span::styled("◐ ", t.status(AgentStatus::Waiting)),
                    Span::styled(format!("waiting for workers or approval {took}"), t.dim()),
                ])),
                _ => None,
            }
        });
        let view = self.views.entry(id).or_default();
        let empty = self.state.agents.get(&id).is_none_or(|a| {
            a.conversation.entries.is_empty() && a.conversation.streaming.is_empty()
        });
        if empty && indicator.is_none() {
            let hint = if id == self.state.root_agent {
                format!(
                    "Ask {} anything. Enter sends · ? help",
                    self.state.active_role
                )
            } else {
                "No messages yet.".to_string()
            };
            if inner.height > 0 {
                let y = inner.y + inner.height / 3;
                let line = Line::styled(hint, t.dim());
                let w = (line.width() as u16).min(inner.width);
                buf.set_line(inner.x + (inner.width - w) / 2, y, &line, w);
            }
        } else if let Some(a) = self.state.agents.get(&id) {
            view.render(&a.conversation, indicator, inner, buf, &t, focused);
        }
        let mut block = block;
        if !view.follow {
            block = block.title_bottom(
                Line::styled(" ↓ more below · End follows ", t.warn()).right_aligned(),
            );
        }
        block.render(area, buf);
    }

    fn composer_title(&self) -> Line<'static> {
        let t = &self.theme;
        let focused = self.focus == Focus::Composer;
        let label = if focused {
            t.accent().add_modifier(Modifier::BOLD)
        } else {
            Style::default()
        };
        match self.target().and_then(|id| self.state.agent(id)) {
            None => Line::from(vec![
                Span::styled(" to ", label),
                Span::styled(self.state.active_role.clone(), label),
                Span::styled(" ★ ", t.warn()),
            ]),
            Some(a) => {
                let mut spans = vec![
                    Span::styled(" to ", label),
                    Span::styled(a.role.clone(), label),
                    Span::styled(format!(" {} ", a.id.short()), t.dim()),
                ];
                if matches!(a.status, AgentStatus::Failed | AgentStatus::Cancelled) {
                    spans.push(Span::styled(format!("({}) ", a.status), t.error()));
                }
                Line::from(spans)
            }
        }
    }

    fn render_composer(&mut self, area: Rect, buf: &mut Buffer) {
        let title = self.composer_title();
        let focused = self.focus == Focus::Composer;
        self.composer.render(area, buf, title, &self.theme, focused);
        self.areas.composer = area;
    }

    fn render_status(&mut self, area: Rect, buf: &mut Buffer) {
        let hint: &[&str] = match (self.overlay, self.focus) {
            (Some(_), _) => &["Esc close"],
            (None, Focus::Tree) => &[
                "? help",
                "↑↓ move",
                "Enter open",
                "i details",
                "x cancel",
                "← collapse",
            ],
            (None, Focus::Conversation) => &[
                "? help",
                "↑↓ select",
                "Enter expand",
                "PgUp/PgDn scroll",
                "Esc interrupt",
            ],
            (None, Focus::Composer) => &[
                "F1 help",
                "Enter send",
                "Alt+Enter newline",
                "Tab focus",
                "/ commands",
            ],
        };
        let line = status_bar::line(
            &self.state,
            self.home.as_deref(),
            hint,
            self.notice.as_ref().map(|(n, _)| n.as_str()),
            area.width as usize,
            &self.theme,
        );
        buf.set_line(area.x, area.y, &line, area.width);
    }

    fn render_completion(&mut self, buf: &mut Buffer) {
        let text = self.composer.text();
        let roles = self.state.known_roles();
        let cands = commands::candidates(&text, &roles);
        if cands.is_empty() || cands.len() == 1 && cands[0] == text.trim_end() {
            return;
        }
        let c = self.areas.composer;
        let n = cands.len().min(8) as u16;
        let h = n + 2;
        if c.y < h {
            return;
        }
        let w = c.width.min(64);
        let rect = Rect::new(c.x, c.y - h, w, h);
        let inner = popup::frame(
            buf,
            rect,
            Line::styled(" Tab completes ", self.theme.dim()),
            self.theme.accent(),
        );
        let pick = self
            .composer
            .completion_cycle
            .checked_sub(1)
            .map(|i| i % cands.len());
        let lines: Vec<Line<'static>> = cands
            .iter()
            .take(n as usize)
            .enumerate()
            .map(|(i, cand)| {
                let desc = commands::COMMANDS
                    .iter()
                    .find(|(c, _)| c == cand)
                    .map(|(_, d)| *d)
                    .unwrap_or("");
                let mut line = Line::from(vec![
                    Span::styled(
                        format!("{cand:<10}"),
                        self.theme.accent().add_modifier(Modifier::BOLD),
                    ),
                    Span::styled(format!(" {desc}"), self.theme.dim()),
                ]);
                if pick == Some(i) {
                    line = line.style(self.theme.selected());
                }
                line
            })
            .collect();
        popup::draw_lines(buf, inner, &lines, 0);
    }

    fn render_overlay(&mut self, main: Rect, buf: &mut Buffer, now: Instant) {
        let t = self.theme;
        match self.overlay {
            None | Some(Overlay::Agents) => {}
            Some(Overlay::Help) => help::render(buf, main, &mut self.overlay_scroll, &t),
            Some(Overlay::Details(id)) => details::render_agent(
                buf,
                main,
                &self.state,
                id,
                &mut self.overlay_scroll,
                &t,
                now,
            ),
            Some(Overlay::Cost) => {
                let order = self.state.tree_order();
                details::render_cost(buf, main, &self.state, &order, &mut self.overlay_scroll, &t);
            }
            Some(Overlay::ConfirmDespawn(id)) => {
                details::render_confirm(buf, main, &self.state, id, &t);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ApprovalPolicy, EventKind, HistoryItem, ToolCall};
    use crossterm::event::{KeyModifiers, MouseEvent};

    fn ev(agent_id: AgentId, kind: EventKind) -> Event {
        Event {
            seq: 0,
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
        };
        app.apply(&ev(root, EventKind::ItemAdded { item }), t);
        draw(&mut app, 80, 24, t);
        // Conversation pane starts at x=28; its first inner row is y=1.
        app.on_mouse(mouse(MouseEventKind::Down(MouseButton::Left), 40, 1));
        let conv = &app.state.agents[&root].conversation;
        assert!(
            matches!(&conv.entries[0].kind, crate::tui::state::EntryKind::Tool(t) if t.expanded)
        );
        assert_eq!(app.focus, Focus::Conversation);
    }

    #[test]
    fn narrow_switcher_steps_with_left_and_right() {
        let (mut app, root, worker, t) = setup();
        draw(&mut app, 60, 20, t);
        app.focus = Focus::Tree;
        let right =
            crossterm::event::KeyEvent::new(crossterm::event::KeyCode::Right, KeyModifiers::NONE);
        let left =
            crossterm::event::KeyEvent::new(crossterm::event::KeyCode::Left, KeyModifiers::NONE);
        app.on_key(right, t);
        assert_eq!(app.viewed(), worker);
        app.on_key(left, t);
        assert_eq!(app.viewed(), root);
    }
}
