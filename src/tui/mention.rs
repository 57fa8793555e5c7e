//! `@path` completion in the composer: the word the cursor ends starts with `@`, and a
//! popup offers the workspace's files that fuzzy-match the rest. The files come from the
//! core (`Op::ListFiles`, answered by a `files` event): the TUI never reads the disk, and
//! the core attaches the file named by an accepted `@path` when the message is sent.

use crate::text::fuzzy_rank;
use crate::tui::popup;
use crate::tui::theme::Theme;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

/// Rows of matches the popup shows.
pub const SHOWN: usize = 8;

#[derive(Default)]
pub struct Mention {
    /// The workspace's files as the core last listed them; `None` until it answers.
    files: Option<Vec<String>>,
    /// A listing was asked for since the popup opened: one walk per `@`, not per key.
    asked: bool,
    pub selected: usize,
    /// The `@word` Esc closed the popup on: it stays closed while the word stays.
    dismissed: Option<String>,
    /// The last query and its matches: drawing and keys ask for the same list.
    cache: Option<(String, Vec<String>)>,
}

impl Mention {
    pub fn set_files(&mut self, paths: Vec<String>) {
        self.files = Some(paths);
        self.cache = None;
    }

    /// What to match, when the cursor ends an `@word` the user has not closed.
    pub fn query<'w>(&self, word: &'w str) -> Option<&'w str> {
        let q = word.strip_prefix('@')?;
        (self.dismissed.as_deref() != Some(word)).then_some(q)
    }

    /// The best matches of `query`, best first (none while the files are on their way).
    pub fn matches(&mut self, query: &str) -> Vec<String> {
        let Some(files) = &self.files else {
            return Vec::new();
        };
        if let Some((q, m)) = &self.cache
            && q == query
        {
            return m.clone();
        }
        let m: Vec<String> = fuzzy_rank(query, files, SHOWN)
            .into_iter()
            .filter_map(|i| files.get(i).cloned())
            .collect();
        self.cache = Some((query.to_string(), m.clone()));
        m
    }

    pub fn loading(&self) -> bool {
        self.files.is_none()
    }

    /// True once per opening of the popup: the files are asked for then.
    pub fn needs_listing(&mut self) -> bool {
        !std::mem::replace(&mut self.asked, true)
    }

    pub fn dismiss(&mut self, word: String) {
        self.dismissed = Some(word);
        self.close();
    }

    /// After an edit: a new word lifts an Esc, and the highlight starts at the top.
    pub fn edited(&mut self, word: &str) {
        if self.dismissed.as_deref() != Some(word) {
            self.dismissed = None;
        }
        self.selected = 0;
    }

    pub fn close(&mut self) {
        self.asked = false;
        self.selected = 0;
    }

    pub fn select(&mut self, delta: i64, count: usize) {
        if count > 0 {
            let n = count as i64;
            self.selected = (self.selected as i64 + delta).rem_euclid(n) as usize;
        }
    }
}

/// The popup above the composer at `composer`: the matches, the picked one highlighted.
pub fn render(
    buf: &mut Buffer,
    composer: Rect,
    matches: &[String],
    selected: usize,
    loading: bool,
    theme: &Theme,
) {
    let lines: Vec<Line<'static>> = if loading {
        vec![Line::styled("listing the workspace's files…", theme.dim())]
    } else if matches.is_empty() {
        vec![Line::styled("no file matches", theme.dim())]
    } else {
        matches
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let line = Line::from(Span::styled(m.clone(), theme.accent()));
                if i == selected {
                    line.style(theme.selected())
                } else {
                    line
                }
            })
            .collect()
    };
    let h = lines.len() as u16 + 2;
    if composer.y < h {
        return;
    }
    let rect = Rect::new(composer.x, composer.y - h, composer.width.min(72), h);
    let title = Line::styled(" Tab/Enter attaches · Esc closes ", theme.dim());
    let inner = popup::frame(buf, rect, title, theme.accent());
    popup::draw_lines(buf, inner, &lines, 0);
}
