//! What `/rewind` and `/undo` did, as lines in the conversation: a rewind on the
//! persona's, an undo on the worker's whose change it was.

use super::{EntryKind, SessionState};
use crate::protocol::{AgentId, ConflictFile, MergeState};
use std::time::Instant;

impl SessionState {
    /// `history`: the conversation's items after the rewind, when it was rewound too.
    pub(super) fn rewound(
        &mut self,
        id: AgentId,
        message: u32,
        files: usize,
        removed: usize,
        history: Option<usize>,
        now: Instant,
    ) {
        let mut parts = Vec::new();
        if files > 0 || removed > 0 {
            parts.push(format!("files: {files} put back, {removed} removed"));
        }
        if let Some(h) = history {
            parts.push(format!(
                "conversation: back to {h} items (what came after is forgotten by the model)"
            ));
        }
        if parts.is_empty() {
            parts.push("no file had changed".into());
        }
        let line = format!(
            "↶ rewound to before message {message}: {}",
            parts.join("; ")
        );
        self.taken_back_line(id, line, now);
    }

    pub(super) fn rewind_refused(
        &mut self,
        id: AgentId,
        message: u32,
        conflicts: &[String],
        now: Instant,
    ) {
        let line = format!(
            "rewind to before message {message} not done: you changed {} since ({})",
            conflicts.len(),
            conflicts.join(", ")
        );
        self.taken_back_line(id, line, now);
    }

    pub(super) fn merge_undone(&mut self, id: AgentId, files: &[String], now: Instant) {
        let line = format!(
            "↶ this worker's merged change was taken back out of the workspace: {}",
            if files.is_empty() {
                "nothing of it was left".to_string()
            } else {
                files.join(", ")
            }
        );
        self.taken_back_line(id, line, now);
        self.agent_entry(id, now).merge = Some(MergeState::Undone);
    }

    pub(super) fn undo_refused(&mut self, id: AgentId, conflicts: &[ConflictFile], now: Instant) {
        let paths: Vec<&str> = conflicts.iter().map(|c| c.path.as_str()).collect();
        let line = format!(
            "undo not done: lines of this change were changed since in {}",
            paths.join(", ")
        );
        self.taken_back_line(id, line, now);
    }

    fn taken_back_line(&mut self, id: AgentId, line: String, now: Instant) {
        self.agent_entry(id, now)
            .conversation
            .push(EntryKind::Notice(line));
    }
}
