//! `/mcp`: the session's MCP servers, their state and tools, as the runtime last told.

use crate::protocol::McpServerState;
use crate::tui::popup;
use crate::tui::state::SessionState;
use crate::tui::theme::Theme;
use crate::tui::wrap::wrap_hard;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};

fn lines(s: &SessionState, w: usize, t: &Theme) -> Vec<Line<'static>> {
    if s.mcp.is_empty() {
        return vec![
            Line::raw("No MCP servers configured."),
            Line::styled(
                "Add an [mcp_servers.NAME] table (command = … or url = …) to .squad/config.toml.",
                t.dim(),
            ),
        ];
    }
    let mut out = Vec::new();
    for (name, view) in &s.mcp {
        let style = match view.state {
            McpServerState::Ready => t.fg(Color::Green),
            McpServerState::Failed => t.fg(Color::Red),
            McpServerState::Starting => t.fg(Color::Yellow),
            McpServerState::Disabled | McpServerState::Stopped => t.dim(),
        };
        let tools = match view.tools.len() {
            0 => String::new(),
            1 => "  1 tool".to_string(),
            n => format!("  {n} tools"),
        };
        out.push(Line::from(vec![
            Span::styled(name.clone(), t.bold(Color::Cyan)),
            Span::raw("  "),
            Span::styled(view.state.as_str().to_string(), style),
            Span::styled(tools, t.dim()),
        ]));
        out.extend(wrap_hard(&view.transport, t.dim(), w, &[Span::raw("  ")]));
        if let Some(error) = &view.error {
            out.extend(wrap_hard(error, t.fg(Color::Red), w, &[Span::raw("  ")]));
        }
        for tool in &view.tools {
            out.extend(wrap_hard(tool, Style::default(), w, &[Span::raw("    ")]));
        }
        out.push(Line::raw(""));
    }
    out.pop();
    out
}

pub fn render(buf: &mut Buffer, area: Rect, s: &SessionState, scroll: &mut usize, t: &Theme) {
    let w = area.width.saturating_sub(4).clamp(20, 90);
    let lines = lines(s, w.saturating_sub(4) as usize, t);
    let rect = popup::centered(area, w, lines.len() as u16 + 3);
    let title = Line::styled(" MCP servers ", t.bold(Color::Cyan));
    popup::scrolled(buf, rect, title, &lines, scroll, t);
}

/// `mcp 2/3` for the status bar (ready of enabled servers), with its style: quiet while
/// all is well or still starting, a warning once one failed. `None` without servers.
pub fn summary(s: &SessionState, t: &Theme) -> Option<(String, Style)> {
    let enabled: Vec<_> = s
        .mcp
        .values()
        .filter(|v| v.state != McpServerState::Disabled)
        .collect();
    if enabled.is_empty() {
        return None;
    }
    let count = |state| enabled.iter().filter(|v| v.state == state).count();
    let ready = count(McpServerState::Ready);
    let text = format!("mcp {ready}/{}", enabled.len());
    Some(if count(McpServerState::Failed) > 0 {
        (format!("{text} failed"), t.warn())
    } else if count(McpServerState::Starting) > 0 {
        (format!("{text} starting"), t.dim())
    } else {
        (text, Style::default())
    })
}
