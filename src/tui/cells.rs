//! One history entry → its lines at a given width. Pure functions: the conversation view
//! caches their output per entry and width, so each entry is laid out once.

use crate::protocol::{AgentResult, ChangeType, ResultStatus, TurnEnd, Verdict};
use crate::text::{key_argument, one_line};
use crate::tui::format::{millis, truncate, width};
use crate::tui::markdown;
use crate::tui::state::{EntryKind, ToolEntry, UserEntry};
use crate::tui::theme::Theme;
use crate::tui::wrap::{wrap, wrap_hard};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

/// Expanded tool output is cut here; the full text stays in the session log.
const MAX_OUTPUT_LINES: usize = 200;

/// Blank lines before an entry: tool calls hug the text that made them and each other.
pub fn gap_before(prev: Option<&EntryKind>, this: &EntryKind) -> usize {
    match (prev, this) {
        (None, _) => 0,
        (Some(EntryKind::Tool(_) | EntryKind::Assistant(_)), EntryKind::Tool(_)) => 0,
        (Some(EntryKind::Tool(_)), EntryKind::Result(_)) => 0,
        (Some(EntryKind::Retrying { .. }), _) | (_, EntryKind::Retrying { .. }) => 0,
        _ => 1,
    }
}

pub fn render_entry(kind: &EntryKind, w: usize, t: &Theme) -> Vec<Line<'static>> {
    match kind {
        EntryKind::User(said) => user_lines(said, w, t),
        EntryKind::Assistant(text) => markdown::render(text, w, t),
        EntryKind::Tool(tool) => tool_lines(tool, w, t),
        EntryKind::Notice(text) => wrap(
            &[Span::styled(
                text.clone(),
                t.dim().add_modifier(Modifier::ITALIC),
            )],
            w,
            &[Span::styled("· ", t.dim())],
            &[Span::raw("  ")],
        ),
        EntryKind::Handoff { from, to, reason } => handoff_lines(from, to, reason, w, t),
        EntryKind::Error(message) => wrap(
            &[Span::styled(message.clone(), t.error())],
            w,
            &[Span::styled("✗ error: ", t.bold(Color::Red))],
            &[Span::raw("  ")],
        ),
        EntryKind::Warning(message) => wrap(
            &[Span::styled(message.clone(), t.warn())],
            w,
            &[Span::styled("! ", t.warn().add_modifier(Modifier::BOLD))],
            &[Span::raw("  ")],
        ),
        EntryKind::Retrying {
            attempt,
            max_attempts,
            reason,
        } => wrap(
            &[Span::styled(
                format!("retrying ({attempt}/{max_attempts}): {}", one_line(reason)),
                t.warn().add_modifier(Modifier::DIM),
            )],
            w,
            &[Span::styled("↻ ", t.warn())],
            &[Span::raw("  ")],
        ),
        EntryKind::Result(r) => result_card(r, w, t),
        EntryKind::Verification(v) => verdict_lines(v, w, t),
        EntryKind::TurnStopped(end) => {
            let what = match end {
                TurnEnd::Interrupted => "interrupted",
                TurnEnd::Cancelled => "cancelled",
                TurnEnd::MaxIterations => "stopped: too many steps in one turn",
                _ => "stopped",
            };
            vec![Line::from(vec![
                Span::styled("■ ", t.warn()),
                Span::styled(what, t.warn().add_modifier(Modifier::ITALIC)),
            ])]
        }
    }
}

