//! The agent tree: supervisor and workers, one row each, and the one-line switcher that
//! replaces it on narrow terminals.
//!
//! Written here rather than with `tui-tree-widget` (which does build against ratatui 0.30)
//! because each row needs right-aligned figures, subtree totals when collapsed and
//! mouse hit-testing, and because the flattened rows are cached between frames so a
//! frame with a thousand agents only draws the rows it shows.

use crate::protocol::{AgentId, AgentStatus};
use crate::tui::format::truncate;
use crate::tui::state::SessionState;
use crate::tui::theme::{Theme, status_symbol};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use std::collections::HashSet;
use std::time::Instant;

mod row;

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
    /// Drawn as `/agents` (full screen): a cut list points to scrolling, not to itself.
    pub full_screen: bool,
    /// The row index of each line of the list in the last frame, for mouse clicks.
    line_rows: Vec<usize>,
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
        if x < a.x || x >= a.right() || y < a.y || y >= a.bottom() {
            return None;
        }
        self.line_rows.get((y - a.y) as usize).copied()
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
        let mut list = Rect::new(area.x, area.y + 1, area.width, area.height - 1);
        let w = list.width as usize;
        // A narrow pane has no room for a worker's task beside its role and id: the task
        // goes on a second line, so two workers of one role still read apart.
        let two = w < TWO_LINES_BELOW;
        let heights: Vec<usize> = (self.rows(s).iter()).map(|r| lines_of(s, r, two)).collect();
        let n = heights.len();
        // More than fits: the last line says how many rows are cut and where they all are.
        let cut = list.height >= 2 && heights.iter().sum::<usize>() > list.height as usize;
        if cut {
            list.height -= 1;
        }
        self.list_area = list;
        let cur = self.current(s);
        let h = list.height as usize;
        let sel = self.index_of(s, cur).unwrap_or(0);
        // Keep the selection in view, and no blank lines below the last row.
        if sel < self.offset {
            self.offset = sel;
        }
        while self.offset < sel && heights[self.offset..=sel].iter().sum::<usize>() > h {
            self.offset += 1;
        }
        while self.offset > 0 && heights[self.offset - 1..].iter().sum::<usize>() <= h {
            self.offset -= 1;
        }
        self.offset = self.offset.min(n.saturating_sub(1));
        self.line_rows.clear();
        let (mut y, mut drawn) = (list.y, 0);
        let offset = self.offset;
        for (idx, height) in heights.iter().enumerate().skip(offset) {
            let Some(row) = self.rows(s).get(idx).cloned() else {
                break;
            };
            let lines = row::row_lines(s, &row, w, theme, now, *height == 2);
            if y as usize + lines.len() > list.bottom() as usize {
                break;
            }
            for line in &lines {
                buf.set_line(list.x, y, line, list.width);
                if row.id == cur {
                    let style = if focused {
                        theme.selected()
                    } else {
                        Style::default().add_modifier(Modifier::BOLD)
                    };
                    buf.set_style(Rect::new(list.x, y, list.width, 1), style);
                }
                self.line_rows.push(idx);
                y += 1;
            }
            drawn += 1;
        }
        if cut {
            let hidden = n - drawn;
            let text = if self.full_screen {
                format!("… {hidden} more · ↑↓ scroll")
            } else {
                format!("… {hidden} more: /agents")
            };
            let line = Line::styled(truncate(&text, w), theme.dim());
            buf.set_line(list.x, list.bottom(), &line, list.width);
        }
    }
}

/// Below this many columns a worker's task goes on a line of its own under its row.
const TWO_LINES_BELOW: usize = 40;

/// Lines a row takes: two for a worker with a task in a narrow pane.
fn lines_of(s: &SessionState, row: &Row, two: bool) -> usize {
    let has_task = s.agent(row.id).is_some_and(|a| !a.label().is_empty());
    if two && row.id != s.root_agent && has_task {
        2
    } else {
        1
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
    use super::row::reason_tag;
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
