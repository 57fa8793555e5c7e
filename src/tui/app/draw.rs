//! Drawing: the whole screen from the app's state (panes, status bar, completion popup,
//! overlays, the approval and question dialogs). It remembers where the panes went, for mouse clicks.

use super::{App, Areas, Focus, LeftPane, NARROW_WIDTH, Overlay};
use crate::protocol::{AgentId, AgentStatus};
use crate::tui::commands;
use crate::tui::format::elapsed;
use crate::tui::state::Dialog;
use crate::tui::theme::status_symbol;
use crate::tui::tree;
use crate::tui::{approval, details, help, live, popup, question, save_role, status_bar, timeline};
use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Widget};
use std::time::{Duration, Instant};

/// How long a notice stays in the status bar.
const NOTICE_TTL: Duration = Duration::from_secs(5);

impl App {
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
        if narrow && self.focus == Focus::Tasks && self.overlay != Some(Overlay::Tasks) {
            // No room for the panel: its focus goes to the switcher.
            self.focus = Focus::Tree;
        }

        if matches!(self.overlay, Some(Overlay::Agents | Overlay::SaveRole(_))) {
            self.render_tree_pane(main, buf, true, now);
        } else if self.overlay == Some(Overlay::Tasks) {
            self.render_tasks_pane(main, buf, true);
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
            let tree_w = (area.width * 2 / 5).clamp(28, 46);
            let [tree_area, right] =
                Layout::horizontal([Constraint::Length(tree_w), Constraint::Min(1)]).areas(main);
            let composer_h = self
                .composer
                .height(right.width)
                .min(right.height / 2)
                .max(3);
            let [conv, composer] =
                Layout::vertical([Constraint::Min(1), Constraint::Length(composer_h)]).areas(right);
            self.render_left(tree_area, buf, now);
            self.render_conversation(conv, buf, now);
            self.render_composer(composer, buf);
        }
        self.render_status(status, buf);
        if self.overlay.is_none() && self.focus == Focus::Composer {
            self.render_completion(buf);
            self.render_mention(buf);
        }
        self.render_overlay(main, buf, now);
        let waiting = self.state.dialogs_waiting();
        match self.state.dialog() {
            Some(Dialog::Approval(p)) => {
                approval::render(
                    buf,
                    area,
                    p,
                    waiting,
                    &mut self.approval_scroll,
                    &self.theme,
                );
            }
            Some(Dialog::Question(q)) => {
                if let Some(view) = &mut self.question {
                    question::render(buf, area, q, view, waiting, &self.theme);
                }
            }
            Some(Dialog::Plan(p)) => {
                if let Some(view) = &mut self.question {
                    question::render_plan(buf, area, p, view, waiting, &self.theme);
                }
            }
            None => {}
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
        let mut title = Line::styled(
            " agents ",
            if focused {
                self.theme.accent().add_modifier(Modifier::BOLD)
            } else {
                Style::default()
            },
        );
        if self.state.paused {
            title.push_span(Span::styled(
                "‖ paused ",
                self.theme.status(AgentStatus::Paused),
            ));
        }
        let block = self.pane_block(title, focused);
        let inner = block.inner(area);
        block.render(area, buf);
        let inner = Rect::new(
            inner.x + 1,
            inner.y,
            inner.width.saturating_sub(2),
            inner.height,
        );
        self.tree.full_screen = self.overlay.is_some();
        self.tree
            .render(&self.state, inner, buf, &self.theme, focused, now);
        self.areas.tree = area;
    }

    /// The left column: the tree, the task panel, or the tree above the panel.
    fn render_left(&mut self, area: Rect, buf: &mut Buffer, now: Instant) {
        match self.left {
            LeftPane::Tree => self.render_tree_pane(area, buf, self.focus == Focus::Tree, now),
            LeftPane::Tasks => self.render_tasks_pane(area, buf, self.focus == Focus::Tasks),
            LeftPane::TreeAndTasks => {
                let [top, bottom] =
                    Layout::vertical([Constraint::Percentage(45), Constraint::Min(4)]).areas(area);
                self.render_tree_pane(top, buf, self.focus == Focus::Tree, now);
                self.render_tasks_pane(bottom, buf, self.focus == Focus::Tasks);
            }
        }
    }

