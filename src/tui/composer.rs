//! The message input: a multi-line `ratatui-textarea` plus message history recall.

use crate::tui::theme::Theme;
use crate::tui::wrap::spans_width;
use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Widget};
use ratatui_textarea::{CursorMove, TextArea, WrapMode};

/// Rows of text the composer grows to before it scrolls.
const MAX_ROWS: u16 = 6;

pub struct Composer {
    textarea: TextArea<'static>,
    history: Vec<String>,
    /// Index into `history` while recalling with Up/Down.
    recall: Option<usize>,
    /// What was typed before recalling started, restored by Down past the newest.
    draft: String,
    /// Which candidate the next Tab picks when completion is ambiguous.
    pub completion_cycle: usize,
}

impl Default for Composer {
    fn default() -> Self {
        Self::new()
    }
}

impl Composer {
    pub fn new() -> Self {
        Self {
            textarea: new_textarea(Vec::new()),
            history: Vec::new(),
            recall: None,
            draft: String::new(),
            completion_cycle: 0,
        }
    }

    /// A composer whose Up recalls `earlier` (oldest first): prompts of earlier sessions.
    pub fn with_history(earlier: Vec<String>) -> Self {
        Self {
            history: earlier,
            ..Self::new()
        }
    }

    pub fn text(&self) -> String {
        self.textarea.lines().join("\n")
    }

    pub fn is_empty(&self) -> bool {
        self.textarea.lines().iter().all(|l| l.is_empty())
    }

    pub fn set_text(&mut self, text: &str) {
        let lines = text.split('\n').map(str::to_string).collect();
        self.textarea = new_textarea(lines);
        self.textarea.move_cursor(CursorMove::Bottom);
        self.textarea.move_cursor(CursorMove::End);
    }

    /// Empties the composer, keeping the message for Up-recall; returns the message.
    pub fn take(&mut self) -> String {
        let text = self.text();
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        self.textarea = new_textarea(Vec::new());
        self.recall = None;
        self.draft.clear();
        self.completion_cycle = 0;
        text
    }

    /// Ordinary editing keys (characters, arrows, Backspace, Ctrl+W…).
    pub fn input(&mut self, key: KeyEvent) -> bool {
        self.completion_cycle = 0;
        self.textarea.input(key)
    }

    /// Deletes from the cursor back to the start of its line (readline's Ctrl+U).
    pub fn kill_to_line_start(&mut self) {
        self.completion_cycle = 0;
        self.textarea.delete_line_by_head();
    }

    pub fn newline(&mut self) {
        self.textarea.insert_newline();
    }

    pub fn paste(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        self.textarea.insert_str(text);
    }

    /// The word the cursor ends (back to the last whitespace on its line).
    pub fn word_before_cursor(&self) -> String {
        let ratatui_textarea::DataCursor(row, col) = self.textarea.cursor();
        let Some(line) = self.textarea.lines().get(row) else {
            return String::new();
        };
        let before: Vec<char> = line.chars().take(col).collect();
        let start = before
            .iter()
            .rposition(|c| c.is_whitespace())
            .map_or(0, |i| i + 1);
        before[start..].iter().collect()
    }

    /// Puts `word` in place of the word the cursor ends.
    pub fn replace_word_before_cursor(&mut self, word: &str) {
        for _ in 0..self.word_before_cursor().chars().count() {
            self.textarea.delete_char();
        }
        self.textarea.insert_str(word);
    }

    pub fn cursor_on_first_line(&self) -> bool {
        self.textarea.cursor().0 == 0
    }

    pub fn cursor_on_last_line(&self) -> bool {
        self.textarea.cursor().0 + 1 >= self.textarea.lines().len()
    }

    pub fn recalling(&self) -> bool {
        self.recall.is_some()
    }

    /// Up on an empty composer (or while recalling): the previous message.
    pub fn recall_prev(&mut self) -> bool {
        let next = match self.recall {
            None if self.history.is_empty() => return false,
            None => {
                self.draft = self.text();
                self.history.len() - 1
            }
            Some(0) => return true,
            Some(i) => i - 1,
        };
        self.recall = Some(next);
        let text = self.history[next].clone();
        self.set_text(&text);
        true
    }

    /// Down while recalling: the next message, then back to the draft.
    pub fn recall_next(&mut self) -> bool {
        let Some(i) = self.recall else { return false };
        if i + 1 < self.history.len() {
            self.recall = Some(i + 1);
            let text = self.history[i + 1].clone();
            self.set_text(&text);
        } else {
            self.recall = None;
            let draft = std::mem::take(&mut self.draft);
            self.set_text(&draft);
        }
        true
    }

    /// Height the composer wants at `width`, borders included.
    pub fn height(&self, width: u16) -> u16 {
        let inner = width.saturating_sub(2).max(1) as usize;
        let rows: usize = self
            .textarea
            .lines()
            .iter()
            .map(|l| spans_width(&[Span::raw(l.as_str())]).div_ceil(inner).max(1))
            .sum();
        (rows as u16).clamp(1, MAX_ROWS) + 2
    }

    pub fn render(
        &mut self,
        area: Rect,
        buf: &mut Buffer,
        title: Line<'static>,
        theme: &Theme,
        focused: bool,
    ) {
        let block = Block::bordered()
            .border_type(if focused {
                BorderType::Thick
            } else {
                BorderType::Rounded
            })
            .border_style(theme.border(focused))
            .title(title);
        self.textarea.set_block(block);
        self.textarea.set_cursor_style(if focused {
            theme.selected()
        } else {
            Style::default()
        });
        self.textarea.set_placeholder_style(theme.dim());
        (&self.textarea).render(area, buf);
    }
}

fn new_textarea(lines: Vec<String>) -> TextArea<'static> {
    let mut t = TextArea::new(lines);
    t.set_wrap_mode(WrapMode::WordOrGlyph);
    t.set_cursor_line_style(Style::default());
    t.set_placeholder_text("Type a message, or / for commands");
    t
}
