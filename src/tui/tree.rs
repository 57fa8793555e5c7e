//! The agent tree: supervisor and workers, one row each, and the one-line switcher that
//! replaces it on narrow terminals.
//!
//! Written here rather than with `tui-tree-widget` (which does build against ratatui 0.30)
//! because each row needs right-aligned figures, subtree totals when collapsed and
//! mouse hit-testing, and because the flattened rows are cached between frames so a
//! frame with a thousand agents only draws the rows it shows.

use crate::protocol::{AgentId, AgentStatus, Budget, MergeState};
use crate::text::one_line;
use crate::tui::format::{cost, elapsed, tokens, truncate, width};
use crate::tui::state::SessionState;
use crate::tui::theme::{Theme, status_symbol};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use std::collections::HashSet;
use std::time::Instant;

#[derive(Clone, Debug)]
pub struct Row {
    pub id: AgentId,
    /// Guide lines drawn before the row (`├─ `, `│  └─ `…).
    pub guide: String,
    pub collapsed_children: usize,
}

#[derive(Default)]
pub struct TreeView {
    /// The agent whose conversation is shown; `None` means the root persona.
    pub selected: Option<AgentId>,
    pub collapsed: HashSet<AgentId>,
    offset: usize,
    rows: Vec<Row>,
    /// (tree revision, collapse revision) the cached rows were built for.
    rows_key: Option<(u64, u64)>,
    collapse_rev: u64,
    /// Screen area of the list in the last frame, for mouse clicks.
    pub list_area: Rect,
}

impl TreeView {
    /// Rows in display order, rebuilt only when the tree or the collapsed set changed.
    pub fn rows(&mut self, s: &SessionState) -> &[Row] {
        let key = (s.tree_rev, self.collapse_rev);
        if self.rows_key != Some(key) {
            self.rows = flatten(s, &self.collapsed);
            self.rows_key = Some(key);
        }
        &self.rows
    }

    pub fn current(&self, s: &SessionState) -> AgentId {
        self.selected
            .filter(|id| s.agents.contains_key(id))
            .unwrap_or(s.root_agent)
    }

    fn index_of(&mut self, s: &SessionState, id: AgentId) -> Option<usize> {
        self.rows(s).iter().position(|r| r.id == id)
    }

    /// Moves the selection by `delta` rows (clamped).
    pub fn move_by(&mut self, s: &SessionState, delta: i64) {
        let cur = self.current(s);
        let idx = self.index_of(s, cur).unwrap_or(0) as i64;
        let rows = self.rows(s);
        if rows.is_empty() {
            return;
        }
        let next = (idx + delta).clamp(0, rows.len() as i64 - 1) as usize;
        self.selected = Some(rows[next].id);
    }

    pub fn select_row(&mut self, s: &SessionState, row: usize) -> bool {
        match self.rows(s).get(row).map(|r| r.id) {
            Some(id) => {
                self.selected = Some(id);
                true
            }
            None => false,
        }
    }

    /// Row index under a screen position of the last frame.
    pub fn row_at(&self, x: u16, y: u16) -> Option<usize> {
        let a = self.list_area;
        (x >= a.x && x < a.right() && y >= a.y && y < a.bottom())
            .then(|| self.offset + (y - a.y) as usize)
    }

    pub fn set_collapsed(&mut self, id: AgentId, collapsed: bool) -> bool {
        let changed = if collapsed {
            self.collapsed.insert(id)
        } else {
            self.collapsed.remove(&id)
        };
        if changed {
            self.collapse_rev += 1;
        }
        changed
    }

    /// Draws the header line and the visible rows into `area` (inside the pane's border).
    pub fn render(
        &mut self,
        s: &SessionState,
        area: Rect,
        buf: &mut Buffer,
        theme: &Theme,
        focused: bool,
        now: Instant,
    ) {
        if area.height == 0 || area.width == 0 {
            return;
        }
        let head = header(s, theme, area.width as usize);
        buf.set_line(area.x, area.y, &head, area.width);
        let list = Rect::new(area.x, area.y + 1, area.width, area.height - 1);
        self.list_area = list;
        let cur = self.current(s);
        let h = list.height as usize;
        let sel = self.index_of(s, cur).unwrap_or(0);
        // Keep the selection in view.
        if sel < self.offset {
            self.offset = sel;
        } else if h > 0 && sel >= self.offset + h {
            self.offset = sel + 1 - h;
        }
        let n = self.rows(s).len();
        self.offset = self.offset.min(n.saturating_sub(h.max(1)));
        let offset = self.offset;
        let rows: Vec<Row> = self.rows(s).iter().skip(offset).take(h).cloned().collect();
        for (k, row) in rows.iter().enumerate() {
            let y = list.y + k as u16;
            let line = row_line(s, row, list.width as usize, theme, now);
            buf.set_line(list.x, y, &line, list.width);
            if row.id == cur {
                let style = if focused {
                    theme.selected()
                } else {
                    Style::default().add_modifier(Modifier::BOLD)
                };
                buf.set_style(Rect::new(list.x, y, list.width, 1), style);
            }
        }
    }
}

