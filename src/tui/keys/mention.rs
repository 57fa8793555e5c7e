//! Keys of the `@path` popup (see `tui/mention.rs`).

use crate::protocol::Op;
use crate::tui::app::{Action, App, Focus};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

impl App {
    /// A key while the `@` popup is open: Up/Down pick, Tab/Enter accept, Esc closes.
    /// `None` leaves the key to the composer (Enter with nothing to accept sends).
    pub(super) fn mention_key(&mut self, key: KeyEvent) -> Option<Vec<Action>> {
        if self.focus != Focus::Composer || self.overlay.is_some() {
            return None;
        }
        let word = self.composer.word_before_cursor();
        let query = self.mention.query(&word)?.to_string();
        let matches = self.mention.matches(&query);
        let plain = !key
            .modifiers
            .intersects(KeyModifiers::ALT | KeyModifiers::SHIFT | KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Esc => self.mention.dismiss(word),
            KeyCode::Up if !matches.is_empty() => self.mention.select(-1, matches.len()),
            KeyCode::Down if !matches.is_empty() => self.mention.select(1, matches.len()),
            KeyCode::Tab | KeyCode::Enter if plain => {
                let pick = matches.get(self.mention.selected)?;
                self.composer
                    .replace_word_before_cursor(&format!("@{pick} "));
                self.mention.close();
            }
            _ => return None,
        }
        Some(Vec::new())
    }

    /// After an edit in the composer: the start of an `@word` asks the core for the files.
    pub(super) fn after_composer_edit(&mut self) -> Vec<Action> {
        let word = self.composer.word_before_cursor();
        self.mention.edited(&word);
        if self.mention.query(&word).is_none() {
            self.mention.close();
            return Vec::new();
        }
        if self.mention.needs_listing() {
            return vec![Action::Send(Op::ListFiles)];
        }
        Vec::new()
    }
}
