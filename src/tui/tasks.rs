//! The task panel: the board, two rows a task (mark, id and title; then status, owner,
//! its lease and dependencies), tasks a deadlock holds marked apart. Selecting a task selects its
//! worker, so the conversation follows the assignee.

use crate::protocol::{AgentId, Task, TaskList, TaskStatus};
use crate::text::task_mark;
use crate::tui::format::{truncate, width};
use crate::tui::state::SessionState;
use crate::tui::theme::Theme;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

/// Screen rows a task takes.
const ROWS: usize = 2;

#[derive(Default)]
pub struct TaskPanel {
    /// The task id picked by the user; `None` until one is.
    pub selected: Option<String>,
    /// First task shown.
    offset: usize,
    /// Screen area of the list in the last frame, for mouse clicks.
    pub list_area: Rect,
}

impl TaskPanel {
    fn index(&self, board: &TaskList) -> Option<usize> {
        let id = self.selected.as_deref()?;
        board.tasks().iter().position(|t| t.id == id)
    }

    /// Moves the selection by `delta` tasks (clamped; the first move picks the first
    /// task) and returns the worker to show, if the task has one.
    pub fn move_by(&mut self, s: &SessionState, delta: i64) -> Option<AgentId> {
        let n = s.board.len();
        if n == 0 {
            return None;
        }
        let next = match self.index(&s.board) {
            Some(i) => (i as i64 + delta).clamp(0, n as i64 - 1) as usize,
            None if delta < 0 => n - 1,
            None => 0,
        };
        self.pick(s, next)
    }

    /// Selects the task at `idx` and returns its worker, when the screen knows it.
    fn pick(&mut self, s: &SessionState, idx: usize) -> Option<AgentId> {
        let task = s.board.tasks().get(idx)?;
        self.selected = Some(task.id.clone());
        task.assignee.filter(|a| s.agents.contains_key(a))
    }

    /// The task under a screen position of the last frame: `Some(worker)` inside the list
    /// (`None` inside it means a task without a worker), `None` outside.
    pub fn click(&mut self, s: &SessionState, x: u16, y: u16) -> Option<Option<AgentId>> {
        let a = self.list_area;
        if x < a.x || x >= a.right() || y < a.y || y >= a.bottom() {
            return None;
        }
        let idx = self.offset + (y - a.y) as usize / ROWS;
        (idx < s.board.len()).then(|| self.pick(s, idx))
    }

    /// Draws the header and the visible tasks into `area` (inside the pane's border).
    pub fn render(
        &mut self,
        s: &SessionState,
        area: Rect,
        buf: &mut Buffer,
        theme: &Theme,
        focused: bool,
    ) {
        if area.height == 0 || area.width == 0 {
            return;
        }
        let w = area.width as usize;
        let mut head = vec![header(&s.board, theme, w)];
        if s.board.deadlocked() {
            let stuck = s.board.tasks().iter().filter(|t| !t.status.is_final());
            let n = stuck.count();
            let long = format!("⊗ deadlock: nothing can run, {n} stuck");
            let text = if width(&long) <= w {
                long
            } else {
                truncate(&format!("⊗ deadlock: {n} stuck"), w)
            };
            head.push(Line::styled(text, theme.bold(Color::Red)));
        }
        for (k, line) in head.iter().enumerate().take(area.height as usize) {
            buf.set_line(area.x, area.y + k as u16, line, area.width);
        }
        let top = (head.len() as u16).min(area.height);
        let list = Rect::new(area.x, area.y + top, area.width, area.height - top);
        self.list_area = list;
        if s.board.is_empty() {
            let hint = Span::styled(
                "No tasks yet. A supervisor plans them with plan_tasks.",
                theme.dim(),
            );
            let lines = crate::tui::wrap::wrap(&[hint], w, &[], &[]);
            for (k, line) in lines.iter().enumerate().take(list.height as usize) {
                buf.set_line(list.x, list.y + k as u16, line, list.width);
            }
            return;
        }
        let fits = (list.height as usize / ROWS).max(1);
        let sel = self.index(&s.board);
        if let Some(sel) = sel {
            if sel < self.offset {
                self.offset = sel;
            } else if sel >= self.offset + fits {
                self.offset = sel + 1 - fits;
            }
        }
        self.offset = self.offset.min(s.board.len().saturating_sub(fits));
        let stuck = s.board.deadlocked();
        for (k, task) in s.board.tasks().iter().enumerate().skip(self.offset) {
            let y = list.y + ((k - self.offset) * ROWS) as u16;
            if y >= list.bottom() {
                break;
            }
            let stuck = stuck && !task.status.is_final();
            let [first, second] = task_lines(s, task, stuck, theme, w);
            buf.set_line(list.x, y, &first, list.width);
            if y + 1 < list.bottom() {
                buf.set_line(list.x, y + 1, &second, list.width);
            }
            if Some(k) == sel {
                let style = if focused {
                    theme.selected()
                } else {
                    Style::default().add_modifier(Modifier::BOLD)
                };
                let h = (list.bottom() - y).min(ROWS as u16);
                buf.set_style(Rect::new(list.x, y, list.width, h), style);
            }
        }
    }
}

