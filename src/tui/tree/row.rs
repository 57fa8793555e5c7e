//! One row of the agent tree: status, role, the short id approvals name, marks, the
//! task's first words and the figures, fitted to the pane's width.

use super::Row;
use crate::protocol::{AgentStatus, Budget, MergeState};
use crate::tui::format::{cost, elapsed, tokens, truncate, width};
use crate::tui::state::{AgentView, Figures, SessionState};
use crate::tui::theme::{Theme, status_symbol};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use std::time::Instant;

/// One row: `├─ ● coder 1a2b3c4e fix the parser    1.2k $0.004 12s`, fitted to `w`
/// columns; with `two`, the task and the figures on a second line under the first.
pub fn row_lines(
    s: &SessionState,
    row: &Row,
    w: usize,
    theme: &Theme,
    now: Instant,
    two: bool,
) -> Vec<Line<'static>> {
    let Some(a) = s.agents.get(&row.id) else {
        return vec![Line::default()];
    };
    let figures = if row.collapsed_children > 0 {
        s.subtree_figures(row.id)
    } else {
        a.figures.clone()
    };
    let active = row.id == s.root_agent;
    let mut left = vec![Span::styled(row.guide.clone(), theme.dim())];
    if row.collapsed_children > 0 {
        left.push(Span::styled("▸ ", theme.dim()));
    }
    // A released worker is only there to be read: the whole row is dimmed.
    let (symbol_style, role_style) = if a.released {
        (theme.dim(), theme.dim())
    } else {
        (
            theme.status(a.status),
            Style::default().add_modifier(Modifier::BOLD),
        )
    };
    left.push(Span::styled(
        format!("{} ", status_symbol(a.status)),
        symbol_style,
    ));
    let role_at = left.len();
    left.push(Span::styled(a.role.clone(), role_style));
    if active {
        left.push(Span::styled(" ★", theme.warn()));
    } else {
        // The id approvals and notices name a worker by (`implementer 3941221a`).
        left.push(Span::styled(format!(" {}", row.id.short()), theme.dim()));
    }
    // Where a placed worker's tools run (an `[environments.NAME]`); here goes unmarked.
    if let Some(env) = &a.options.environment {
        left.push(Span::styled(format!(" @{env}"), theme.warn()));
    }
    if let Some((attempt, max)) = a.correcting {
        left.push(Span::styled(format!(" ↻{attempt}/{max}"), theme.warn()));
    } else if let Some(v) = a.result.as_ref().and_then(|r| r.verification.as_ref()) {
        let style = match (v.unchecked, v.passed) {
            (true, _) => theme.dim(),
            (false, true) => theme.ok(),
            (false, false) => theme.error(),
        };
        left.push(Span::styled(format!(" {}", v.mark()), style));
    }
    if a.stalled.is_some() {
        left.push(Span::styled(" ! stalled", theme.warn()));
    } else if a.status == AgentStatus::Failed
        && let Some(tag) = a.status_reason.as_deref().and_then(reason_tag)
    {
        left.push(Span::styled(format!(" {tag}"), theme.error()));
    }
    // A worker in its own worktree: its change's size and where it stands.
    if let Some(d) = a.diff {
        left.push(Span::styled(format!(" {}", d.label()), theme.dim()));
    }
    if let Some(m) = a.merge {
        let style = match m {
            MergeState::Merged => theme.ok(),
            MergeState::Conflict | MergeState::FailedChecks => theme.error(),
            MergeState::Pending => theme.warn(),
            MergeState::Undone => theme.dim(),
        };
        left.push(Span::styled(format!(" {}", m.as_str()), style));
    }
    if a.released {
        left.push(Span::styled(" released", theme.dim()));
    }
    // The usual sandbox (workspace-write) goes unmarked; anything else is worth a glance.
    match a.sandbox.as_deref() {
        Some("off" | "unavailable") => left.push(Span::styled(" unsandboxed", theme.warn())),
        Some(l) if l.starts_with("read-only") => left.push(Span::styled(" ro", theme.dim())),
        _ => {}
    }
    if a.sandbox.as_deref().is_some_and(|l| l.ends_with("+net")) {
        left.push(Span::styled(" net", theme.dim()));
    }
    if row.collapsed_children > 0 {
        left.push(Span::styled(
            format!(" +{}", row.collapsed_children),
            theme.dim(),
        ));
    }
    // Too narrow for the role and its id: the role gives way, never the id.
    let left_w: usize = left.iter().map(|s| width(&s.content)).sum();
    if left_w > w {
        let role_w = width(&left[role_at].content);
        let room = role_w.saturating_sub(left_w - w).max(2);
        left[role_at].content = truncate(&a.role, room).into();
    }
    let mut parts = figures_of(a, row, &figures, now);
    if let Some(model) = model_tag(s, a) {
        // A figure like the others: shown where the row has room after the role, the id
        // and the task's first words; it outlasts the cost and the tokens, and the clock
        // gives way to it (the conversation's live line keeps the clock).
        parts.push((3, model));
    }
    // Its name when its supervisor gave one, else its task's first words.
    let task = a.label();
    if !two {
        return vec![fit(left, &task, parts, w, theme)];
    }
    // Under the row, where its children's guides go: the task and the figures.
    let cont = row.guide.replace("├─ ", "│  ").replace("└─ ", "   ");
    let under = vec![Span::styled(format!("{cont} "), theme.dim())];
    vec![Line::from(left), fit(under, &task, parts, w, theme)]
}

