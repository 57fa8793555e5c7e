//! The approval dialog: what an agent wants to do (a command, a diff, a spawn), drawn
//! over everything until the user answers with y / a / n.

use crate::protocol::ApprovalAction;
use crate::tui::popup;
use crate::tui::state::PendingApproval;
use crate::tui::theme::Theme;
use crate::tui::wrap::{wrap, wrap_hard};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

/// Lines of a unified diff, coloured by their first characters.
pub fn diff_lines(diff: &str, w: usize, t: &Theme) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for line in diff.lines() {
        let style = if line.starts_with("+++") || line.starts_with("---") {
            Style::default().add_modifier(Modifier::BOLD)
        } else if line.starts_with('+') {
            t.fg(Color::Green)
        } else if line.starts_with('-') {
            t.fg(Color::Red)
        } else if line.starts_with("@@") {
            t.fg(Color::Cyan)
        } else {
            Style::default()
        };
        out.extend(wrap_hard(line, style, w, &[]));
    }
    out
}

fn body(p: &PendingApproval, w: usize, t: &Theme) -> (String, Vec<Line<'static>>) {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    match &p.action {
        ApprovalAction::Command { command } | ApprovalAction::SandboxedCommand { command, .. } => (
            "wants to run a command".into(),
            wrap_hard(
                command,
                t.bold(Color::Yellow),
                w,
                &[Span::styled("$ ", t.dim())],
            ),
        ),
        ApprovalAction::Escalation { command, reason } => {
            let mut lines = wrap_hard(
                command,
                t.bold(Color::Yellow),
                w,
                &[Span::styled("$ ", t.dim())],
            );
            lines.extend(wrap_hard(
                reason,
                Style::default(),
                w,
                &[Span::styled("why: ", t.dim())],
            ));
            ("wants to run a command OUTSIDE the sandbox".into(), lines)
        }
        ApprovalAction::FileChange { path, diff } => {
            let mut lines = Vec::new();
            if diff.trim().is_empty() {
                lines.push(Line::styled("(no textual change)", t.dim()));
            } else {
                lines.extend(diff_lines(diff, w, t));
            }
            (format!("wants to change {path}"), lines)
        }
        ApprovalAction::Patch { paths, diff } => {
            let lines = diff_lines(diff, w, t);
            // The diff names each file; the title only counts them, so the tool still shows.
            let what = match paths.as_slice() {
                [one] => one.clone(),
                many => format!("{} files", many.len()),
            };
            (format!("wants to patch {what}"), lines)
        }
        ApprovalAction::Spawn {
            role,
            task,
            tools,
            model,
            budget,
            instructions,
            keep,
            name,
            environment,
            quote,
        } => {
            let field = |name: &str, value: String, style: Style| {
                wrap(
                    &[Span::styled(value, style)],
                    w,
                    &[Span::styled(format!("{name:<7}"), t.dim())],
                    &[Span::raw("       ")],
                )
            };
            let mut lines = field("role", role.clone(), t.bold(Color::Cyan));
            if let Some(name) = name {
                lines.extend(field("name", name.clone(), Style::default()));
            }
            lines.extend(field("model", model.clone(), Style::default()));
            if let Some(env) = environment {
                lines.extend(field("where", env.clone(), t.bold(Color::Magenta)));
            }
            let tools = if tools.is_empty() {
                "(role defaults)".to_string()
            } else {
                tools.join(", ")
            };
            lines.extend(field("tools", tools, Style::default()));
            if !budget.is_unlimited() {
                lines.extend(field("budget", budget.describe(), t.warn()));
            }
            if let Some(q) = quote {
                // A fan-out: what it is projected to spend, before it starts.
                let mut rows = q.lines().into_iter();
                if let Some(first) = rows.next() {
                    lines.extend(field("quote", first.replacen("quote: ", "", 1), t.warn()));
                }
                for row in rows {
                    lines.extend(field("", row.trim_start().to_string(), t.dim()));
                }
            }
            if *keep {
                lines.extend(field(
                    "keep",
                    "yes: kept for follow-ups, never released".into(),
                    Style::default(),
                ));
            }
            if let Some(extra) = instructions {
                lines.push(Line::styled(
                    "instructions (added to its role's prompt)",
                    t.dim(),
                ));
                for para in extra.lines() {
                    lines.extend(wrap(
                        &[Span::raw(para.to_string())],
                        w,
                        &[Span::raw("  ")],
                        &[Span::raw("  ")],
                    ));
                }
            }
            lines.push(Line::styled("task", t.dim()));
            lines.extend(wrap(
                &[Span::styled(task.clone(), bold)],
                w,
                &[Span::raw("  ")],
                &[Span::raw("  ")],
            ));
            ("wants to spawn a worker".into(), lines)
        }
        ApprovalAction::McpTool {
            server,
            tool,
            arguments,
        } => {
            let mut lines = vec![Line::from(vec![
                Span::styled("server ", t.dim()),
                Span::styled(server.clone(), t.bold(Color::Cyan)),
            ])];
            lines.push(Line::from(vec![
                Span::styled("tool   ", t.dim()),
                Span::styled(tool.clone(), bold),
            ]));
            lines.push(Line::styled("arguments", t.dim()));
            for line in arguments.lines() {
                lines.extend(wrap_hard(line, Style::default(), w, &[Span::raw("  ")]));
            }
            ("wants to use an MCP tool".into(), lines)
        }
        ApprovalAction::Hook {
            command,
            source,
            files,
        } => {
            let mut lines = wrap_hard(
                command,
                t.bold(Color::Yellow),
                w,
                &[Span::styled("$ ", t.dim())],
            );
            lines.extend(wrap_hard(
                &format!(
                    "from {source}: new or changed since you approved it; it runs with your \
                     rights, outside the sandbox"
                ),
                t.warn(),
                w,
                &[],
            ));
            for (path, content) in files {
                lines.push(Line::styled(path.clone(), bold));
                for line in content.lines() {
                    lines.extend(wrap_hard(line, Style::default(), w, &[Span::raw("  ")]));
                }
            }
            ("wants to run a changed workspace hook".into(), lines)
        }
    }
}