fn flatten(s: &SessionState, collapsed: &HashSet<AgentId>) -> Vec<Row> {
    let mut rows = Vec::with_capacity(s.agents.len());
    // (id, guide of its children, guide of itself)
    let mut stack: Vec<(AgentId, String, String)> = s
        .roots
        .iter()
        .rev()
        .map(|id| (*id, String::new(), String::new()))
        .collect();
    while let Some((id, child_prefix, guide)) = stack.pop() {
        let Some(a) = s.agents.get(&id) else { continue };
        let is_collapsed = collapsed.contains(&id) && !a.children.is_empty();
        rows.push(Row {
            id,
            guide,
            collapsed_children: if is_collapsed { s.descendants(id) } else { 0 },
        });
        if is_collapsed {
            continue;
        }
        let n = a.children.len();
        for (i, c) in a.children.iter().enumerate().rev() {
            let last = i + 1 == n;
            let guide = format!("{child_prefix}{}", if last { "└─ " } else { "├─ " });
            let next = format!("{child_prefix}{}", if last { "   " } else { "│  " });
            stack.push((*c, next, guide));
        }
    }
    rows
}

/// "3 agents: 1 running, 2 done", or "3 agents ●1 ✓2" when that does not fit in `w`.
pub fn header(s: &SessionState, theme: &Theme, w: usize) -> Line<'static> {
    let full = header_words(s, theme);
    if full.width() <= w {
        return full;
    }
    let n = s.agents.len();
    let mut spans = vec![Span::styled(
        format!("{n} agent{}", if n == 1 { "" } else { "s" }),
        Style::default().add_modifier(Modifier::BOLD),
    )];
    for (st, count) in s.status_counts() {
        if count > 0 {
            spans.push(Span::styled(
                format!(" {}{count}", status_symbol(st)),
                theme.status(st),
            ));
        }
    }
    Line::from(spans)
}

fn header_words(s: &SessionState, theme: &Theme) -> Line<'static> {
    let n = s.agents.len();
    let mut parts = Vec::new();
    for (st, count) in s.status_counts() {
        if count == 0 {
            continue;
        }
        let word = match st {
            AgentStatus::Running => "running",
            AgentStatus::Waiting => "waiting",
            AgentStatus::Inactive => "idle",
            AgentStatus::Completed => "done",
            AgentStatus::Failed => "failed",
            AgentStatus::Cancelled => "cancelled",
            AgentStatus::Paused => "paused",
            AgentStatus::Interrupted => "interrupted",
        };
        parts.push(Span::styled(format!("{count} {word}"), theme.status(st)));
        parts.push(Span::styled(", ", theme.dim()));
    }
    parts.pop();
    let mut spans = vec![Span::styled(
        format!("{n} agent{}", if n == 1 { "" } else { "s" }),
        Style::default().add_modifier(Modifier::BOLD),
    )];
    if !parts.is_empty() {
        spans.push(Span::styled(": ", theme.dim()));
        spans.extend(parts);
    }
    Line::from(spans)
}

