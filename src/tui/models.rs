//! `/model` with no name: the models the server lists (the core asks it, `Op::ListModels`),
//! the persona's current one marked; Enter on the highlighted one switches to it.

use crate::tui::popup;
use crate::tui::state::SessionState;
use crate::tui::theme::Theme;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Color;
use ratatui::text::{Line, Span};

fn lines(s: &SessionState, pick: usize, t: &Theme) -> Vec<Line<'static>> {
    match &s.models {
        None => vec![Line::styled("asking the server for its models…", t.dim())],
        Some(Err(e)) => vec![
            Line::styled(
                format!("The server's models could not be listed: {e}"),
                t.error(),
            ),
            Line::styled("/model NAME switches to a model you name.", t.dim()),
        ],
        Some(Ok(models)) if models.is_empty() => {
            vec![Line::styled("The server lists no models.", t.dim())]
        }
        Some(Ok(models)) => models
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let current = *m == s.model;
                let mark = if current { "● " } else { "  " };
                let mut line = Line::from(vec![
                    Span::styled(mark, t.ok()),
                    Span::raw(m.clone()),
                    Span::styled(if current { "  (now)" } else { "" }, t.dim()),
                ]);
                if i == pick {
                    line = line.style(t.selected());
                }
                line
            })
            .collect(),
    }
}

pub fn render(buf: &mut Buffer, area: Rect, s: &SessionState, pick: usize, t: &Theme) {
    let lines = lines(s, pick, t);
    let w = area.width.saturating_sub(4).clamp(20, 72);
    let rect = popup::centered(area, w, lines.len() as u16 + 2);
    let title = Line::styled(" the persona's model ", t.bold(Color::Cyan));
    let inner = popup::frame(buf, rect, title, t.accent());
    let first = pick.saturating_sub(inner.height.saturating_sub(1) as usize);
    popup::draw_lines(buf, inner, &lines, first);
}
