//! What waits for the user: approvals and agents' questions, each queue in arrival order.
//! One dialog is shown at a time, the one that arrived first, so a dialog on screen is
//! never pushed aside by a later one.

use super::SessionState;
use crate::protocol::{AgentId, ApprovalAction};
use std::time::Instant;

#[derive(Clone, Debug, PartialEq)]
pub struct PendingApproval {
    pub request_id: u64,
    pub agent_id: AgentId,
    pub role: String,
    /// The name its supervisor gave the asking worker, if any.
    pub name: Option<String>,
    pub tool: String,
    pub action: ApprovalAction,
    /// When it arrived, to take turns with questions.
    pub seq: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PendingQuestion {
    pub request_id: u64,
    pub agent_id: AgentId,
    pub role: String,
    pub question: String,
    pub options: Vec<String>,
    /// When it arrived, to take turns with approvals.
    pub seq: u64,
}

/// The dialog in front.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Dialog<'a> {
    Approval(&'a PendingApproval),
    Question(&'a PendingQuestion),
    Plan(&'a super::PendingPlan),
}

impl SessionState {
    /// The dialog to show now: the oldest approval, question or plan (an approval on a
    /// tie, then a question).
    pub fn dialog(&self) -> Option<Dialog<'_>> {
        let first = match (self.approvals.front(), self.questions.front()) {
            (Some(a), Some(q)) if q.seq < a.seq => Some((q.seq, Dialog::Question(q))),
            (Some(a), _) => Some((a.seq, Dialog::Approval(a))),
            (None, Some(q)) => Some((q.seq, Dialog::Question(q))),
            (None, None) => None,
        };
        match (first, self.plans.front()) {
            (Some((seq, _)), Some(p)) if p.seq < seq => Some(Dialog::Plan(p)),
            (Some((_, d)), _) => Some(d),
            (None, p) => p.map(Dialog::Plan),
        }
    }

    /// Dialogs queued behind the one in front.
    pub fn dialogs_waiting(&self) -> usize {
        (self.approvals.len() + self.questions.len() + self.plans.len()).saturating_sub(1)
    }

    /// Queues a question (once per id).
    pub(super) fn ask(&mut self, q: PendingQuestion) {
        if !self.questions.iter().any(|p| p.request_id == q.request_id) {
            self.questions.push_back(q);
        }
    }

    /// Drops a question (answered here, or settled by the runtime). Idempotent.
    pub fn resolve_question(&mut self, request_id: u64) -> bool {
        let before = self.questions.len();
        self.questions.retain(|q| q.request_id != request_id);
        before != self.questions.len()
    }
}

impl SessionState {
    /// Drops a pending approval (answered here, or resolved by the runtime). Idempotent.
    pub fn resolve_approval(&mut self, request_id: u64) -> bool {
        let before = self.approvals.len();
        self.approvals.retain(|p| p.request_id != request_id);
        before != self.approvals.len()
    }
}

impl SessionState {
    /// Like a question: one read back from an earlier run's log has nobody waiting on it
    /// (a resumed agent asks again, live).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn approval_requested(
        &mut self,
        seq: u64,
        id: AgentId,
        request_id: u64,
        role: &str,
        tool: &str,
        action: &ApprovalAction,
        live: bool,
        now: Instant,
    ) {
        let name = self.agent_entry(id, now).options.name.clone();
        if live && !self.approvals.iter().any(|p| p.request_id == request_id) {
            self.approvals.push_back(PendingApproval {
                request_id,
                agent_id: id,
                role: role.to_string(),
                name,
                tool: tool.to_string(),
                action: action.clone(),
                seq,
            });
        }
    }

    /// A question read back from an earlier run's log has nobody waiting on it.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn question_asked(
        &mut self,
        seq: u64,
        id: AgentId,
        request_id: u64,
        role: &str,
        question: &str,
        options: &[String],
        live: bool,
        now: Instant,
    ) {
        self.agent_entry(id, now);
        if live {
            self.ask(PendingQuestion {
                request_id,
                agent_id: id,
                role: role.to_string(),
                question: question.to_string(),
                options: options.to_vec(),
                seq,
            });
        }
    }
}
