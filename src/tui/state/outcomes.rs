//! What an agent's work came to: its result and the verdict on it, its messages to its
//! supervisor, and the end of its life in the tree (despawned, released).

use super::agents::set_status;
use super::{EntryKind, SessionState};
use crate::protocol::{AgentId, AgentResult, AgentStatus, MessageKind, Verdict};
use std::time::Instant;

impl SessionState {
    pub(super) fn result_returned(&mut self, id: AgentId, result: &AgentResult, now: Instant) {
        let a = self.agent_entry(id, now);
        let mut result = result.clone();
        // Its verdict is the `verification` just before it.
        if result.verification.is_none() {
            result.verification = a.verdicts.last().cloned();
        }
        a.result = Some(result.clone());
        a.correcting = None;
        a.conversation.push(EntryKind::Result(result));
    }

    pub(super) fn verification(&mut self, id: AgentId, v: &Verdict, now: Instant) {
        let a = self.agent_entry(id, now);
        a.verdicts.push(v.clone());
        // A delivered result carries its verdict on its card; a correction gets a line of
        // its own.
        if !v.passed && v.attempt <= v.max_corrections {
            a.correcting = Some((v.attempt, v.max_corrections));
            a.conversation.push(EntryKind::Verification(v.clone()));
        } else {
            a.correcting = None;
        }
    }

    /// Shown where the supervisor's conversation is read (for the persona: the user).
    pub(super) fn supervisor_message(
        &mut self,
        id: AgentId,
        supervisor: AgentId,
        kind: MessageKind,
        text: &str,
        now: Instant,
    ) {
        let from = self.agent_entry(id, now).role.clone();
        let line = format!("{} from {from} {}: {text}", kind.as_str(), id.short());
        self.agent_entry(supervisor, now)
            .conversation
            .push(EntryKind::Notice(line));
    }

    pub(super) fn despawned(&mut self, id: AgentId, now: Instant) {
        let a = self.agent_entry(id, now);
        a.despawned = true;
        if !matches!(
            a.status,
            AgentStatus::Completed | AgentStatus::Failed | AgentStatus::Cancelled
        ) {
            set_status(a, AgentStatus::Cancelled, now);
        }
    }

    pub(super) fn released(&mut self, id: AgentId, now: Instant) {
        let a = self.agent_entry(id, now);
        a.released = true;
        a.conversation.push(EntryKind::Notice(
            "released: its result was delivered and it was not kept, so it takes no more \
             messages; its history stays here for reading"
                .into(),
        ));
    }
}
