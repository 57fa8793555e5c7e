//! `/timeline`: one row per agent, time running left to right, so what ran in parallel
//! and where the team waited shows at a glance. The segments come from
//! `state/timeline.rs`; this scales them to the width and draws them with a legend.
//! Under the rows, the team's latest news one line each at its time: who messaged whom,
//! claims and give-backs, plans submitted and decided.

use crate::protocol::AgentId;
use crate::tui::format::{elapsed, truncate, width};
use crate::tui::popup;
use crate::tui::state::{Activity, SessionState};
use crate::tui::theme::{Theme, status_symbol};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use std::time::{Duration, Instant};

/// Every activity with its glyph and name, in the legend's order.
const LEGEND: [(Activity, &str, &str); 4] = [
    (Activity::Model, "█", "model call"),
    (Activity::Tool, "▄", "tool call"),
    (Activity::Waiting, "─", "waiting"),
    (Activity::Approval, "!", "approval"),
];

fn glyph(a: Activity) -> &'static str {
    LEGEND
        .iter()
        .find(|(x, _, _)| *x == a)
        .map_or(" ", |(_, g, _)| g)
}

fn style(a: Activity, theme: &Theme) -> Style {
    match a {
        Activity::Model => theme.fg(Color::Cyan),
        Activity::Tool => theme.fg(Color::Green),
        Activity::Waiting => theme.fg(Color::Yellow),
        Activity::Approval => theme.bold(Color::Magenta),
    }
}

/// How many of the team's latest news lines the timeline shows.
const NEWS_LINES: usize = 6;

/// Longest part of a message or plan a news line shows.
const NEWS_TEXT: usize = 80;

/// `coder 1a2b3c4e`, or the persona's role alone.
fn who(s: &SessionState, id: AgentId) -> String {
    let role = s.agent(id).map_or("agent", |a| a.role.as_str());
    if id == s.root_agent {
        role.to_string()
    } else {
        format!("{role} {}", id.short())
    }
}

/// The team's latest news: a heading, then `  12s  ✉ coder 1a2b3c4e → tester …` for
/// each, oldest first, at most `max` lines in all.
fn news(s: &SessionState, w: usize, max: usize, theme: &Theme) -> Vec<Line<'static>> {
    let all = s.timeline.news();
    if all.is_empty() || max < 2 {
        return Vec::new();
    }
    let shown = all.len().min(max - 1).min(NEWS_LINES);
    let heading = if shown < all.len() {
        format!("team · the latest {shown} of {}", all.len())
    } else {
        "team".to_string()
    };
    let mut out = vec![Line::styled(heading, theme.dim())];
    let start = s.timeline.start().unwrap_or_default();
    for (at, n) in &all[all.len() - shown..] {
        let at = at.map_or(String::new(), |t| elapsed(t.saturating_sub(start)));
        let at = format!("{at:>6}  ");
        let text = truncate(
            &n.line(|id| who(s, id), NEWS_TEXT),
            w.saturating_sub(width(&at)),
        );
        out.push(Line::from(vec![
            Span::styled(at, theme.dim()),
            Span::raw(text),
        ]));
    }
    out
}

/// Width of the agent names on the left.
fn label_width(w: usize) -> usize {
    (w / 4).clamp(10, 24)
}

fn label(s: &SessionState, id: AgentId, w: usize, theme: &Theme) -> Vec<Span<'static>> {
    let Some(a) = s.agent(id) else {
        return vec![Span::raw(" ".repeat(w))];
    };
    let indent = "  ".repeat((a.depth as usize).min(3));
    let mark = format!("{} ", status_symbol(a.status));
    let tail = if id == s.root_agent {
        " ★".to_string()
    } else {
        format!(" {}", id.short())
    };
    let room = w.saturating_sub(width(&indent) + width(&mark) + width(&tail) + 1);
    let name = truncate(&a.role, room);
    let pad = w.saturating_sub(width(&indent) + width(&mark) + width(&name) + width(&tail));
    vec![
        Span::raw(indent),
        Span::styled(mark, theme.status(a.status)),
        Span::styled(name, Style::default().add_modifier(Modifier::BOLD)),
        Span::styled(tail, theme.dim()),
        Span::raw(" ".repeat(pad)),
    ]
}

/// `0s` at the left, the midpoint, the whole span at the right, over `cols` columns.
fn axis(span_label: [String; 3], lead: usize, cols: usize, theme: &Theme) -> Line<'static> {
    let mut row: Vec<char> = vec![' '; cols];
    let [first, mid, last] = span_label;
    let mut put = |at: usize, text: &str| {
        for (i, c) in text.chars().enumerate() {
            if let Some(slot) = row.get_mut(at + i) {
                *slot = c;
            }
        }
    };
    put(0, &first);
    let mid_at = (cols / 2).saturating_sub(mid.chars().count() / 2);
    if mid_at > first.chars().count() + 1 && mid_at + mid.chars().count() + 1 < cols {
        put(mid_at, &mid);
    }
    put(cols.saturating_sub(last.chars().count()), &last);
    Line::from(vec![
        Span::raw(" ".repeat(lead)),
        Span::styled(row.into_iter().collect::<String>(), theme.dim()),
    ])
}

