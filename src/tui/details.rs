//! Read-only overlays about agents: the details panel (`i`), the stats table (`/stats`)
//! and the confirmation before cancelling a worker (`x`).

use crate::protocol::{AgentId, TaskMetrics};
use crate::text::one_line;
use crate::text::task_lines;
use crate::tui::cells::verdict_lines;
use crate::tui::format::{cost, elapsed, millis, tokens, truncate};
use crate::tui::popup;
use crate::tui::state::{AgentView, SessionState};
use crate::tui::theme::{Theme, status_symbol};
use crate::tui::wrap::wrap;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use std::time::Instant;

fn plural(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

fn field(name: &str, value: Vec<Span<'static>>, theme: &Theme) -> Line<'static> {
    let mut spans = vec![Span::styled(format!("{name:<10}"), theme.dim())];
    spans.extend(value);
    Line::from(spans)
}

/// A field whose value may run long (a failure's reason, what a stall is on), wrapped
/// under itself.
fn wrapped_field(
    name: &str,
    value: Vec<Span<'static>>,
    w: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let first = [Span::styled(format!("{name:<10}"), theme.dim())];
    wrap(&value, w, &first, &[Span::raw(" ".repeat(10))])
}

fn text_block(title: &str, text: &str, w: usize, theme: &Theme) -> Vec<Line<'static>> {
    let mut out = vec![Line::styled(title.to_string(), theme.dim())];
    for para in text.lines() {
        out.extend(wrap(
            &[Span::raw(para.to_string())],
            w,
            &[Span::raw("  ")],
            &[Span::raw("  ")],
        ));
    }
    out
}

/// What the sandbox label means for the user.
fn sandbox_text(label: &str) -> String {
    match label {
        "off" => "off: commands run with all of your rights".to_string(),
        "unavailable" => "unavailable here: every command asks".to_string(),
        l if l.starts_with("read-only") => format!("{l}: commands write only to $TMPDIR"),
        l => format!("{l}: commands write only in its root and $TMPDIR"),
    }
}

pub fn agent_lines(
    s: &SessionState,
    a: &AgentView,
    w: usize,
    theme: &Theme,
    now: Instant,
) -> Vec<Line<'static>> {
    let f = &a.figures;
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let mut status = vec![Span::styled(
        format!("{} {}", status_symbol(a.status), a.status),
        theme.status(a.status),
    )];
    if let Some(r) = &a.status_reason {
        status.push(Span::styled(format!(" ({})", one_line(r)), theme.dim()));
    }
    if a.despawned {
        status.push(Span::styled(" · despawned", theme.dim()));
    }
    let parent = match a.parent.and_then(|p| s.agent(p)) {
        Some(p) => format!("{} {}", p.role, p.id.short()),
        None if a.id == s.root_agent => "— (active persona)".into(),
        None => "—".into(),
    };
    let mut tool_calls = plural(f.tool_calls, "tool call");
    if f.tool_errors > 0 {
        tool_calls.push_str(&format!(" ({} failed)", f.tool_errors));
    }
    // The status's first line sits among the fields; the rest of a long reason, and a
    // stall, go under it once the fields are placed.
    let mut status = wrapped_field("status", status, w, theme);
    let mut under_status = status.split_off(1.min(status.len()));
    let mut out = vec![
        field("role", vec![Span::styled(a.role.clone(), bold)], theme),
        field("id", vec![Span::raw(a.id.to_string())], theme),
    ];
    if let Some(name) = &a.options.name {
        out.push(field("name", vec![Span::raw(name.clone())], theme));
    }
    out.extend([
        field("model", vec![Span::raw(a.model.clone())], theme),
        status.pop().unwrap_or_default(),
        field("parent", vec![Span::raw(parent)], theme),
        field(
            "tokens",
            vec![Span::raw(format!(
                "{} (prompt {} · completion {})",
                tokens(f.tokens()),
                tokens(f.prompt_tokens),
                tokens(f.completion_tokens)
            ))],
            theme,
        ),
        field("cost", vec![Span::raw(cost(f.cost_usd))], theme),
        field(
            "calls",
            vec![Span::raw(format!(
                "{} · {tool_calls}",
                plural(f.model_calls, "model call")
            ))],
            theme,
        ),
        field(
            "errors",
            vec![Span::styled(
                f.errors.to_string(),
                if f.errors > 0 {
                    theme.error()
                } else {
                    Style::default()
                },
            )],
            theme,
        ),
        field(
            "wall time",
            vec![Span::raw(elapsed(a.wall_time(now)))],
            theme,
        ),
    ]);
    if let Some(sandbox) = &a.sandbox {
        let style = match sandbox.as_str() {
            "off" | "unavailable" => theme.warn(),
            _ => Style::default(),
        };
        out.push(field(
            "sandbox",
            vec![Span::styled(sandbox_text(sandbox), style)],
            theme,
        ));
    }
    if a.parent.is_some() {
        let life = if a.released {
            "released: takes no more messages (its history stays here)"
        } else if a.options.keep {
            "kept for follow-ups (never released)"
        } else {
            "temporary: released after its result is delivered"
        };
        out.push(field("lifetime", vec![Span::raw(life)], theme));
    }
    if let Some(tools) = &a.options.tools {
        out.extend(wrapped_field(
            "tools",
            vec![Span::raw(format!(
                "{} (named by its supervisor)",
                tools.join(", ")
            ))],
            w,
            theme,
        ));
    }
    if let (Some((t, w)), Some(p)) = (a.context, a.context_percent()) {
        out.insert(
            6,
            field(
                "context",
                vec![Span::raw(format!(
                    "{} of {} tokens ({p}%)",
                    tokens(t),
                    tokens(w)
                ))],
                theme,
            ),
        );
    }
    if let Some(stall) = &a.stalled {
        let since = elapsed(now.saturating_duration_since(stall.since));
        let cancel = if a.id == s.root_agent {
            "Esc interrupts it"
        } else {
            "x cancels it"
        };
        under_status.extend(wrapped_field(
            "stalled",
            vec![
                Span::styled(
                    format!("! {since} without progress on the {}", stall.on),
                    theme.warn(),
                ),
                Span::styled(format!(" · {cancel}"), theme.dim()),
            ],
            w,
            theme,
        ));
    }
    out.splice(4..4, under_status);
    if a.worktree.is_some() || a.merge.is_some() {
        let mut change = Vec::new();
        if let Some(d) = a.diff {
            change.push(Span::raw(format!(
                "{} in {} ",
                d.label(),
                plural(d.files, "file")
            )));
        }
        if let Some(m) = a.merge {
            change.push(Span::styled(m.as_str().to_string(), theme.dim()));
        }
        if let Some(path) = &a.worktree {
            change.push(Span::styled(
                format!(" · {} · d diff", path.display()),
                theme.dim(),
            ));
        }
        out.extend(wrapped_field("worktree", change, w, theme));
    }
    let tasks = s.tasks.of(a.id);
    if tasks.started > 0 {
        out.push(field(
            "tasks",
            vec![Span::raw(format!(
                "{} started · {} completed · {} failed",
                tasks.started, tasks.completed, tasks.failed,
            ))],
            theme,
        ));
        let score = tasks
            .avg_score()
            .map_or_else(String::new, |s| format!(" · avg score {s:.0}"));
        out.push(field(
            "checks",
            vec![Span::raw(format!(
                "{} · first-pass {} · success {}{score}",
                plural(tasks.corrections, "correction"),
                TaskMetrics::percent(tasks.first_pass_rate()),
                TaskMetrics::percent(tasks.success_rate()),
            ))],
            theme,
        ));
        if let Some(ms) = tasks.avg_task_ms() {
            out.push(field("avg task", vec![Span::raw(millis(ms))], theme));
        }
    }
    if let Some(ms) = tasks.avg_lifespan_ms() {
        out.push(field("lifespan", vec![Span::raw(millis(ms))], theme));
    }
    if !a.task.trim().is_empty() {
        out.push(Line::default());
        out.extend(text_block("task", &a.task, w, theme));
    }
    if let Some(extra) = &a.options.instructions {
        out.push(Line::default());
        out.extend(text_block(
            "instructions (added to its role's prompt)",
            extra,
            w,
            theme,
        ));
    }
    if !a.verdicts.is_empty() {
        out.push(Line::default());
        out.push(Line::styled("attempts", theme.dim()));
        for v in &a.verdicts {
            let mut lines = verdict_lines(v, w.saturating_sub(14), theme).into_iter();
            if let Some(first) = lines.next() {
                let mut spans = vec![Span::styled(
                    format!("  attempt {:<3} ", v.attempt),
                    theme.dim(),
                )];
                spans.extend(first.spans);
                out.push(Line::from(spans));
            }
            for l in lines {
                let mut spans = vec![Span::raw(" ".repeat(14))];
                spans.extend(l.spans);
                out.push(Line::from(spans));
            }
        }
    }
    if let Some(r) = &a.result {
        out.push(Line::default());
        out.extend(text_block(
            &format!("result · {}", r.status.as_str()),
            &r.summary,
            w,
            theme,
        ));
        for art in &r.artifacts {
            out.push(Line::raw(format!(
                "  {} ({})",
                art.file_path,
                art.change_type.as_str()
            )));
        }
        for issue in &r.known_issues {
            out.push(Line::styled(format!("  ! {issue}"), theme.warn()));
        }
    }
    out
}