/// The user's words (re-flowed like prose), then what is not prose, as it is: a
/// `!command`'s output verbatim, and each attached file as one line (`▸ attached
/// calc.py, 14 lines`) or, expanded, its text verbatim.
fn user_lines(said: &UserEntry, w: usize, t: &Theme) -> Vec<Line<'static>> {
    let mut lines = wrap(
        &[Span::styled(
            said.text.clone(),
            Style::default().add_modifier(Modifier::BOLD),
        )],
        w,
        &[Span::styled("› ", t.bold(Color::Cyan))],
        &[Span::raw("  ")],
    );
    let bar = [Span::styled("  │ ", t.dim())];
    if let Some(output) = &said.output {
        if output.trim().is_empty() {
            lines.push(Line::from(vec![
                bar[0].clone(),
                Span::styled("(no output)", t.dim()),
            ]));
        }
        lines.extend(verbatim(output, w, &bar, t));
    }
    for a in &said.attachments {
        let n = a.lines();
        let twisty = if said.expanded { "▾ " } else { "▸ " };
        let head = format!(
            "attached {}, {n} line{}",
            a.path,
            if n == 1 { "" } else { "s" }
        );
        lines.push(Line::from(vec![
            Span::raw("  "),
            Span::styled(twisty, t.dim()),
            Span::styled(truncate(&head, w.saturating_sub(4)), t.accent()),
        ]));
        if said.expanded {
            lines.extend(verbatim(&a.body, w, &bar, t));
        }
    }
    lines
}

/// Text as it is (spaces and indentation kept, long lines cut at the edge, not
/// re-flowed), the first [`MAX_OUTPUT_LINES`] of it.
fn verbatim(text: &str, w: usize, bar: &[Span<'static>], t: &Theme) -> Vec<Line<'static>> {
    let text = text.trim_end_matches('\n');
    if text.is_empty() {
        return Vec::new();
    }
    let total = text.lines().count();
    let shown: Vec<&str> = text.lines().take(MAX_OUTPUT_LINES).collect();
    let mut lines = wrap_hard(&shown.join("\n"), Style::default(), w, bar);
    if total > MAX_OUTPUT_LINES {
        lines.push(Line::from(Span::styled(
            format!("  … {} more lines", total - MAX_OUTPUT_LINES),
            t.dim(),
        )));
    }
    lines
}

/// Text still streaming in, with a cursor after it.
pub fn streaming_lines(text: &str, w: usize, t: &Theme) -> Vec<Line<'static>> {
    let mut lines = markdown::render(text, w, t);
    let cursor = Span::styled("▌", t.accent().add_modifier(Modifier::SLOW_BLINK));
    match lines.last_mut() {
        Some(l) if l.width() < w => l.spans.push(cursor),
        _ => lines.push(Line::from(cursor)),
    }
    lines
}

fn handoff_lines(from: &str, to: &str, reason: &str, w: usize, t: &Theme) -> Vec<Line<'static>> {
    let style = t.bold(Color::Magenta);
    let head = format!("⇄ {from} → {to} ");
    let head = truncate(&head, w);
    let fill = w.saturating_sub(width(&head));
    let mut lines = vec![Line::from(vec![
        Span::styled(head, style),
        Span::styled("─".repeat(fill), t.fg(Color::Magenta)),
    ])];
    if !reason.trim().is_empty() {
        lines.extend(wrap(
            &[Span::styled(
                reason.to_string(),
                t.fg(Color::Magenta).add_modifier(Modifier::ITALIC),
            )],
            w,
            &[Span::raw("  ")],
            &[Span::raw("  ")],
        ));
    }
    lines
}

