//! Keys while an overlay is open: the details, help and `/mcp` popups, the agents list
//! and the save-as-role prompt.

use super::*;

impl App {
    pub(super) fn open(&mut self, o: Overlay) {
        self.overlay = Some(o);
        self.overlay_scroll = 0;
    }

    pub(super) fn overlay_key(&mut self, o: Overlay, key: KeyEvent, now: Instant) -> Vec<Action> {
        match o {
            Overlay::SaveRole(id) => return self.save_role_key(id, key, now),
            Overlay::Rewind => return self.rewind_key(key, now),
            Overlay::ConfirmUndo(id) => return self.confirm_undo_key(id, key, now),
            Overlay::Models => return self.models_key(key),
            _ => {}
        }
        let close = matches!(key.code, KeyCode::Esc | KeyCode::F(1))
            || (o == Overlay::Help && key.code == KeyCode::Char('?'))
            || (matches!(o, Overlay::Details(_)) && key.code == KeyCode::Char('i'))
            || (matches!(o, Overlay::Diff(_)) && key.code == KeyCode::Char('d'))
            || (o != Overlay::Agents && key.code == KeyCode::Char('q'))
            || (o == Overlay::Tasks && key.code == KeyCode::Char('t'))
            || (o == Overlay::Review && key.code == KeyCode::Enter);
        match o {
            Overlay::ConfirmQuit => {
                if matches!(key.code, KeyCode::Char('y' | 'Y')) {
                    let exit = self.pending_exit.take().unwrap_or(Exit::Quit);
                    return self.leave(exit);
                }
                if matches!(
                    key.code,
                    KeyCode::Char('n' | 'N') | KeyCode::Esc | KeyCode::Char('q')
                ) {
                    self.overlay = None;
                }
                return Vec::new();
            }
            Overlay::ConfirmDespawn(id) => {
                self.overlay = None;
                if matches!(key.code, KeyCode::Char('y' | 'Y')) {
                    self.set_notice("cancelling…", now);
                    return vec![Action::Send(Op::Despawn { agent_id: id })];
                }
                return Vec::new();
            }
            _ if close => self.overlay = None,
            Overlay::Tasks => {
                if matches!(key.code, KeyCode::Enter | KeyCode::Right) {
                    self.overlay = None;
                    self.focus = Focus::Conversation;
                } else {
                    let out = self.tasks_key(key, now);
                    if self.focus == Focus::Composer {
                        self.overlay = None;
                    }
                    return out;
                }
            }
            Overlay::Agents => {
                if key.code == KeyCode::Char('s') {
                    self.ask_role_name(now);
                } else if matches!(key.code, KeyCode::Enter) {
                    self.overlay = None;
                    self.focus = Focus::Conversation;
                } else {
                    let out = self.tree_key(key, now);
                    if self.focus == Focus::Composer && self.overlay == Some(Overlay::Agents) {
                        // Typing leaves the full-screen tree for the composer.
                        self.overlay = None;
                    }
                    return out;
                }
            }
            _ => match key.code {
                KeyCode::Up | KeyCode::Char('k') => {
                    self.overlay_scroll = self.overlay_scroll.saturating_sub(1);
                }
                KeyCode::Down | KeyCode::Char('j') => self.overlay_scroll += 1,
                KeyCode::PageUp => self.overlay_scroll = self.overlay_scroll.saturating_sub(10),
                KeyCode::PageDown => self.overlay_scroll += 10,
                _ => {}
            },
        }
        Vec::new()
    }

    /// `s` in `/agents`: asks the name to save the selected worker's role as.
    pub(super) fn ask_role_name(&mut self, now: Instant) {
        let id = self.viewed();
        match self.state.agent(id) {
            Some(_) if id == self.state.root_agent => self.set_notice(
                "the persona's role is a role file already: select a worker to save its role",
                now,
            ),
            Some(a) => {
                self.role_name = save_role::suggestion(&a.role, id);
                self.overlay = Some(Overlay::SaveRole(id));
            }
            None => {}
        }
    }

    /// A key in the save-as-role prompt; it goes back to `/agents` when done.
    pub(super) fn save_role_key(
        &mut self,
        id: AgentId,
        key: KeyEvent,
        now: Instant,
    ) -> Vec<Action> {
        match save_role::key(&mut self.role_name, key) {
            NameKey::Edited => Vec::new(),
            NameKey::Cancel => {
                self.overlay = Some(Overlay::Agents);
                Vec::new()
            }
            NameKey::Save(name) => {
                self.overlay = Some(Overlay::Agents);
                self.saving_role = Some(id);
                self.set_notice(format!("saving role {name}…"), now);
                vec![Action::Send(Op::SaveRole { agent_id: id, name })]
            }
        }
    }

    /// `/model`'s list: ↑↓ move, Enter picks (the persona's model from its next call).
    fn models_key(&mut self, key: KeyEvent) -> Vec<Action> {
        let models = match &self.state.models {
            Some(Ok(models)) => models.clone(),
            _ => Vec::new(),
        };
        let n = models.len().max(1);
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => self.model_pick = (self.model_pick + n - 1) % n,
            KeyCode::Down | KeyCode::Char('j') => self.model_pick = (self.model_pick + 1) % n,
            KeyCode::Enter => {
                self.overlay = None;
                if let Some(model) = models.get(self.model_pick) {
                    let model = model.clone();
                    return vec![Action::Send(Op::SetModel { model })];
                }
            }
            KeyCode::Esc | KeyCode::Char('q') | KeyCode::F(1) => self.overlay = None,
            _ => {}
        }
        Vec::new()
    }
}