/// One row: `├─ ● coder fix the parser    1.2k $0.004 12s`, fitted to `w` columns.
fn row_line(s: &SessionState, row: &Row, w: usize, theme: &Theme, now: Instant) -> Line<'static> {
    let Some(a) = s.agents.get(&row.id) else {
        return Line::default();
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
    left.push(Span::styled(a.role.clone(), role_style));
    if active {
        left.push(Span::styled(" ★", theme.warn()));
    }
    if let Some((attempt, max)) = a.correcting {
        left.push(Span::styled(format!(" ↻{attempt}/{max}"), theme.warn()));
    } else if let Some(v) = a.result.as_ref().and_then(|r| r.verification.as_ref()) {
        let (mark, style) = if v.passed {
            ("✓", theme.ok())
        } else {
            ("✗", theme.error())
        };
        left.push(Span::styled(format!(" {mark}{}", v.score), style));
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
    let left_w: usize = left.iter().map(|s| width(&s.content)).sum();

    // Right-hand figures (tokens, cost, elapsed), the least telling dropped first when
    // space runs out: cost, then tokens, keeping the clock that says an agent is alive —
    // except on a collapsed row, whose point is the subtree's totals. Spend against a
    // budget (`12.3k/50k`) is kept longest: it says how close the agent is to its stop.
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
    let join = |parts: &[(u8, String)]| {
        parts
            .iter()
            .map(|(_, s)| s.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut right = join(&parts);
    while !right.is_empty() && left_w + 1 + width(&right) > w {
        if let Some(i) = (0..parts.len()).min_by_key(|&i| parts[i].0) {
            parts.remove(i);
        }
        right = join(&parts);
    }
    let right_w = if right.is_empty() {
        0
    } else {
        width(&right) + 1
    };

    let task_room = w.saturating_sub(left_w + right_w + 1);
    let task = one_line(&a.task);
    if task_room >= 8 && !task.is_empty() {
        left.push(Span::raw(" "));
        left.push(Span::styled(truncate(&task, task_room), theme.dim()));
    }
    let used: usize = left.iter().map(|s| width(&s.content)).sum();
    if !right.is_empty() {
        let pad = w.saturating_sub(used + width(&right));
        left.push(Span::raw(" ".repeat(pad)));
        left.push(Span::styled(right, theme.dim()));
    }
    Line::from(left)
}

/// The one-word kind a failure reason starts with (`loop: called …` → `loop`), if any.
fn reason_tag(reason: &str) -> Option<&str> {
    let (tag, _) = reason.split_once(':')?;
    (!tag.is_empty() && tag.len() <= 12 && tag.chars().all(|c| c.is_ascii_lowercase()))
        .then_some(tag)
}

/// `50.0k` → `50k`: a budget is usually a round number.
fn round_k(figure: String) -> String {
    figure.replace(".0k", "k").replace(".0M", "M")
}

/// The narrow-screen replacement for the tree: `‹ ● coder 1a2b3c4d  2/5 ›  5 agents: …`.
pub fn switcher_line(
    tree: &mut TreeView,
    s: &SessionState,
    theme: &Theme,
    w: usize,
) -> Line<'static> {
    let cur = tree.current(s);
    let rows = tree.rows(s);
    let idx = rows.iter().position(|r| r.id == cur).unwrap_or(0);
    let n = rows.len();
    let mut spans = vec![Span::styled("‹ ", theme.accent())];
    if let Some(a) = s.agents.get(&cur) {
        spans.push(Span::styled(
            format!("{} ", status_symbol(a.status)),
            theme.status(a.status),
        ));
        spans.push(Span::styled(
            a.role.clone(),
            Style::default().add_modifier(Modifier::BOLD),
        ));
        if cur == s.root_agent {
            spans.push(Span::styled(" ★", theme.warn()));
        } else {
            spans.push(Span::styled(format!(" {}", cur.short()), theme.dim()));
        }
        if a.stalled.is_some() {
            spans.push(Span::styled(" !", theme.warn()));
        }
        if a.released {
            spans.push(Span::styled(" released", theme.dim()));
        }
    }
    spans.push(Span::styled(
        format!(" {}/{}", idx + 1, n.max(1)),
        theme.dim(),
    ));
    spans.push(Span::styled(" › ", theme.accent()));
    let used: usize = spans.iter().map(|s| s.width()).sum();
    spans.extend(header(s, theme, w.saturating_sub(used)).spans);
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ApprovalPolicy, Event, EventKind};
    use crate::tui::handle::SessionInfo;

    fn state() -> (SessionState, Vec<AgentId>) {
        let ids: Vec<AgentId> = (0..4).map(|_| AgentId::new()).collect();
        let mut s = SessionState::new(&SessionInfo {
            log_path: None,
            replayed_seq: 0,
            prompts: Vec::new(),
            session_id: "s".into(),
            workspace: "/w".into(),
            model: "m".into(),
            approval: ApprovalPolicy::Ask,
            role: "copilot".into(),
            root_agent: ids[0],
        });
        let parents = [None, Some(ids[0]), Some(ids[1]), Some(ids[0])];
        for (i, p) in parents.iter().enumerate() {
            s.apply(
                &Event {
                    seq: i as u64,
                    ts: 0,
                    agent_id: ids[i],
                    kind: EventKind::AgentSpawned {
                        parent_id: *p,
                        role: format!("r{i}"),
                        model: "m".into(),
                        task: "task".into(),
                        depth: 0,
                    },
                },
                Instant::now(),
            );
        }
        (s, ids)
    }

    #[test]
    fn flattens_with_guides_and_collapses() {
        let (s, ids) = state();
        let mut t = TreeView::default();
        let guides: Vec<String> = t.rows(&s).iter().map(|r| r.guide.clone()).collect();
        assert_eq!(guides, ["", "├─ ", "│  └─ ", "└─ "]);
        t.set_collapsed(ids[1], true);
        let rows = t.rows(&s);
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[1].collapsed_children, 1);
        t.move_by(&s, 2);
        assert_eq!(t.current(&s), ids[3]);
        t.move_by(&s, 5);
        assert_eq!(t.current(&s), ids[3]);
    }

    #[test]
    fn a_failure_reason_gives_its_kind_when_it_names_one() {
        assert_eq!(reason_tag("loop: called edit_file 5 times"), Some("loop"));
        assert_eq!(reason_tag("budget: 50k tokens spent"), Some("budget"));
        assert_eq!(reason_tag("the model server answered 500: oops"), None);
        assert_eq!(reason_tag("no colon here"), None);
        assert_eq!(reason_tag(": empty"), None);
    }
}