fn tool_lines(tool: &ToolEntry, w: usize, t: &Theme) -> Vec<Line<'static>> {
    let (mark, mark_style) = match (&tool.output, tool.is_error) {
        (None, _) => ("⋯", t.warn()),
        (Some(_), false) => ("✓", t.ok()),
        (Some(_), true) => ("✗", t.error()),
    };
    let twisty = if tool.expanded { "▾ " } else { "▸ " };
    let dur = tool.duration_ms.map(millis).unwrap_or_default();
    let name = tool.name.clone();
    let fixed =
        width(twisty) + 2 + width(&name) + 1 + if dur.is_empty() { 0 } else { dur.len() + 2 };
    let arg = truncate(&key_argument(&tool.arguments), w.saturating_sub(fixed));
    let mut head = vec![
        Span::styled(twisty, t.dim()),
        Span::styled(format!("{mark} "), mark_style),
        Span::styled(name, Style::default().add_modifier(Modifier::BOLD)),
    ];
    if !arg.is_empty() {
        head.push(Span::raw(" "));
        head.push(Span::styled(arg, t.accent()));
    }
    if !dur.is_empty() {
        head.push(Span::styled(format!("  {dur}"), t.dim()));
    }
    let mut lines = vec![Line::from(head)];
    if !tool.expanded {
        return lines;
    }
    let bar = [Span::styled("  │ ", t.dim())];
    lines.push(Line::from(Span::styled(
        "  arguments",
        t.dim().add_modifier(Modifier::BOLD),
    )));
    let pretty = serde_json::from_str::<serde_json::Value>(&tool.arguments)
        .ok()
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or_else(|| tool.arguments.clone());
    lines.extend(wrap_hard(&pretty, Style::default(), w, &bar));
    match &tool.output {
        None => lines.push(Line::from(Span::styled("  running…", t.warn()))),
        Some(out) => {
            let label = if tool.is_error { "  error" } else { "  output" };
            let label_style = if tool.is_error {
                t.bold(Color::Red)
            } else {
                t.dim().add_modifier(Modifier::BOLD)
            };
            lines.push(Line::from(Span::styled(label, label_style)));
            let style = if tool.is_error {
                t.error()
            } else {
                Style::default()
            };
            let total = out.lines().count();
            let shown: String = out
                .lines()
                .take(MAX_OUTPUT_LINES)
                .collect::<Vec<_>>()
                .join("\n");
            if out.is_empty() {
                lines.push(Line::from(vec![
                    bar[0].clone(),
                    Span::styled("(no output)", t.dim()),
                ]));
            } else {
                lines.extend(wrap_hard(&shown, style, w, &bar));
            }
            if total > MAX_OUTPUT_LINES {
                lines.push(Line::from(Span::styled(
                    format!("  … {} more lines", total - MAX_OUTPUT_LINES),
                    t.dim(),
                )));
            }
        }
    }
    lines
}

/// A boxed card for a worker's `return_results`.
fn result_card(r: &AgentResult, w: usize, t: &Theme) -> Vec<Line<'static>> {
    let failed_checks = r.verification.as_ref().is_some_and(|v| !v.passed);
    let color = match r.status {
        _ if failed_checks => Color::Red,
        ResultStatus::Success => Color::Green,
        ResultStatus::Failure => Color::Red,
        ResultStatus::Partial => Color::Yellow,
    };
    let border = t.fg(color);
    let w = w.max(12);
    let inner = w - 4;
    let mut body: Vec<Line<'static>> = Vec::new();
    if let Some(v) = &r.verification {
        body.extend(verdict_lines(v, inner, t));
        body.push(Line::default());
    }
    body.extend(markdown::render(&r.summary, inner, t));
    if !r.artifacts.is_empty() {
        body.push(Line::default());
        body.push(Line::from(Span::styled(
            "artifacts",
            Style::default().add_modifier(Modifier::BOLD),
        )));
        for a in &r.artifacts {
            let (mark, style) = match a.change_type {
                ChangeType::Created => ("+", t.ok()),
                ChangeType::Modified => ("~", t.warn()),
                ChangeType::Deleted => ("-", t.error()),
                ChangeType::Referenced => ("·", t.dim()),
            };
            body.extend(wrap(
                &[
                    Span::styled(a.file_path.clone(), t.accent()),
                    Span::styled(format!(" ({})", a.change_type.as_str()), t.dim()),
                ],
                inner,
                &[Span::styled(format!("{mark} "), style)],
                &[Span::raw("  ")],
            ));
            if !a.description.trim().is_empty() {
                body.extend(wrap(
                    &[Span::styled(a.description.clone(), t.dim())],
                    inner,
                    &[Span::raw("  ")],
                    &[Span::raw("  ")],
                ));
            }
        }
    }
    if !r.known_issues.is_empty() {
        body.push(Line::default());
        body.push(Line::from(Span::styled(
            "known issues",
            t.bold(Color::Yellow),
        )));
        for issue in &r.known_issues {
            body.extend(wrap(
                &[Span::raw(issue.clone())],
                inner,
                &[Span::styled("! ", t.warn())],
                &[Span::raw("  ")],
            ));
        }
    }

    let title = if failed_checks {
        format!(" result · {} · not verified ", r.status.as_str())
    } else {
        format!(" result · {} ", r.status.as_str())
    };
    let top_fill = (w - 2).saturating_sub(width(&title) + 1);
    let mut lines = vec![Line::from(vec![
        Span::styled("╭─", border),
        Span::styled(title, t.bold(color)),
        Span::styled(format!("{}╮", "─".repeat(top_fill)), border),
    ])];
    for l in body {
        let pad = inner.saturating_sub(l.width());
        let mut spans = vec![Span::styled("│ ", border)];
        spans.extend(l.spans);
        spans.push(Span::raw(" ".repeat(pad)));
        spans.push(Span::styled(" │", border));
        lines.push(Line::from(spans));
    }
    lines.push(Line::from(Span::styled(
        format!("╰{}╯", "─".repeat(w - 2)),
        border,
    )));
    lines
}

