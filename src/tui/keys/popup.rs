//! The `/` popup of commands in the composer: what it offers, the highlighted pick (↑↓),
//! Enter taking it, and Tab completion.

use super::*;

impl App {
    /// Tab in the composer while a command is being typed.
    pub(super) fn try_complete(&mut self) -> bool {
        let text = self.composer.text();
        let roles = self.state.known_roles();
        match commands::complete(&text, &roles, self.composer.completion_cycle) {
            Some(done) => {
                self.composer.set_text(&done);
                self.composer.completion_cycle += 1;
                true
            }
            None => false,
        }
    }

    /// The `/` popup's candidates while it shows (none when it does not).
    pub(crate) fn popup_candidates(&self) -> Vec<String> {
        let text = self.composer.text();
        let cands = commands::candidates(&text, &self.state.known_roles());
        if cands.len() == 1 && cands[0] == text.trim_end() {
            return Vec::new();
        }
        cands
    }

    /// The popup's highlighted row: the first until ↑↓ (or Tab) moves it.
    pub(crate) fn popup_pick(&self, n: usize) -> usize {
        self.composer.completion_cycle.saturating_sub(1) % n.max(1)
    }

    /// ↑↓ in the `/` popup.
    pub(super) fn move_pick(&mut self, n: usize, up: bool) {
        let cur = self.popup_pick(n);
        let next = if up { (cur + n - 1) % n } else { (cur + 1) % n };
        self.composer.completion_cycle = next + 1;
    }

    /// Enter while a command name is being typed: the highlighted command is taken; one
    /// that wants an argument waits for it (true: nothing to send yet).
    pub(super) fn take_pick(&mut self) -> bool {
        let text = self.composer.text();
        let cands = self.popup_candidates();
        if cands.is_empty() || text.contains(char::is_whitespace) {
            return false;
        }
        let picked = commands::with_room(&cands[self.popup_pick(cands.len())]);
        self.composer.set_text(&picked);
        self.composer.completion_cycle = 0;
        picked.ends_with(' ')
    }
}