/// Draws the dialog for `p` over `area`. `waiting` counts the approvals queued behind
/// it; `scroll` (clamped here) scrolls a long diff.
pub fn render(
    buf: &mut Buffer,
    area: Rect,
    p: &PendingApproval,
    waiting: usize,
    scroll: &mut usize,
    t: &Theme,
) {
    let w = area.width.saturating_sub(4).clamp(20, 100);
    let inner_w = w.saturating_sub(4) as usize;
    let (verb, lines) = body(p, inner_w, t);
    // Title, blank, body, blank, keys, borders.
    let want = lines.len() as u16 + 6;
    let rect = popup::centered(area, w, want.min(area.height.saturating_sub(2).max(8)));
    let title = Line::from(vec![
        Span::styled(" approval · ", t.bold(Color::Yellow)),
        Span::styled(
            match &p.name {
                Some(name) => format!("{} {} {name} ", p.role, p.agent_id.short()),
                None => format!("{} {} ", p.role, p.agent_id.short()),
            },
            t.bold(Color::Yellow),
        ),
    ]);
    let inner = popup::frame(buf, rect, title, t.bold(Color::Yellow));
    if inner.height < 3 {
        return;
    }
    let head = Line::from(vec![
        Span::styled(
            p.role.clone(),
            Style::default().add_modifier(Modifier::BOLD),
        ),
        Span::raw(format!(" {verb} ")),
        Span::styled(format!("({})", p.tool), t.dim()),
    ]);
    popup::draw_lines(buf, Rect::new(inner.x, inner.y, inner.width, 1), &[head], 0);

    let body_h = inner.height.saturating_sub(4) as usize;
    let max_scroll = lines.len().saturating_sub(body_h);
    *scroll = (*scroll).min(max_scroll);
    let body_area = Rect::new(inner.x, inner.y + 2, inner.width, body_h as u16);
    popup::draw_lines(buf, body_area, &lines, *scroll);

    let key = |k: &'static str| Span::styled(k, t.bold(Color::Cyan).add_modifier(Modifier::BOLD));
    let mut keys = vec![
        key("y"),
        Span::raw(" yes   "),
        key("a"),
        Span::raw(" yes, for this session   "),
        key("n"),
        Span::raw(" no   "),
        key("Esc"),
        Span::raw(" no"),
    ];
    if max_scroll > 0 {
        keys.push(Span::styled("   ↑↓ scroll", t.dim()));
    }
    if waiting > 0 {
        keys.push(Span::styled(format!("   +{waiting} waiting"), t.warn()));
    }
    let keys_y = inner.bottom() - 1;
    popup::draw_lines(
        buf,
        Rect::new(inner.x, keys_y, inner.width, 1),
        &[Line::from(keys)],
        0,
    );
}
