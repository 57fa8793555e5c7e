//! The conversation pane of one agent: scrolling, selection of tool lines, and drawing.
//!
//! Why it stays fast with long histories: the scroll position is an (entry, line) pair,
//! not an absolute line number, so a frame lays out only the entries it shows (walking
//! back from the end while it follows the tail); each entry's wrapped lines are cached per
//! width and redone only when the entry changes (its `rev`) or the width does.

use crate::tui::cells::{gap_before, render_entry, streaming_lines};
use crate::tui::state::{Conversation, EntryKind};
use crate::tui::theme::Theme;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
struct Pos {
    entry: usize,
    /// Line within the entry's block (its gap lines first, then its text).
    line: usize,
}

#[derive(Default)]
struct LayoutCache {
    width: usize,
    entries: Vec<Option<(u32, Vec<Line<'static>>)>>,
    stream: Option<(u64, Vec<Line<'static>>)>,
}

/// Scroll and selection state of one agent's conversation, plus its layout cache.
pub struct ConvView {
    /// Whether the view sticks to the newest output.
    pub follow: bool,
    top: Pos,
    pending_scroll: i64,
    /// Selected entry (a tool line), for Enter to expand.
    pub selected: Option<usize>,
    reveal_selected: bool,
    cache: LayoutCache,
    /// Height of the last frame, for page-sized scrolling.
    pub last_height: usize,
    /// Entry shown on each row of the last frame, for mouse clicks.
    rows: Vec<Option<usize>>,
    visible: Option<(usize, usize)>,
}

impl Default for ConvView {
    fn default() -> Self {
        Self {
            follow: true,
            top: Pos::default(),
            pending_scroll: 0,
            selected: None,
            reveal_selected: false,
            cache: LayoutCache::default(),
            last_height: 20,
            rows: Vec::new(),
            visible: None,
        }
    }
}

/// What one frame lays out: the entries plus a "tail" block (streaming text and the
/// working indicator) that changes every frame and is never cached as an entry.
struct Blocks<'a> {
    conv: &'a Conversation,
    tail: &'a [Line<'static>],
    cache: &'a mut LayoutCache,
    w: usize,
    theme: &'a Theme,
}

impl Blocks<'_> {
    fn total(&self) -> usize {
        self.conv.entries.len() + usize::from(!self.tail.is_empty())
    }

    fn gap(&self, i: usize) -> usize {
        let entries = &self.conv.entries;
        if i >= entries.len() {
            return usize::from(!entries.is_empty());
        }
        let prev = i.checked_sub(1).map(|p| &entries[p].kind);
        gap_before(prev, &entries[i].kind)
    }

    fn ensure(&mut self, i: usize) {
        let entries = &self.conv.entries;
        if self.cache.entries.len() != entries.len() {
            self.cache.entries.resize_with(entries.len(), || None);
        }
        let e = &entries[i];
        let fresh = matches!(&self.cache.entries[i], Some((rev, _)) if *rev == e.rev);
        if !fresh {
            self.cache.entries[i] = Some((e.rev, render_entry(&e.kind, self.w, self.theme)));
        }
    }

    fn lines(&mut self, i: usize) -> &[Line<'static>] {
        if i >= self.conv.entries.len() {
            return self.tail;
        }
        self.ensure(i);
        self.cache.entries[i]
            .as_ref()
            .map(|(_, l)| l.as_slice())
            .unwrap_or(&[])
    }

    fn height(&mut self, i: usize) -> usize {
        self.gap(i) + self.lines(i).len()
    }

    /// The top position that shows the last `h` lines.
    fn bottom_top(&mut self, h: usize) -> Pos {
        let mut remaining = h;
        for i in (0..self.total()).rev() {
            let bh = self.height(i);
            if bh >= remaining {
                return Pos {
                    entry: i,
                    line: bh - remaining,
                };
            }
            remaining -= bh;
        }
        Pos::default()
    }

    fn scroll_up(&mut self, mut top: Pos, mut k: usize) -> Pos {
        while k > 0 {
            if top.line >= k {
                top.line -= k;
                break;
            }
            k -= top.line;
            if top.entry == 0 {
                top.line = 0;
                break;
            }
            top.entry -= 1;
            top.line = self.height(top.entry);
        }
        top
    }

    fn scroll_down(&mut self, mut top: Pos, mut k: usize) -> Pos {
        while k > 0 {
            let bh = self.height(top.entry);
            if top.line + k < bh {
                top.line += k;
                break;
            }
            k -= bh - top.line;
            if top.entry + 1 >= self.total() {
                top.line = bh.saturating_sub(1);
                break;
            }
            top.entry += 1;
            top.line = 0;
        }
        top
    }

    /// Lines from `top` to the end, counting no further than `limit`.
    fn lines_below(&mut self, top: Pos, limit: usize) -> usize {
        let mut n = self.height(top.entry).saturating_sub(top.line);
        let mut i = top.entry + 1;
        while n <= limit && i < self.total() {
            n += self.height(i);
            i += 1;
        }
        n
    }
}