pub fn render_agent(
    buf: &mut Buffer,
    area: Rect,
    s: &SessionState,
    id: AgentId,
    scroll: &mut usize,
    theme: &Theme,
    now: Instant,
) {
    let Some(a) = s.agent(id) else { return };
    let w = area.width.saturating_sub(4).min(90);
    let lines = agent_lines(s, a, w.saturating_sub(4) as usize, theme, now);
    let rect = popup::centered(area, w, lines.len() as u16 + 3);
    let title = Line::styled(format!(" {} ", a.who()), theme.bold(Color::Cyan));
    popup::scrolled(buf, rect, title, &lines, scroll, theme);
}

/// One row per agent (tree order) and the session's totals, tokens and cost beside the
/// tasks each worker finished, failed and had corrected.
pub fn stats_lines(
    s: &SessionState,
    order: &[AgentId],
    w: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let role_w = w.saturating_sub(56).clamp(8, 24);
    let row = |role: &str, id: &str, f: &crate::tui::state::Figures, t: &TaskMetrics| {
        let (done, fixes) = if t.started > 0 {
            (
                format!("{}/{}", t.completed, t.failed),
                t.corrections.to_string(),
            )
        } else {
            (String::new(), String::new())
        };
        format!(
            "{:<role_w$} {:<8} {:>7} {:>8} {:>6} {:>6} {:>7} {:>5}",
            truncate(role, role_w),
            id,
            tokens(f.tokens()),
            cost(f.cost_usd),
            f.model_calls,
            f.tool_calls,
            done,
            fixes
        )
    };
    let mut out = vec![Line::styled(
        format!(
            "  {:<role_w$} {:<8} {:>7} {:>8} {:>6} {:>6} {:>7} {:>5}",
            "agent", "id", "tokens", "cost", "calls", "tools", "ok/fail", "fixes"
        ),
        theme.dim(),
    )];
    for id in order {
        let Some(a) = s.agent(*id) else { continue };
        out.push(Line::from(vec![
            Span::styled(
                format!("{} ", status_symbol(a.status)),
                theme.status(a.status),
            ),
            Span::raw(row(&a.role, &a.id.short(), &a.figures, &s.tasks.of(a.id))),
        ]));
    }
    let t = s.totals();
    let tasks = s.tasks.total();
    out.push(Line::default());
    out.push(Line::styled(
        format!("  {}", row("total", "", &t, &tasks)),
        bold,
    ));
    out.push(Line::styled(
        format!(
            "  prompt {} · completion {} · {}",
            tokens(t.prompt_tokens),
            tokens(t.completion_tokens),
            plural(t.errors, "error")
        ),
        theme.dim(),
    ));
    for line in task_lines(&tasks) {
        out.extend(wrap(
            &[Span::styled(line, theme.dim())],
            w,
            &[Span::raw("  ")],
            &[Span::raw("    ")],
        ));
    }
    out.extend(crate::tui::spend::spend_lines(s, w, theme));
    if let Some((_, totals)) = &s.summary {
        out.push(Line::styled(
            format!(
                "  run summary: {} agents · {} · wall {}",
                totals.agents,
                cost(totals.cost_usd),
                millis(totals.wall_ms)
            ),
            theme.dim(),
        ));
    }
    out
}