/// A verdict's headline (`✓ verified 100` or `✗ 40 · 2 errors`) and its findings.
pub fn verdict_lines(v: &Verdict, w: usize, t: &Theme) -> Vec<Line<'static>> {
    let mut head = vec![];
    if v.unchecked {
        head.push(Span::styled(
            "unchecked: nothing to check (no change, no test command)".to_string(),
            t.dim(),
        ));
    } else if v.passed {
        head.push(Span::styled(
            format!("✓ verified {}", v.score.unwrap_or(0)),
            t.bold(Color::Green),
        ));
        if v.attempt > 1 {
            let n = v.attempt - 1;
            head.push(Span::styled(
                format!(" after {n} correction{}", if n == 1 { "" } else { "s" }),
                t.dim(),
            ));
        }
    } else {
        let n = v.failures.len();
        head.push(Span::styled(
            format!(
                "✗ {} · {n} error{}",
                v.score.unwrap_or(0),
                if n == 1 { "" } else { "s" }
            ),
            t.bold(Color::Red),
        ));
    }
    if !v.warnings.is_empty() {
        let n = v.warnings.len();
        head.push(Span::styled(
            format!(" · {n} warning{}", if n == 1 { "" } else { "s" }),
            t.warn(),
        ));
    }
    if !v.passed {
        let round = if v.attempt <= v.max_corrections {
            format!(" · correction {} of {}", v.attempt, v.max_corrections)
        } else {
            let n = v.attempt.saturating_sub(1);
            format!(" · after {n} correction{}", if n == 1 { "" } else { "s" })
        };
        head.push(Span::styled(round, t.dim()));
    }
    let mut out = wrap(&head, w, &[], &[Span::raw("  ")]);
    let findings = v
        .failures
        .iter()
        .map(|f| ("✗ ", t.error(), f))
        .chain(v.warnings.iter().map(|f| ("! ", t.warn(), f)));
    for (mark, style, f) in findings {
        out.extend(wrap(
            &[Span::raw(f.message.clone())],
            w,
            &[Span::raw("  "), Span::styled(mark, style)],
            &[Span::raw("    ")],
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_argument_picks_the_telling_field() {
        assert_eq!(
            key_argument(r#"{"path":"src/main.rs","limit":10}"#),
            "src/main.rs"
        );
        assert_eq!(
            key_argument(r#"{"command":"cargo  test\n--all"}"#),
            "cargo test --all"
        );
        assert_eq!(key_argument("not json"), "not json");
    }

    #[test]
    fn every_line_fits_the_width() {
        let tool = ToolEntry {
            call_id: "c".into(),
            name: "shell".into(),
            arguments: r#"{"command":"a very long command line that will not fit in the width"}"#
                .into(),
            output: Some("x".repeat(100)),
            is_error: false,
            duration_ms: Some(1200),
            expanded: true,
        };
        for w in [20, 33, 80] {
            for l in tool_lines(&tool, w, &Theme::default()) {
                assert!(l.width() <= w, "{w}: {l:?}");
            }
        }
    }
}
