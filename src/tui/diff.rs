//! `d` on a worker: its change in its worktree as a unified diff, coloured, in the
//! scrolled popup. The runtime reads the worktree (`Op::ShowDiff`); until its `diff` event
//! comes the popup says it is reading.

use crate::protocol::{AgentId, MergeState};
use crate::tui::popup;
use crate::tui::state::SessionState;
use crate::tui::theme::Theme;
use crate::tui::wrap::wrap_hard;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::Line;

fn lines(s: &SessionState, id: AgentId, w: usize, t: &Theme) -> Vec<Line<'static>> {
    let Some((_, text)) = s.diff.as_ref().filter(|(of, _)| *of == id) else {
        return vec![Line::styled("reading the worker's change…", t.dim())];
    };
    let mut out = Vec::new();
    for line in text.lines() {
        let style = if line.starts_with("+++") || line.starts_with("---") {
            t.dim()
        } else if line.starts_with('+') {
            t.fg(Color::Green)
        } else if line.starts_with('-') {
            t.fg(Color::Red)
        } else if line.starts_with("@@") {
            t.fg(Color::Cyan)
        } else if line.starts_with("diff ") {
            t.bold(Color::Yellow)
        } else {
            Style::default()
        };
        out.extend(wrap_hard(line, style, w, &[]));
    }
    out
}

/// ` implementer 1a2b3c4d · +12 −3 · pending `
fn title(s: &SessionState, id: AgentId, t: &Theme) -> Line<'static> {
    let mut words = vec![match s.agent(id) {
        Some(a) => format!("{} {}", a.role, id.short()),
        None => id.short(),
    }];
    if let Some(a) = s.agent(id) {
        if let Some(d) = a.diff {
            words.push(d.label());
        }
        if let Some(m) = a.merge {
            words.push(m.as_str().to_string());
        }
    }
    let style = match s.agent(id).and_then(|a| a.merge) {
        Some(MergeState::Conflict) => t.bold(Color::Red),
        _ => t.bold(Color::Cyan),
    };
    Line::styled(format!(" {} ", words.join(" · ")), style)
}

pub fn render(
    buf: &mut Buffer,
    area: Rect,
    s: &SessionState,
    id: AgentId,
    scroll: &mut usize,
    t: &Theme,
) {
    let w = area.width.saturating_sub(4).clamp(20, 120);
    let lines = lines(s, id, w.saturating_sub(4) as usize, t);
    let h = (lines.len() as u16 + 3).min(area.height.saturating_sub(2));
    let rect = popup::centered(area, w, h);
    popup::scrolled(buf, rect, title(s, id, t), &lines, scroll, t);
}
