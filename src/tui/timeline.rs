//! `/timeline`: one row per agent, time running left to right, so what ran in parallel
//! and where the team waited shows at a glance. The segments come from
//! `state/timeline.rs`; this scales them to the width and draws them with a legend.

use crate::protocol::AgentId;
use crate::tui::format::{elapsed, truncate, width};
use crate::tui::popup;
use crate::tui::state::{Activity, SessionState};
use crate::tui::theme::{Theme, status_symbol};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use std::time::Instant;

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

/// The rows: the axis first, then one line per agent in tree order.
fn rows(s: &SessionState, w: usize, theme: &Theme, now: Instant) -> Vec<Line<'static>> {
    let lw = label_width(w);
    let cols = w.saturating_sub(lw + 1);
    let Some(start) = s.timeline.start().filter(|t| *t < now) else {
        return vec![Line::styled("Nothing has run yet.", theme.dim())];
    };
    let span = now.saturating_duration_since(start);
    let mut out = vec![axis(
        ["0s".into(), elapsed(span / 2), elapsed(span)],
        lw + 1,
        cols,
        theme,
    )];
    for id in s.tree_order() {
        let mut spans = label(s, id, lw, theme);
        spans.push(Span::raw(" "));
        // Runs of one activity become one span.
        let mut run: Option<(Option<Activity>, usize)> = None;
        let cells = s.timeline.cells(id, start, now, cols);
        let flush = |spans: &mut Vec<Span<'static>>, run: Option<(Option<Activity>, usize)>| {
            if let Some((a, n)) = run {
                spans.push(match a {
                    Some(a) => Span::styled(glyph(a).repeat(n), style(a, theme)),
                    None => Span::raw(" ".repeat(n)),
                });
            }
        };
        for cell in cells {
            match &mut run {
                Some((a, n)) if *a == cell => *n += 1,
                _ => {
                    flush(&mut spans, run.take());
                    run = Some((cell, 1));
                }
            }
        }
        flush(&mut spans, run);
        out.push(Line::from(spans));
    }
    out
}

fn legend(s: &SessionState, theme: &Theme) -> Vec<Line<'static>> {
    let mut spans = Vec::new();
    for (a, g, name) in LEGEND {
        spans.push(Span::styled(g, style(a, theme)));
        spans.push(Span::raw(format!(" {name}   ")));
    }
    spans.push(Span::styled("blank: idle", theme.dim()));
    let mut out = vec![Line::from(spans)];
    if s.has_replayed() {
        out.push(Line::styled(
            "Resumed: what happened before was read from the session log, which has no clock; \
             time starts at the resume.",
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
    let rows = rows(s, inner_w, theme, now);
    let legend = legend(s, theme);
    // Axis and legend stay put; the agents scroll between them.
    let (axis, agents) = match rows.split_first() {
        Some((a, rest)) if rows.len() > 1 => (Some(a.clone()), rest.to_vec()),
        _ => (None, rows),
    };
    let fixed = axis.is_some() as u16 + 1 + legend.len() as u16 + 1;
    let rect = popup::centered(area, w, agents.len() as u16 + fixed + 2);
    let inner = popup::frame(
        buf,
        rect,
        Line::styled(" timeline ", theme.bold(Color::Cyan)),
        theme.accent(),
    );
    if inner.height < fixed + 1 {
        return;
    }
    let mut y = inner.y;
    if let Some(axis) = axis {
        popup::draw_lines(buf, Rect::new(inner.x, y, inner.width, 1), &[axis], 0);
        y += 1;
    }
    let body_h = inner.height - fixed;
    *scroll = (*scroll).min(agents.len().saturating_sub(body_h as usize));
    popup::draw_lines(
        buf,
        Rect::new(inner.x, y, inner.width, body_h),
        &agents,
        *scroll,
    );
    let bottom = inner.bottom() - 1 - legend.len() as u16;
    popup::draw_lines(
        buf,
        Rect::new(inner.x, bottom, inner.width, legend.len() as u16),
        &legend,
        0,
    );
    let hint = if agents.len() > body_h as usize {
        "↑↓ scroll · Esc close"
    } else {
        "Esc close"
    };
    popup::draw_lines(
        buf,
        Rect::new(inner.x, inner.bottom() - 1, inner.width, 1),
        &[popup::hint(hint, theme)],
        0,
    );
}