/// `tasks 2/5` for the status bar (done of all), `tasks 2/5 deadlock` in red when the
/// board is stuck; `None` without tasks.
pub fn summary(board: &TaskList, theme: &Theme) -> Option<(String, Style)> {
    if board.is_empty() {
        return None;
    }
    let done = board
        .tasks()
        .iter()
        .filter(|t| t.status == TaskStatus::Done)
        .count();
    let text = format!("tasks {done}/{}", board.len());
    Some(if board.deadlocked() {
        (format!("{text} deadlock"), theme.bold(Color::Red))
    } else {
        (text, Style::default())
    })
}

fn status_style(status: TaskStatus, stuck: bool, theme: &Theme) -> Style {
    if stuck {
        return theme.bold(Color::Red);
    }
    match status {
        TaskStatus::Pending => theme.dim(),
        TaskStatus::Ready => theme.fg(Color::Blue),
        TaskStatus::Running => theme.fg(Color::Cyan),
        TaskStatus::Done => theme.ok(),
        TaskStatus::Failed => theme.error(),
        TaskStatus::Blocked => theme.warn(),
        TaskStatus::Cancelled => theme.fg(Color::Magenta),
    }
}

/// "5 tasks: 1 running, 1 ready, 2 done", or "5 tasks ●1 ▷1 ✓2" when that does not fit.
fn header(board: &TaskList, theme: &Theme, w: usize) -> Line<'static> {
    let n = board.len();
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let title = Span::styled(format!("{n} task{}", if n == 1 { "" } else { "s" }), bold);
    let mut words = vec![title.clone()];
    for (i, (status, count)) in board.counts().into_iter().enumerate() {
        words.push(Span::styled(if i == 0 { ": " } else { ", " }, theme.dim()));
        words.push(Span::styled(
            format!("{count} {}", status.as_str()),
            status_style(status, false, theme),
        ));
    }
    let full = Line::from(words);
    if full.width() <= w {
        return full;
    }
    let mut spans = vec![title];
    for (status, count) in board.counts() {
        spans.push(Span::styled(
            format!(" {}{count}", task_mark(status, false)),
            status_style(status, false, theme),
        ));
    }
    Line::from(spans)
}

/// `● T2 test the parser · lease src/**` and `  running · coder 1a2b3c4d claimed ·
/// needs T1✓`: the paths it leases, who owns it (and whether it claimed it).
fn task_lines(
    s: &SessionState,
    task: &Task,
    stuck: bool,
    theme: &Theme,
    w: usize,
) -> [Line<'static>; 2] {
    let style = status_style(task.status, stuck, theme);
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let mark = format!("{} ", task_mark(task.status, stuck));
    let id = format!("{} ", task.id);
    // Its declared paths after the title, which gives way first: a lease while a worker
    // holds it, else what it will hold.
    let lease = (!task.paths.is_empty()).then(|| {
        let held = task.status == TaskStatus::Running && task.assignee.is_some();
        let word = if held { "lease" } else { "paths" };
        truncate(&format!(" · {word} {}", task.paths.join(" ")), w * 2 / 3)
    });
    let lease_w = lease.as_deref().map_or(0, width);
    let room = w.saturating_sub(width(&mark) + width(&id) + lease_w);
    let mut first = vec![
        Span::styled(mark, style),
        Span::styled(id, bold),
        Span::raw(truncate(&crate::text::one_line(&task.title), room)),
    ];
    if let Some(lease) = lease {
        first.push(Span::styled(lease, theme.fg(Color::Yellow)));
    }
    let first = Line::from(first);

    // Its own status (blocked, as a rule) says less than that it can never start.
    let word = if stuck {
        "deadlocked"
    } else {
        task.status.as_str()
    };
    let mut second = vec![Span::raw("  "), Span::styled(word, style)];
    let who = match task.assignee {
        Some(a) => Some(match s.agent(a) {
            Some(view) => format!("{} {}", view.role, a.short()),
            None => a.short(),
        }),
        // The role the plan asks for, until a worker takes it.
        None => task.role.as_ref().map(|r| format!("for {r}")),
    };
    if let Some(who) = who {
        second.push(Span::styled(" · ", theme.dim()));
        second.push(Span::raw(who));
        if task.claimed && task.assignee.is_some() {
            second.push(Span::styled(" claimed", theme.dim()));
        }
    }
    if !task.depends_on.is_empty() {
        second.push(Span::styled(" · needs ", theme.dim()));
        for (i, dep) in task.depends_on.iter().enumerate() {
            if i > 0 {
                second.push(Span::raw(" "));
            }
            let status = s.board.get(dep).map(|d| d.status);
            second.push(Span::raw(dep.clone()));
            if let Some(st) = status {
                let dep_stuck = stuck && !st.is_final();
                second.push(Span::styled(
                    task_mark(st, dep_stuck).to_string(),
                    status_style(st, dep_stuck, theme),
                ));
            }
        }
    }
    [first, fit(second, w)]
}

/// Cuts a line of spans to `w` columns, ending in `…` when something was cut.
fn fit(spans: Vec<Span<'static>>, w: usize) -> Line<'static> {
    let total: usize = spans.iter().map(|s| width(&s.content)).sum();
    if total <= w {
        return Line::from(spans);
    }
    // Whole spans while a column is left for the `…`; the next one is cut to end in it.
    let mut out = Vec::new();
    let mut used = 0;
    for span in spans {
        let sw = width(&span.content);
        if used + sw < w {
            used += sw;
            out.push(span);
            continue;
        }
        // With the `…` added it is too long for sure, so `truncate` cuts it and ends it so.
        let cut = truncate(&format!("{}…", span.content), w - used);
        out.push(Span::styled(cut, span.style));
        break;
    }
    Line::from(out)
}
