//! Each agent's inbox: notices wait here until its next notice batch (`report.rs`). An
//! urgent one wakes the agent if it waits for its workers; the rest ride along.

use super::Team;
use crate::protocol::{AgentId, EventKind, MessageKind};
use crate::runtime::inbox::Notice;

impl Team {
    /// Queues `notice` for `to`; `told`, when given, is the event that records it. The
    /// event is emitted under the same lock as a delivery's, so the log never shows a
    /// notice after the batch that carried it. False if `to` is gone.
    pub fn post_notice(
        &self,
        to: AgentId,
        notice: Notice,
        told: Option<(AgentId, EventKind)>,
    ) -> bool {
        let wakes = notice.priority.wakes();
        {
            let mut agents = self.lock();
            let Some(a) = agents.get_mut(&to) else {
                return false;
            };
            a.notices.push(notice);
            if let Some((from, kind)) = told {
                self.emit(from, kind);
            }
        }
        if wakes {
            self.bump();
        }
        true
    }

    /// A worker's message to its supervisor; returns the supervisor, `None` for an agent
    /// without one.
    pub fn message_supervisor(
        &self,
        from: AgentId,
        kind: MessageKind,
        text: &str,
    ) -> Option<AgentId> {
        let (supervisor, role) = self.with(from, |a| Some((a.parent?, a.role.clone())))??;
        let told = EventKind::SupervisorMessage {
            supervisor_id: supervisor,
            kind,
            text: text.to_string(),
        };
        let notice = Notice::message(from, &role, kind, text);
        self.post_notice(supervisor, notice, Some((from, told)))
            .then_some(supervisor)
    }

    /// Everything waiting in `id`'s inbox, in the order it came; an `inbox_delivered`
    /// event says so when there was something.
    pub fn take_notices(&self, id: AgentId) -> Vec<Notice> {
        let mut agents = self.lock();
        let Some(a) = agents.get_mut(&id) else {
            return Vec::new();
        };
        let taken = std::mem::take(&mut a.notices);
        if !taken.is_empty() {
            let notices = u32::try_from(taken.len()).unwrap_or(u32::MAX);
            self.emit(id, EventKind::InboxDelivered { notices });
        }
        taken
    }

    /// Whether a notice that wakes (critical or high) waits in `id`'s inbox.
    pub fn has_urgent_notice(&self, id: AgentId) -> bool {
        self.with(id, |a| a.notices.iter().any(|n| n.priority.wakes()))
            .unwrap_or(false)
    }

    /// Whether a worker of `id` failed since this was last asked; cheap, for a wait that
    /// asks on every change. The failure may have been delivered meanwhile: see
    /// [`Team::owed_failures`].
    pub fn take_alarm(&self, id: AgentId) -> bool {
        self.with(id, |a| std::mem::take(&mut a.alarm))
            .unwrap_or(false)
    }

    /// On resume: the messages the log shows were not yet delivered.
    pub fn restore_notices(&self, id: AgentId, notices: Vec<Notice>) {
        self.with(id, |a| a.notices = notices);
    }
}
