//! One line per worker at work under the agent on screen, saying what it is doing now
//! (its running tool, writing, thinking, waiting for an approval…), so a supervisor's
//! pane tells more than "waiting for workers".

use crate::protocol::{AgentId, AgentStatus};
use crate::text::{key_argument, one_line};
use crate::tui::format::{elapsed, truncate, width};
use crate::tui::state::{AgentView, EntryKind, SessionState};
use crate::tui::theme::{Theme, status_symbol};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use std::time::Instant;

/// More workers than this at once: the rest are counted, and `/agents` lists them.
const MAX_LINES: usize = 8;

/// The lines for the busy workers under `id`, in tree order, fitted to `w` columns.
pub fn worker_lines(
    s: &SessionState,
    id: AgentId,
    w: usize,
    t: &Theme,
    now: Instant,
) -> Vec<Line<'static>> {
    let busy: Vec<&AgentView> = descendants(s, id)
        .into_iter()
        .filter_map(|c| s.agent(c))
        .filter(|a| !a.status.is_idle())
        .collect();
    let mut lines: Vec<Line<'static>> = busy
        .iter()
        .take(MAX_LINES)
        .map(|a| line(s, a, w, t, now))
        .collect();
    if busy.len() > MAX_LINES {
        lines.push(Line::styled(
            format!("  … {} more at work · /agents", busy.len() - MAX_LINES),
            t.dim(),
        ));
    }
    lines
}

/// `  ● implementer 3941221a  edit_file src/calc.py · 12s`
fn line(s: &SessionState, a: &AgentView, w: usize, t: &Theme, now: Instant) -> Line<'static> {
    let mut spans = vec![
        Span::raw("  "),
        Span::styled(format!("{} ", status_symbol(a.status)), t.status(a.status)),
        Span::styled(
            a.role.clone(),
            Style::default().add_modifier(Modifier::BOLD),
        ),
        Span::styled(format!(" {} ", a.id.short()), t.dim()),
    ];
    if let Some(name) = &a.options.name {
        spans.push(Span::raw(format!("{name} · ")));
    }
    let took = a.busy_for(now).map(elapsed).unwrap_or_default();
    let tail = if took.is_empty() {
        String::new()
    } else {
        format!(" {took}")
    };
    let used: usize = spans.iter().map(|s| width(&s.content)).sum::<usize>() + width(&tail);
    let what = truncate(&doing(s, a), w.saturating_sub(used).max(4));
    let style = if a.stalled.is_some() {
        t.warn()
    } else {
        Style::default()
    };
    spans.push(Span::styled(what, style));
    spans.push(Span::styled(tail, t.dim()));
    Line::from(spans)
}

/// What `a` is doing now, in a few words.
pub fn doing(s: &SessionState, a: &AgentView) -> String {
    if let Some(stall) = &a.stalled {
        return format!("stalled on the {}", stall.on);
    }
    if let Some(p) = s.approvals.iter().find(|p| p.agent_id == a.id) {
        return format!("waiting for your approval: {}", p.tool);
    }
    if s.questions.iter().any(|q| q.agent_id == a.id) {
        return "waiting for your answer".into();
    }
    match a.status {
        AgentStatus::Paused => return "paused".into(),
        AgentStatus::Waiting => {
            let working = a
                .children
                .iter()
                .filter_map(|c| s.agent(*c))
                .filter(|c| !c.status.is_idle())
                .count();
            return match working {
                0 => "waiting".into(),
                1 => "waiting for its worker".into(),
                n => format!("waiting for its {n} workers"),
            };
        }
        _ => {}
    }
    if let Some((attempt, max)) = a.correcting {
        return format!("correcting its result ({attempt}/{max})");
    }
    let running = a
        .conversation
        .entries
        .iter()
        .rev()
        .find_map(|e| match &e.kind {
            EntryKind::Tool(tool) if tool.output.is_none() => Some(tool),
            _ => None,
        });
    if let Some(tool) = running {
        let arg = key_argument(&tool.arguments);
        return one_line(&format!("{} {arg}", tool.name)).trim().to_string();
    }
    if !a.conversation.streaming.is_empty() {
        let last = a
            .conversation
            .streaming
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty());
        return format!("writing: {}", one_line(last.unwrap_or_default()));
    }
    "thinking".into()
}

/// Every agent under `id`, depth first in spawn order.
fn descendants(s: &SessionState, id: AgentId) -> Vec<AgentId> {
    let mut out = Vec::new();
    let mut stack: Vec<AgentId> = s
        .agent(id)
        .map(|a| a.children.iter().rev().copied().collect())
        .unwrap_or_default();
    while let Some(c) = stack.pop() {
        out.push(c);
        if let Some(a) = s.agent(c) {
            stack.extend(a.children.iter().rev().copied());
        }
    }
    out
}
