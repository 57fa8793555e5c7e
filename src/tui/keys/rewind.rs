//! Keys and core answers of taking back what squad did: `/rewind` (Esc Esc on an empty
//! composer) and `/undo` of a worker's merged change (`u` on it in the tree).

use super::*;
use crate::protocol::{Event, EventKind};
use crate::tui::rewind::{RewindKey, RewindView};

/// Two Esc within this window on an empty composer open `/rewind`.
const DOUBLE_ESC: Duration = Duration::from_millis(800);

impl App {
    /// Esc outside dialogs: interrupts the viewed agent's turn; while it rests, a second
    /// one soon after, on an empty composer, opens `/rewind`.
    pub(super) fn esc(&mut self, now: Instant) -> Vec<Action> {
        let second = self
            .last_esc
            .is_some_and(|t| now.saturating_duration_since(t) <= DOUBLE_ESC);
        let resting = !self.state.is_busy(self.viewed());
        if second && resting && self.focus == Focus::Composer && self.composer.is_empty() {
            self.last_esc = None;
            return self.open_rewind();
        }
        self.last_esc = Some(now);
        self.interrupt_viewed(now)
    }

    pub(super) fn open_rewind(&mut self) -> Vec<Action> {
        self.rewind = Some(RewindView::opening());
        self.open(Overlay::Rewind);
        vec![Action::Send(Op::ListCheckpoints)]
    }

    pub(super) fn rewind_key(&mut self, key: KeyEvent, now: Instant) -> Vec<Action> {
        let Some(view) = self.rewind.as_mut() else {
            self.overlay = None;
            return Vec::new();
        };
        match view.key(key) {
            RewindKey::Nothing => Vec::new(),
            RewindKey::Close => {
                self.overlay = None;
                self.rewind = None;
                Vec::new()
            }
            RewindKey::Send(op) => {
                self.overlay = None;
                self.set_notice("rewinding: the team stops first…", now);
                vec![Action::Send(op)]
            }
        }
    }

    /// `/undo`, or `u` on a worker in the tree: its merged change out of the workspace.
    pub(super) fn undo_viewed(&mut self, now: Instant) -> Vec<Action> {
        let id = self.viewed();
        if id == self.state.root_agent {
            self.set_notice(
                "select a worker whose change was merged (in the tree), then /undo or u; \
                 /rewind takes back the persona's own edits",
                now,
            );
            return Vec::new();
        }
        // Asked first: an undo rewrites the workspace's files (`y` sends it).
        let _ = now;
        self.undo_conflicts.clear();
        self.open(Overlay::ConfirmUndo(id));
        Vec::new()
    }

    /// `/merge [WORKER]`: a worker's change merged on purpose (one kept unmerged because
    /// it failed its checks); without a name, the worker shown.
    pub(super) fn merge_worker(&mut self, worker: Option<String>, now: Instant) -> Vec<Action> {
        let worker = match worker {
            Some(w) => w,
            None if self.viewed() != self.state.root_agent => self.viewed().short(),
            None => {
                self.set_notice(
                    "select a worker in the tree (or name it: /merge WORKER), then /merge",
                    now,
                );
                return Vec::new();
            }
        };
        self.set_notice(format!("merging the change of worker {worker}…"), now);
        vec![Action::Send(Op::MergeWorker { worker })]
    }

    pub(super) fn confirm_undo_key(
        &mut self,
        id: AgentId,
        key: KeyEvent,
        now: Instant,
    ) -> Vec<Action> {
        match key.code {
            KeyCode::Char('y' | 'Y') => {
                self.overlay = None;
                // Asked after the core refused: those lines of the user's go too.
                let force = !std::mem::take(&mut self.undo_conflicts).is_empty();
                let notice = if force {
                    "undoing, your changes to those lines included…"
                } else {
                    "undoing the worker's merged change…"
                };
                self.set_notice(notice, now);
                vec![Action::Send(Op::UndoMerge {
                    agent_id: id,
                    force,
                })]
            }
            KeyCode::Char('n' | 'N' | 'q') | KeyCode::Esc => {
                self.overlay = None;
                self.undo_conflicts.clear();
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    /// The core's answers to a rewind or an undo (live ones only: a log read back asks
    /// nothing).
    pub(crate) fn apply_rewind(&mut self, ev: &Event, now: Instant) {
        if ev.seq <= self.state.replayed_seq() {
            return;
        }
        // Nothing else answers a rewind or an undo.
        if let EventKind::Checkpoints { list } = &ev.kind {
            if let Some(view) = self.rewind.as_mut() {
                view.set_list(list.clone());
            }
        } else if let EventKind::RewindRefused { conflicts, .. } = &ev.kind {
            let view = self.rewind.get_or_insert_with(RewindView::opening);
            view.refused(conflicts.clone());
            self.open(Overlay::Rewind);
        } else if let EventKind::Rewound {
            message, history, ..
        } = &ev.kind
        {
            // A rewound conversation gives the user's message back, to edit and send.
            let view = self.rewind.take();
            let text = view.as_ref().and_then(|v| v.text_of(*message));
            if let (Some(text), Some(_), true) = (text, history, self.composer.is_empty()) {
                self.composer.set_text(text);
                // Back to whom it was said: checkpoints are of messages to the persona.
                self.tree.selected = None;
                self.focus = Focus::Composer;
            }
            self.set_notice("rewound", now);
        } else if let EventKind::UndoRefused { conflicts } = &ev.kind {
            self.undo_conflicts = conflicts.iter().map(ToString::to_string).collect();
            self.open(Overlay::ConfirmUndo(ev.agent_id));
        } else if let EventKind::MergeUndone { files } = &ev.kind {
            let n = files.len();
            self.set_notice(format!("undone: {n} file(s) back as before the merge"), now);
        }
    }
}
