//! What `/rewind` and `/undo` did, as lines in the conversation: a rewind on the
//! persona's, an undo on the worker's whose change it was.

use super::{EntryKind, SessionState};
use crate::protocol::{AgentId, EventKind};
use std::time::Instant;

impl SessionState {
    pub(super) fn taken_back(&mut self, id: AgentId, kind: &EventKind, now: Instant) {
        let line = match kind {
            EventKind::Rewound {
                message,
                files,
                removed,
                history,
            } => {
                let mut parts = Vec::new();
                if !files.is_empty() || !removed.is_empty() {
                    parts.push(format!(
                        "files: {} put back, {} removed",
                        files.len(),
                        removed.len()
                    ));
                }
                if let Some(h) = history {
                    parts.push(format!(
                        "conversation: back to {} items (what came after is forgotten by the model)",
                        h.len()
                    ));
                }
                if parts.is_empty() {
                    parts.push("no file had changed".into());
                }
                format!(
                    "↶ rewound to before message {message}: {}",
                    parts.join("; ")
                )
            }
            EventKind::RewindRefused { message, conflicts } => format!(
                "rewind to before message {message} not done: you changed {} since ({})",
                conflicts.len(),
                conflicts.join(", ")
            ),
            EventKind::MergeUndone { files } => format!(
                "↶ this worker's merged change was taken back out of the workspace: {}",
                if files.is_empty() {
                    "nothing of it was left".to_string()
                } else {
                    files.join(", ")
                }
            ),
            EventKind::UndoRefused { conflicts } => format!(
                "undo not done: lines of this change were changed since in {}",
                conflicts
                    .iter()
                    .map(|c| c.path.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            _ => return,
        };
        let a = self.agent_entry(id, now);
        if matches!(kind, EventKind::MergeUndone { .. }) {
            a.merge = Some(crate::protocol::MergeState::Undone);
        }
        a.conversation.push(EntryKind::Notice(line));
    }
}