/// `left`, then as much of `task` as fits, then the figures that fit, right-aligned.
/// The task's first words tell two workers of one role apart: they keep some room,
/// which the figures give up first.
fn fit(
    mut left: Vec<Span<'static>>,
    task: &str,
    mut parts: Vec<(u8, String)>,
    w: usize,
    theme: &Theme,
) -> Line<'static> {
    let left_w: usize = left.iter().map(|s| width(&s.content)).sum();
    let label_room = if task.is_empty() {
        0
    } else {
        width(task).min(LABEL_MIN) + 1
    };

    let join = |parts: &[(u8, String)]| {
        parts
            .iter()
            .map(|(_, s)| s.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut right = join(&parts);
    while !right.is_empty() && left_w + label_room + 1 + width(&right) > w {
        let Some(i) = (0..parts.len()).min_by_key(|&i| parts[i].0) else {
            break;
        };
        // Spend against a budget outlasts the task too, as long as it fits at all.
        if parts[i].0 >= BUDGET_KEPT && left_w + 1 + width(&right) <= w {
            break;
        }
        parts.remove(i);
        right = join(&parts);
    }
    let right_w = if right.is_empty() {
        0
    } else {
        width(&right) + 1
    };
    let task_room = w.saturating_sub(left_w + right_w + 1);
    if task_room >= 3 && !task.is_empty() {
        left.push(Span::raw(" "));
        left.push(Span::styled(truncate(task, task_room), theme.dim()));
    }
    let used: usize = left.iter().map(|s| width(&s.content)).sum();
    if !right.is_empty() {
        let pad = w.saturating_sub(used + width(&right));
        left.push(Span::raw(" ".repeat(pad)));
        left.push(Span::styled(right, theme.dim()));
    }
    Line::from(left)
}

/// Right-hand figures (tokens, cost, elapsed) with how telling each is: the least
/// telling are dropped first when space runs out: cost, then tokens, keeping the clock
/// that says an agent is alive — except on a collapsed row, whose point is the subtree's
/// totals. Spend against a budget (`12.3k/50k`) is kept longest: it says how close the
/// agent is to its stop.
fn figures_of(a: &AgentView, row: &Row, figures: &Figures, now: Instant) -> Vec<(u8, String)> {
    let collapsed = row.collapsed_children > 0;
    let budget = if collapsed {
        Budget::default()
    } else {
        a.budget
    };
    let mut parts: Vec<(u8, String)> = Vec::new();
    if figures.tokens() > 0
        || figures.cost_usd > 0.0
        || budget.tokens.is_some()
        || budget.cost_usd.is_some()
    {
        parts.push(match budget.tokens {
            Some(limit) => (
                5,
                format!(
                    "{}/{}",
                    round_k(tokens(figures.tokens())),
                    round_k(tokens(limit))
                ),
            ),
            None => (if collapsed { 3 } else { 2 }, tokens(figures.tokens())),
        });
        parts.push(match budget.cost_usd {
            Some(limit) => (4, format!("{}/{}", cost(figures.cost_usd), cost(limit))),
            None => (1, cost(figures.cost_usd)),
        });
    }
    if let Some(p) = a.context_percent().filter(|_| !collapsed) {
        parts.push((2, format!("{p}%")));
    }
    if let Some(limit) = budget.wall_s {
        let limit = elapsed(std::time::Duration::from_secs(limit));
        parts.push((4, format!("{}/{limit}", elapsed(a.wall_time(now)))));
    } else if let Some(b) = a.busy_for(now).map(elapsed) {
        parts.push((if collapsed { 2 } else { 3 }, b));
    }
    parts
}

/// A worker's model, when it runs on another than its supervisor (a role's level or its
/// spawn's `model`), shortened: a provider's prefix (`openai/`) and a release date
/// (`-2025-04-14`, `-20250929`) dropped, at most [`MODEL_MAX`] columns.
fn model_tag(s: &SessionState, a: &AgentView) -> Option<String> {
    let parent = s.agents.get(&a.parent?)?;
    if a.model.is_empty() || a.model == parent.model {
        return None;
    }
    let mut short = a.model.rsplit('/').next().unwrap_or(&a.model);
    for date_len in [11, 9] {
        // `-YYYY-MM-DD` or `-YYYYMMDD` at the end.
        let cut = short.len().saturating_sub(date_len);
        let tail = short.get(cut..).unwrap_or("");
        let digits = tail.chars().filter(char::is_ascii_digit).count();
        if cut > 0 && tail.starts_with('-') && digits == 8 {
            short = &short[..cut];
            break;
        }
    }
    Some(truncate(short, MODEL_MAX))
}

/// Columns a worker's model may take in its row.
const MODEL_MAX: usize = 16;

/// Columns of a worker's task kept before its figures are shown.
const LABEL_MIN: usize = 12;
/// Figures this telling (spend against a budget) give way to nothing but lack of room.
const BUDGET_KEPT: u8 = 4;

/// The one-word kind a failure reason starts with (`loop: called …` → `loop`), if any.
pub(super) fn reason_tag(reason: &str) -> Option<&str> {
    let (tag, _) = reason.split_once(':')?;
    (!tag.is_empty() && tag.len() <= 12 && tag.chars().all(|c| c.is_ascii_lowercase()))
        .then_some(tag)
}

/// `50.0k` → `50k`: a budget is usually a round number.
fn round_k(figure: String) -> String {
    figure.replace(".0k", "k").replace(".0M", "M")
}
