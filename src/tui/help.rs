//! The `?` overlay: every key and command in one place (two columns when it fits).

use crate::tui::popup;
use crate::tui::theme::Theme;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

type Section = (&'static str, &'static [(&'static str, &'static str)]);

const LEFT: &[Section] = &[
    (
        "Everywhere",
        &[
            ("Tab ⇧Tab", "move focus"),
            ("Esc", "interrupt agent in view"),
            ("Esc Esc", "rewind (composer empty)"),
            ("Ctrl+C", "clear · stop · ×2 quit"),
            ("Ctrl+P", "pause / unpause the team"),
            ("Ctrl+L", "lead coordinates only"),
            ("? F1", "this help (? if empty)"),
            ("Ctrl+T", "tasks below/instead/off"),
        ],
    ),
    (
        "Agents",
        &[
            ("↑↓ j k", "move (view follows)"),
            ("Enter →", "open conversation"),
            ("← Space", "collapse / expand"),
            ("i", "details"),
            ("d", "its change (diff)"),
            ("u", "undo its merged change"),
            ("x", "cancel worker"),
            ("c", "continue interrupted"),
            ("s", "save as role (/agents)"),
            ("t", "same as Ctrl+T"),
        ],
    ),
    (
        "Tasks",
        &[
            ("↑↓ j k", "select (view follows)"),
            ("Enter →", "open its worker"),
            ("i", "worker details"),
        ],
    ),
    (
        "Approvals · questions",
        &[
            ("y", "yes"),
            ("a", "yes for this session"),
            ("n Esc", "no · decline to answer"),
            ("1-9 ↑↓", "pick an option"),
            ("Enter", "send the answer"),
        ],
    ),
];

const RIGHT: &[Section] = &[
    (
        "Conversation",
        &[
            ("↑↓ j k", "select a call or file"),
            ("Enter", "expand / collapse it"),
            ("PgUp PgDn", "scroll"),
            ("Home End", "top · follow output"),
        ],
    ),
    (
        "Composer",
        &[
            ("Enter", "send"),
            ("Alt+Enter", "new line (or ⇧Enter)"),
            ("↑", "recall, all sessions"),
            ("/ ↑↓ Enter", "pick a command"),
            ("Tab", "complete /command"),
            ("Ctrl+U", "delete to line start"),
            ("@path", "attach file, Tab picks"),
            ("!cmd", "run it, output joins"),
        ],
    ),
    (
        "Commands",
        &[
            ("/role NAME", "switch persona"),
            ("/model", "persona's model (lists)"),
            ("/approval", "ask · auto · read-only"),
            ("/agents", "full-screen tree"),
            ("/tasks", "task board"),
            ("/timeline", "who ran when"),
            ("/stats", "tokens, cost, tasks"),
            ("/pause", "hold the team · /stop"),
            ("/compact", "summarize older turns"),
            ("/mcp", "MCP servers"),
            ("/review", "read-only code review"),
            ("/budget USD", "session cost limit"),
            ("/goal TEXT", "until --check passes"),
            ("/new /clear", "new session"),
            ("/resume", "resume a session"),
            ("/help", "this help"),
            ("/quit", "quit"),
        ],
    ),
];

const KEY_W: usize = 11;
const COL_W: usize = 36;

fn column(sections: &[Section], theme: &Theme) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for (i, (name, keys)) in sections.iter().enumerate() {
        if i > 0 {
            out.push(Line::default());
        }
        out.push(Line::from(Span::styled(
            name.to_string(),
            theme.bold(Color::Cyan).add_modifier(Modifier::UNDERLINED),
        )));
        for (k, what) in *keys {
            out.push(Line::from(vec![
                Span::styled(
                    format!(" {k:<KEY_W$} "),
                    Style::default().add_modifier(Modifier::BOLD),
                ),
                Span::raw(what.to_string()),
            ]));
        }
    }
    out
}

/// The help text laid out for `width` columns: side by side if both columns fit.
pub fn lines(theme: &Theme, width: usize) -> Vec<Line<'static>> {
    let left = column(LEFT, theme);
    let right = column(RIGHT, theme);
    if width < 2 * COL_W + 2 {
        let mut all = left;
        all.push(Line::default());
        all.extend(right);
        return all;
    }
    let n = left.len().max(right.len());
    (0..n)
        .map(|i| {
            let mut spans = left.get(i).cloned().unwrap_or_default().spans;
            let used: usize = spans.iter().map(|s| s.width()).sum();
            spans.push(Span::raw(" ".repeat((COL_W + 2).saturating_sub(used))));
            if let Some(r) = right.get(i) {
                spans.extend(r.spans.iter().cloned());
            }
            Line::from(spans)
        })
        .collect()
}

pub fn render(buf: &mut Buffer, area: Rect, scroll: &mut usize, theme: &Theme) {
    // Just too narrow for margins: take the full width rather than leave slivers.
    let full = 2 * COL_W as u16 + 6;
    let w = if area.width < full + 6 {
        area.width
    } else {
        full
    };
    let lines = lines(theme, w.saturating_sub(4) as usize);
    let rect = popup::centered(area, w, lines.len() as u16 + 3);
    let title = Line::styled(" help ", theme.bold(Color::Cyan));
    popup::scrolled(buf, rect, title, &lines, scroll, theme);
}

#[cfg(test)]
mod tests {
    use super::*;
    use unicode_width::UnicodeWidthStr;

    /// Side by side, the right column has `COL_W` columns and nothing more (120 columns
    /// cut 'attach a file (Tab picks)' to 'attach a file (Tab pick'); the left one has
    /// `COL_W + 2` with at least a space before the right: every entry fits.
    #[test]
    fn every_entry_fits_its_column() {
        for (sections, room) in [(LEFT, COL_W + 1), (RIGHT, COL_W)] {
            for (_, keys) in sections {
                for (k, what) in *keys {
                    let w = 1 + KEY_W.max(k.width()) + 1 + what.width();
                    assert!(w <= room, "{k} {what}: {w} columns, more than {room}");
                }
            }
        }
    }
}
