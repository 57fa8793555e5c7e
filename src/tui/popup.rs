//! Shared drawing for dialogs and overlays: a cleared, bordered box over the screen.

use crate::tui::theme::Theme;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::widgets::{Block, BorderType, Clear, Widget};

/// A `w`×`h` box centred in `area`, shrunk to fit.
pub fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

/// Clears `area`, draws a border with `title` and returns the inside.
pub fn frame(buf: &mut Buffer, area: Rect, title: Line<'static>, border: Style) -> Rect {
    Clear.render(area, buf);
    let block = Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(border)
        .title(title);
    let inner = block.inner(area);
    block.render(area, buf);
    inner
}

/// Draws `lines` from `scroll` on, one per row, with one column of padding.
pub fn draw_lines(buf: &mut Buffer, area: Rect, lines: &[Line<'_>], scroll: usize) {
    let w = area.width.saturating_sub(2);
    for (k, line) in lines
        .iter()
        .skip(scroll)
        .take(area.height as usize)
        .enumerate()
    {
        buf.set_line(area.x + 1, area.y + k as u16, line, w);
    }
}

/// A bottom line of key hints, e.g. "Esc close".
pub fn hint(text: &str, theme: &Theme) -> Line<'static> {
    Line::styled(text.to_string(), theme.dim())
}

/// A framed box of `lines` that scrolls, with its key hint on the bottom row.
pub fn scrolled(
    buf: &mut Buffer,
    rect: Rect,
    title: Line<'static>,
    lines: &[Line<'static>],
    scroll: &mut usize,
    theme: &Theme,
) {
    let inner = frame(buf, rect, title, theme.accent());
    if inner.height < 2 {
        return;
    }
    let body = Rect::new(inner.x, inner.y, inner.width, inner.height - 1);
    *scroll = (*scroll).min(lines.len().saturating_sub(body.height as usize));
    draw_lines(buf, body, lines, *scroll);
    let keys = if lines.len() > body.height as usize {
        "↑↓ scroll · Esc close"
    } else {
        "Esc close"
    };
    draw_lines(
        buf,
        Rect::new(inner.x, inner.bottom() - 1, inner.width, 1),
        &[hint(keys, theme)],
        0,
    );
}
