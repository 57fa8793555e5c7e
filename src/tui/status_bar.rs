//! The bottom line: model, approval mode, session figures, the goal, working directory, and the
//! keys of the focused pane (or a short-lived notice).

use crate::protocol::ApprovalPolicy;
use crate::tui::format::{cost, tokens, truncate, truncate_left, width};
use crate::tui::state::SessionState;
use crate::tui::theme::Theme;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use std::path::Path;

/// Columns of the goal's sentence the bar shows at most.
const GOAL_WIDTH: usize = 24;

/// `/home/me/src/x` → `~/src/x`.
pub fn display_path(path: &Path, home: Option<&Path>) -> String {
    if let Some(home) = home.filter(|h| h.components().count() > 1)
        && let Ok(rest) = path.strip_prefix(home)
    {
        return if rest.as_os_str().is_empty() {
            "~".into()
        } else {
            format!("~/{}", rest.display())
        };
    }
    path.display().to_string()
}

/// Fits everything in `w` columns: the path keeps at least a short tail, key hints are
/// dropped from the end of `hints` (least important last), the rest goes to the path.
pub fn line(
    s: &SessionState,
    home: Option<&Path>,
    hints: &[&str],
    notice: Option<&str>,
    w: usize,
    theme: &Theme,
) -> Line<'static> {
    let t = s.totals();
    let sep = || Span::styled(" │ ", theme.dim());
    let approval_style = match s.approval {
        ApprovalPolicy::Auto => theme.warn(),
        _ => Style::default(),
    };
    let mut left = vec![
        Span::styled(
            format!(" {}", s.model),
            Style::default().add_modifier(Modifier::BOLD),
        ),
        sep(),
        Span::styled(s.approval.as_str().to_string(), approval_style),
        sep(),
        Span::raw(format!("{} tok {}", tokens(t.tokens()), cost(t.cost_usd))),
    ];
    let summaries = [
        crate::tui::mcp::summary(s, theme),
        crate::tui::tasks::summary(&s.board, theme),
    ];
    for (text, style) in summaries.into_iter().flatten() {
        left.push(sep());
        left.push(Span::styled(text, style));
    }
    if let Some((goal, last)) = s.goal_summary() {
        left.push(sep());
        let style = match last.starts_with('✗') {
            true => theme.warn(),
            false => theme.accent(),
        };
        let text = format!("◎ {} · {last}", truncate(&goal, GOAL_WIDTH));
        left.push(Span::styled(text, style));
    }
    if let Some((key, p)) = &s.batch {
        left.push(sep());
        let text = format!("▤ {} {}", truncate(key, GOAL_WIDTH), p.line());
        left.push(Span::styled(text, theme.accent()));
    }
    if s.coordinate_only {
        left.insert(1, sep());
        left.insert(2, Span::styled("LEAD", theme.bold(Color::LightCyan)));
    }
    if let Some((spent, limit)) = s.budget_hold {
        let text = format!(" ‖ BUDGET {}/{}", cost(spent), cost(limit));
        left.insert(0, Span::styled(text, theme.bold(Color::LightRed)));
    } else if s.paused {
        left.insert(0, Span::styled(" ‖ PAUSED", theme.bold(Color::LightYellow)));
    }
    let left_w: usize = left.iter().map(|s| width(&s.content)).sum();
    let path = display_path(&s.workspace, home);
    // The path keeps a readable tail if it can, but not at the cost of every key hint.
    let fit_hints = |budget: usize| {
        let mut text = String::new();
        for h in hints {
            let next = if text.is_empty() {
                h.to_string()
            } else {
                format!("{text} · {h}")
            };
            if width(&next) > budget {
                break;
            }
            text = next;
        }
        text
    };
    let budget_for = |path_min: usize| w.saturating_sub(left_w + 3 + path_min + 2);
    let (right, right_style) = match notice {
        Some(n) => (truncate(n, budget_for(8)), theme.bold(Color::Yellow)),
        None => {
            let text = [32, 16, 8, 0]
                .iter()
                .map(|&m| fit_hints(budget_for(width(&path).min(m))))
                .find(|t| !t.is_empty())
                .unwrap_or_default();
            (text, theme.dim())
        }
    };
    let room = w.saturating_sub(left_w + 3 + width(&right) + 2);
    if room >= 6 {
        left.push(sep());
        left.push(Span::styled(truncate_left(&path, room), theme.accent()));
    }
    let used: usize = left.iter().map(|s| width(&s.content)).sum();
    let pad = w.saturating_sub(used + width(&right) + 1);
    left.push(Span::raw(" ".repeat(pad)));
    left.push(Span::styled(right, right_style));
    Line::from(left)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_becomes_tilde() {
        let home = Path::new("/home/me");
        assert_eq!(
            display_path(Path::new("/home/me/src/x"), Some(home)),
            "~/src/x"
        );
        assert_eq!(display_path(Path::new("/home/me"), Some(home)), "~");
        assert_eq!(display_path(Path::new("/tmp/x"), Some(home)), "/tmp/x");
        assert_eq!(
            display_path(Path::new("/tmp/x"), Some(Path::new("/"))),
            "/tmp/x"
        );
    }
}
