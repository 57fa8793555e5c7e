//! Who messaged whom (`agent_message`): one line in the persona's conversation, the
//! team's own, for each message a teammate sent (`✉ coder 1a2b3c4d → tester 5e6f7a8b:
//! …`). The recipient's conversation shows the message itself once delivered, marked
//! with its sender (the history item).

use super::SessionState;
use super::conversation::EntryKind;
use crate::protocol::AgentId;
use std::time::Instant;

/// Longest part of a message the line shows.
const SHOWN: usize = 120;

impl SessionState {
    pub(super) fn agent_message(&mut self, from: AgentId, to: AgentId, text: &str, now: Instant) {
        let who = |s: &mut Self, id: AgentId| {
            let role = s.agent_entry(id, now).role.clone();
            format!("{role} {}", id.short())
        };
        let (from, to) = (who(self, from), who(self, to));
        let text = crate::text::clip(&crate::text::one_line(text), SHOWN);
        let line = format!("✉ {from} → {to}: {text}");
        let root = self.root_agent;
        self.agent_entry(root, now)
            .conversation
            .push(EntryKind::Notice(line));
    }
}