pub fn render_stats(
    buf: &mut Buffer,
    area: Rect,
    s: &SessionState,
    order: &[AgentId],
    scroll: &mut usize,
    theme: &Theme,
) {
    let w = area.width.saturating_sub(4).min(96);
    let lines = stats_lines(s, order, w.saturating_sub(4) as usize, theme);
    let rect = popup::centered(area, w, lines.len() as u16 + 3);
    let title = Line::styled(" stats ", theme.bold(Color::Cyan));
    popup::scrolled(buf, rect, title, &lines, scroll, theme);
}

/// "Cancel coder 1a2b3c4d and its 2 workers?"
pub fn render_confirm(buf: &mut Buffer, area: Rect, s: &SessionState, id: AgentId, theme: &Theme) {
    let Some(a) = s.agent(id) else { return };
    let n = s.descendants(id);
    let what = match n {
        0 => String::new(),
        1 => " and its worker".into(),
        n => format!(" and its {n} workers"),
    };
    let w = area.width.saturating_sub(4).min(60);
    let lines = vec![
        Line::from(vec![
            Span::raw("Cancel "),
            Span::styled(
                format!("{} {}", a.role, a.id.short()),
                Style::default().add_modifier(Modifier::BOLD),
            ),
            Span::raw(format!("{what}?")),
        ]),
        Line::default(),
        Line::from(vec![
            Span::styled("y", theme.bold(Color::Cyan)),
            Span::raw(" cancel it   "),
            Span::styled("n", theme.bold(Color::Cyan)),
            Span::raw(" / "),
            Span::styled("Esc", theme.bold(Color::Cyan)),
            Span::raw(" keep it"),
        ]),
    ];
    let rect = popup::centered(area, w, lines.len() as u16 + 2);
    let inner = popup::frame(
        buf,
        rect,
        Line::styled(" cancel worker ", theme.bold(Color::Red)),
        theme.error(),
    );
    popup::draw_lines(buf, inner, &lines, 0);
}

/// Quitting while workers are at work: they would be interrupted (and can be continued).
pub fn render_confirm_quit(buf: &mut Buffer, area: Rect, s: &SessionState, theme: &Theme) {
    let n = s.busy_workers();
    let workers = if n == 1 {
        "1 worker is".to_string()
    } else {
        format!("{n} workers are")
    };
    let w = area.width.saturating_sub(4).min(64);
    let lines = vec![
        Line::from(format!("{workers} still at work. Quit anyway?")),
        Line::styled(
            "They stop; `squad --resume`, then /continue, goes on.",
            theme.dim(),
        ),
        Line::default(),
        Line::from(vec![
            Span::styled("y", theme.bold(Color::Cyan)),
            Span::raw(" quit   "),
            Span::styled("n", theme.bold(Color::Cyan)),
            Span::raw(" / "),
            Span::styled("Esc", theme.bold(Color::Cyan)),
            Span::raw(" stay"),
        ]),
    ];
    let rect = popup::centered(area, w, lines.len() as u16 + 2);
    let inner = popup::frame(
        buf,
        rect,
        Line::styled(" quit ", theme.bold(Color::Yellow)),
        theme.dim(),
    );
    popup::draw_lines(buf, inner, &lines, 0);
}