/// The time axis in session time: `(start, now)`, or `None` before anything ran.
fn span(s: &SessionState, now: Instant) -> Option<(Duration, Duration)> {
    let now = s.timeline.session_time(s.timeline.wall_ms(now)?);
    s.timeline.start().filter(|t| *t < now).map(|t| (t, now))
}

/// One agent's row: its name, then what it did in each column's slice of time.
fn row(
    s: &SessionState,
    id: AgentId,
    (start, now): (Duration, Duration),
    w: usize,
    theme: &Theme,
) -> Line<'static> {
    let lw = label_width(w);
    let cols = w.saturating_sub(lw + 1);
    let mut spans = label(s, id, lw, theme);
    spans.push(Span::raw(" "));
    // Runs of one activity become one span.
    let mut runs: Vec<(Option<Activity>, usize)> = Vec::new();
    for cell in s.timeline.cells(id, start, now, cols) {
        match runs.last_mut() {
            Some((a, n)) if *a == cell => *n += 1,
            _ => runs.push((cell, 1)),
        }
    }
    for (a, n) in runs {
        spans.push(match a {
            Some(a) => Span::styled(glyph(a).repeat(n), style(a, theme)),
            None => Span::raw(" ".repeat(n)),
        });
    }
    Line::from(spans)
}

fn legend(s: &SessionState, theme: &Theme) -> Vec<Line<'static>> {
    let mut spans = Vec::new();
    for (a, g, name) in LEGEND {
        spans.push(Span::styled(g, style(a, theme)));
        spans.push(Span::raw(format!(" {name}   ")));
    }
    spans.push(Span::styled("blank: idle", theme.dim()));
    let mut out = vec![Line::from(spans)];
    if s.timeline.unclocked() {
        out.push(Line::styled(
            "Resumed from a log without times: its part is not shown.",
            theme.dim(),
        ));
    } else if s.timeline.has_gap() {
        out.push(Line::styled(
            "Resumed: the time squad was not running is left out.",
            theme.dim(),
        ));
    }
    out
}

pub fn render(
    buf: &mut Buffer,
    area: Rect,
    s: &SessionState,
    scroll: &mut usize,
    theme: &Theme,
    now: Instant,
) {
    let w = area.width.saturating_sub(2).max(20);
    let inner_w = w.saturating_sub(4) as usize;
    let span = span(s, now);
    let order = s.tree_order();
    let legend = legend(s, theme);
    // The axis and the legend stay put; the agents scroll between them.
    let rows = if span.is_some() { order.len() } else { 1 };
    let fixed = 1 + 1 + legend.len() as u16 + 1;
    let wanted_news = news(s, inner_w, NEWS_LINES + 1, theme).len() as u16;
    let rect = popup::centered(area, w, rows as u16 + fixed + wanted_news + 2);
    let inner = popup::frame(
        buf,
        rect,
        Line::styled(" timeline ", theme.bold(Color::Cyan)),
        theme.accent(),
    );
    if inner.height < fixed + 1 {
        return;
    }
    // The news gives way to the agents' rows: at least one row stays.
    let news = news(s, inner_w, (inner.height - fixed - 1) as usize, theme);
    let body_h = inner.height - fixed - news.len() as u16;
    let line_at = |y: u16, line: Line<'static>| (Rect::new(inner.x, y, inner.width, 1), [line]);
    match span {
        None => {
            let (r, l) = line_at(inner.y, Line::styled("Nothing has run yet.", theme.dim()));
            popup::draw_lines(buf, r, &l, 0);
        }
        Some(span) => {
            let lw = label_width(inner_w);
            let cols = inner_w.saturating_sub(lw + 1);
            let d = span.1.saturating_sub(span.0);
            let labels = ["0s".to_string(), elapsed(d / 2), elapsed(d)];
            let (r, l) = line_at(inner.y, axis(labels, lw + 1, cols, theme));
            popup::draw_lines(buf, r, &l, 0);
            // Only the rows on screen are worked out.
            *scroll = (*scroll).min(order.len().saturating_sub(body_h as usize));
            let shown: Vec<Line<'static>> = order
                .iter()
                .skip(*scroll)
                .take(body_h as usize)
                .map(|id| row(s, *id, span, inner_w, theme))
                .collect();
            let body = Rect::new(inner.x, inner.y + 1, inner.width, body_h);
            popup::draw_lines(buf, body, &shown, 0);
        }
    }
    let at = Rect::new(
        inner.x,
        inner.y + 1 + body_h,
        inner.width,
        news.len() as u16,
    );
    popup::draw_lines(buf, at, &news, 0);
    let bottom = inner.bottom() - 1 - legend.len() as u16;
    popup::draw_lines(
        buf,
        Rect::new(inner.x, bottom, inner.width, legend.len() as u16),
        &legend,
        0,
    );
    let hint = if rows > body_h as usize {
        "↑↓ scroll · Esc close"
    } else {
        "Esc close"
    };
    let (r, l) = line_at(inner.bottom() - 1, popup::hint(hint, theme));
    popup::draw_lines(buf, r, &l, 0);
}