    fn render_tasks_pane(&mut self, area: Rect, buf: &mut Buffer, focused: bool) {
        let title = Line::styled(
            " tasks ",
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
        self.tasks
            .render(&self.state, inner, buf, &self.theme, focused);
        self.areas.tasks = area;
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
        let asking = self.state.questions.iter().any(|q| q.agent_id == id);
        let budget_held = self.state.budget_hold.is_some();
        let indicator = self.state.agent(id).and_then(|a| {
            if !a.conversation.streaming.is_empty() {
                return None;
            }
            let took = a.busy_for(now).map(elapsed).unwrap_or_default();
            let line = match (a.status, &a.stalled) {
                (AgentStatus::Running, Some(stall)) => Some(Line::from(vec![
                    Span::styled("! ", t.warn()),
                    Span::styled(
                        format!(
                            "stalled {} on the {}",
                            elapsed(now.saturating_duration_since(stall.since)),
                            stall.on
                        ),
                        t.warn(),
                    ),
                    Span::styled(" · Esc interrupts", t.dim()),
                ])),
                (AgentStatus::Running, None) => Some(Line::from(vec![
                    Span::styled("● ", t.status(AgentStatus::Running)),
                    Span::styled(format!("working {took} · Esc interrupts"), t.dim()),
                ])),
                (AgentStatus::Waiting, _) => Some(Line::from(vec![
                    Span::styled("◐ ", t.status(AgentStatus::Waiting)),
                    Span::styled(
                        if asking {
                            format!("waiting for your answer {took}")
                        } else {
                            format!("{} {took}", live::doing(&self.state, a))
                        },
                        t.dim(),
                    ),
                ])),
                (AgentStatus::Paused, _) => Some(Line::from(vec![
                    Span::styled("‖ ", t.status(AgentStatus::Paused)),
                    Span::styled(
                        if budget_held {
                            format!("paused {took}: session budget spent · /budget USD or /stop")
                        } else {
                            format!("paused {took} · /unpause goes on")
                        },
                        t.dim(),
                    ),
                ])),
                _ => None,
            };
            let line = match (line, a.queued.len()) {
                (line, 0) => line,
                (line, n) => {
                    let mut line = line.unwrap_or_default();
                    let what = if n == 1 {
                        "1 message queued".to_string()
                    } else {
                        format!("{n} messages queued")
                    };
                    line.push_span(Span::styled(
                        format!(" · ⧗ {what} for its next step"),
                        t.warn(),
                    ));
                    Some(line)
                }
            };
            // Its workers at work, one line each: what each is doing now.
            let w = (inner.width as usize).saturating_sub(2);
            let workers = live::worker_lines(&self.state, id, w, &t, now);
            Some(line.into_iter().chain(workers).collect::<Vec<_>>())
        });
        let indicator = indicator.unwrap_or_default();
        let view = self.views.entry(id).or_default();
        let empty = self.state.agents.get(&id).is_none_or(|a| {
            a.conversation.entries.is_empty() && a.conversation.streaming.is_empty()
        });
        if empty && indicator.is_empty() {
            let hint = if id != self.state.root_agent {
                "No messages yet.".to_string()
            } else if self.state.model == crate::model::demo::DEMO_MODEL {
                // The demo model answers two words; the screen says them, not only the README.
                "Demo model: type write or team, then Enter · ? help".to_string()
            } else {
                format!(
                    "Ask {} anything. Enter sends · ? help",
                    self.state.active_role
                )
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
                if a.released {
                    spans.push(Span::styled("(released) ", t.error()));
                } else if matches!(a.status, AgentStatus::Failed | AgentStatus::Cancelled) {
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
            (Some(Overlay::Agents), _) => &[
                "Esc close",
                "↑↓ move",
                "Enter open",
                "i details",
                "s save as role",
            ],
            (Some(Overlay::SaveRole(_)), _) => &["Enter save", "Esc cancel"],
            (Some(Overlay::Rewind), _) => &["↑↓ pick", "Enter choose", "Esc back"],
            (Some(Overlay::ConfirmUndo(_)), _) => &["y undo", "n keep"],
            (Some(Overlay::Models), _) => &["↑↓ pick", "Enter use it", "Esc close"],
            (Some(_), _) => &["Esc close"],
            (None, Focus::Tree) => &[
                "? help",
                "↑↓ move",
                "Enter open",
                "i details",
                "d diff",
                "u undo merge",
                "x cancel",
                "← collapse",
            ],
            (None, Focus::Tasks) => &[
                "? help",
                "↑↓ select",
                "Enter open",
                "Ctrl+T layout",
                "i details",
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

    fn render_mention(&mut self, buf: &mut Buffer) {
        let word = self.composer.word_before_cursor();
        let Some(query) = self.mention.query(&word) else {
            return;
        };
        let matches = self.mention.matches(query);
        let (selected, loading) = (self.mention.selected, self.mention.loading());
        let area = self.areas.composer;
        crate::tui::mention::render(buf, area, &matches, selected, loading, &self.theme);
    }

    /// The `/` popup: every command the typed prefix allows, as many as fit above the
    /// composer, scrolled to keep the highlighted one in view.
    fn render_completion(&mut self, buf: &mut Buffer) {
        let cands = self.popup_candidates();
        if cands.is_empty() {
            return;
        }
        let c = self.areas.composer;
        let room = c.y.saturating_sub(self.areas.conv.y + 2).max(3);
        let n = (cands.len() as u16).min(room);
        let h = n + 2;
        if c.y < h {
            return;
        }
        let w = c.width.min(72);
        let rect = Rect::new(c.x, c.y - h, w, h);
        let title = if cands.len() > n as usize {
            format!(
                " {} commands · ↑↓ pick · Enter · Tab completes ",
                cands.len()
            )
        } else {
            " ↑↓ pick · Enter · Tab completes ".to_string()
        };
        let inner = popup::frame(
            buf,
            rect,
            Line::styled(title, self.theme.dim()),
            self.theme.accent(),
        );
        let pick = Some(self.popup_pick(cands.len()));
        let first = self.popup_pick(cands.len()).saturating_sub(n as usize - 1);
        let lines: Vec<Line<'static>> = cands
            .iter()
            .enumerate()
            .skip(first)
            .take(n as usize)
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
            None | Some(Overlay::Agents) | Some(Overlay::Tasks) => {}
            Some(Overlay::Timeline) => {
                timeline::render(buf, main, &self.state, &mut self.overlay_scroll, &t, now);
            }
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
            Some(Overlay::Stats) => {
                let order = self.state.tree_order();
                details::render_stats(buf, main, &self.state, &order, &mut self.overlay_scroll, &t);
            }
            Some(Overlay::Diff(id)) => {
                crate::tui::diff::render(buf, main, &self.state, id, &mut self.overlay_scroll, &t);
            }
            Some(Overlay::Mcp) => {
                crate::tui::mcp::render(buf, main, &self.state, &mut self.overlay_scroll, &t);
            }
            Some(Overlay::Models) => {
                crate::tui::models::render(buf, main, &self.state, self.model_pick, &t);
            }
            Some(Overlay::Review) => {
                crate::tui::review::render(buf, main, &self.state, &mut self.overlay_scroll, &t);
            }
            Some(Overlay::ConfirmDespawn(id)) => {
                details::render_confirm(buf, main, &self.state, id, &t);
            }
            Some(Overlay::ConfirmQuit) => details::render_confirm_quit(buf, main, &self.state, &t),
            Some(Overlay::SaveRole(id)) => {
                save_role::render(buf, main, &self.state, id, &self.role_name, &t);
            }
            Some(Overlay::Rewind) => {
                if let Some(view) = &self.rewind {
                    crate::tui::rewind::render(buf, main, view, &t);
                }
            }
            Some(Overlay::ConfirmUndo(id)) => {
                let who = match self.state.agent(id) {
                    Some(a) => format!("{} {}", a.role, id.short()),
                    None => id.short(),
                };
                let conflicts = &self.undo_conflicts;
                crate::tui::rewind::render_confirm_undo(buf, main, &who, conflicts, &t);
            }
        }
    }
}