impl ConvView {
    /// Scrolls by `lines` (negative: up). Scrolling up leaves follow mode; reaching the
    /// bottom again re-enters it (resolved at the next frame, when widths are known).
    pub fn scroll(&mut self, lines: i64) {
        self.pending_scroll += lines;
    }

    pub fn page(&mut self, up: bool) {
        let n = self.last_height.saturating_sub(2).max(1) as i64;
        self.scroll(if up { -n } else { n });
    }

    pub fn home(&mut self) {
        self.follow = false;
        self.pending_scroll = 0;
        self.top = Pos::default();
    }

    pub fn end(&mut self) {
        self.follow = true;
        self.pending_scroll = 0;
    }

    fn tool_indices(conv: &Conversation) -> impl DoubleEndedIterator<Item = usize> + '_ {
        conv.entries
            .iter()
            .enumerate()
            .filter(|(_, e)| match &e.kind {
                EntryKind::Tool(_) => true,
                EntryKind::User(u) => u.expandable(),
                _ => false,
            })
            .map(|(i, _)| i)
    }

    /// Moves the selection to the previous tool line; false if there is none to select.
    pub fn select_prev(&mut self, conv: &Conversation) -> bool {
        let from = match self.selected {
            Some(s) => s,
            None => self
                .visible
                .map_or(usize::MAX, |(_, last)| last.saturating_add(1)),
        };
        let found = Self::tool_indices(conv).rev().find(|&i| i < from);
        let found = found.or_else(|| {
            // Nothing above: keep the current one, or take the first below.
            self.selected.or_else(|| Self::tool_indices(conv).next())
        });
        self.select(found)
    }

    /// Moves the selection to the next tool line; false if there is none to select.
    pub fn select_next(&mut self, conv: &Conversation) -> bool {
        let found = match self.selected {
            Some(s) => Self::tool_indices(conv).find(|&i| i > s).or(Some(s)),
            None => {
                let from = self.visible.map_or(0, |(first, _)| first);
                Self::tool_indices(conv)
                    .find(|&i| i >= from)
                    .or_else(|| Self::tool_indices(conv).next_back())
            }
        };
        self.select(found)
    }

    fn select(&mut self, idx: Option<usize>) -> bool {
        match idx {
            Some(i) => {
                self.selected = Some(i);
                self.reveal_selected = true;
                true
            }
            None => false,
        }
    }

    /// The entry drawn at `row` (relative to the pane's inner area) in the last frame.
    pub fn entry_at_row(&self, row: usize) -> Option<usize> {
        self.rows.get(row).copied().flatten()
    }

    /// Lays out and draws the visible part of `conv` into `area`.
    pub fn render(
        &mut self,
        conv: &Conversation,
        indicator: Vec<Line<'static>>,
        area: Rect,
        buf: &mut Buffer,
        theme: &Theme,
        focused: bool,
    ) {
        let h = area.height as usize;
        // One column of padding on each side.
        let w = (area.width as usize).saturating_sub(2);
        if h == 0 || w == 0 {
            return;
        }
        if self.cache.width != w {
            self.cache = LayoutCache {
                width: w,
                ..LayoutCache::default()
            };
        }
        self.last_height = h;

        let mut tail: Vec<Line<'static>> = Vec::new();
        if !conv.streaming.is_empty() {
            let fresh = matches!(&self.cache.stream, Some((rev, _)) if *rev == conv.stream_rev);
            if !fresh {
                let lines = streaming_lines(&conv.streaming, w, theme);
                self.cache.stream = Some((conv.stream_rev, lines));
            }
            if let Some((_, lines)) = &self.cache.stream {
                tail.extend(lines.iter().cloned());
            }
        }
        if !indicator.is_empty() {
            if !tail.is_empty() {
                tail.push(Line::default());
            }
            tail.extend(indicator);
        }

        let mut b = Blocks {
            conv,
            tail: &tail,
            cache: &mut self.cache,
            w,
            theme,
        };
        let total = b.total();
        self.rows.clear();
        self.rows.resize(h, None);
        self.visible = None;
        if total == 0 {
            self.follow = true;
            self.top = Pos::default();
            return;
        }
        if self.top.entry >= total {
            self.follow = true;
        }

        if self.pending_scroll != 0 {
            if self.follow {
                self.top = b.bottom_top(h);
                self.follow = false;
            }
            let k = self.pending_scroll.unsigned_abs() as usize;
            self.top = if self.pending_scroll < 0 {
                b.scroll_up(self.top, k)
            } else {
                b.scroll_down(self.top, k)
            };
            self.pending_scroll = 0;
        }

        if self.reveal_selected {
            self.reveal_selected = false;
            if let Some(s) = self.selected.filter(|&s| s < conv.entries.len()) {
                if self.follow {
                    self.top = b.bottom_top(h);
                    self.follow = false;
                }
                let start = Pos {
                    entry: s,
                    line: b.gap(s),
                };
                if start < self.top {
                    self.top = start;
                } else {
                    // Lines from the top of the view to the end of the selected entry.
                    let mut d = b.height(self.top.entry).saturating_sub(self.top.line);
                    for i in self.top.entry + 1..=s {
                        d += b.height(i);
                    }
                    if d > h {
                        self.top = b.scroll_down(self.top, d - h);
                        // An entry taller than the view shows its start.
                        self.top = self.top.min(start);
                    }
                }
            }
        }

        if !self.follow && b.lines_below(self.top, h) <= h {
            self.follow = true;
        }
        if self.follow {
            self.top = b.bottom_top(h);
        }

        let highlight = theme.selected();
        let mut y = 0usize;
        let mut i = self.top.entry;
        let mut skip = self.top.line;
        let n = conv.entries.len();
        while y < h && i < total {
            let gap = b.gap(i);
            let bh = b.height(i);
            for row in skip..bh {
                if y >= h {
                    break;
                }
                if row >= gap {
                    let line = &b.lines(i)[row - gap];
                    let ry = area.y + y as u16;
                    buf.set_line(area.x + 1, ry, line, w as u16);
                    if i < n {
                        self.rows[y] = Some(i);
                        self.visible = Some(match self.visible {
                            Some((first, _)) => (first, i),
                            None => (i, i),
                        });
                    }
                    if focused && row == gap && self.selected == Some(i) {
                        buf.set_style(Rect::new(area.x, ry, area.width, 1), highlight);
                    }
                }
                y += 1;
            }
            skip = 0;
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::state::{ToolEntry, UserEntry};

    fn conv(n: usize) -> Conversation {
        let mut c = Conversation::default();
        for i in 0..n {
            c.push(EntryKind::User(UserEntry::parse(&format!("message {i}"))));
        }
        c
    }

    fn screen(buf: &Buffer) -> Vec<String> {
        let a = buf.area;
        (0..a.height)
            .map(|y| {
                (0..a.width)
                    .map(|x| buf[(x, y)].symbol().to_string())
                    .collect::<String>()
                    .trim_end()
                    .to_string()
            })
            .collect()
    }

    fn draw(v: &mut ConvView, c: &Conversation) -> Vec<String> {
        let area = Rect::new(0, 0, 30, 5);
        let mut buf = Buffer::empty(area);
        v.render(c, Vec::new(), area, &mut buf, &Theme::default(), true);
        screen(&buf)
    }

    #[test]
    fn follows_the_tail_and_stops_when_scrolled_up() {
        let mut c = conv(10);
        let mut v = ConvView::default();
        let s = draw(&mut v, &c);
        assert_eq!(s[4], " › message 9");
        v.scroll(-4);
        let s = draw(&mut v, &c);
        assert!(!v.follow);
        assert_eq!(s[4], " › message 7");
        // New output does not move a view that was scrolled up.
        c.push(EntryKind::User(UserEntry::parse("message 10")));
        assert_eq!(draw(&mut v, &c)[4], " › message 7");
        // Scrolling back to the bottom follows again.
        v.scroll(100);
        assert_eq!(draw(&mut v, &c)[4], " › message 10");
        assert!(v.follow);
        v.home();
        assert_eq!(draw(&mut v, &c)[0], " › message 0");
    }

    #[test]
    fn selecting_a_tool_line_scrolls_it_into_view() {
        let mut c = Conversation::default();
        c.push(EntryKind::Tool(ToolEntry {
            call_id: "a".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"x.rs"}"#.into(),
            output: Some("ok".into()),
            is_error: false,
            duration_ms: Some(3),
            expanded: false,
        }));
        for i in 0..10 {
            c.push(EntryKind::User(UserEntry::parse(&format!("m{i}"))));
        }
        let mut v = ConvView::default();
        draw(&mut v, &c);
        assert!(v.select_prev(&c));
        assert_eq!(v.selected, Some(0));
        let s = draw(&mut v, &c);
        assert!(s[0].contains("read_file x.rs"), "{s:?}");
        assert_eq!(v.entry_at_row(0), Some(0));
    }
}
