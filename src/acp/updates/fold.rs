//! The translator's fold: what each event means to an ACP client, live and replayed.

use super::{StopReason, Translator, TurnState, call_update, session_message};
use crate::acp::ask;
use crate::protocol::{BudgetMeasure, BudgetScope, Event, EventKind, HistoryItem, Op, dollars};
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, SessionUpdate, ToolCallStatus, ToolCallUpdateFields,
};

impl Translator {
    /// Replays one event of a loaded session's log: the conversations, the workers and
    /// the board. Nothing that asks or acts (approvals, questions, budgets) is replayed.
    pub fn replay(&mut self, event: &Event) {
        match &event.kind {
            EventKind::ItemAdded {
                item: HistoryItem::User { text },
            } if event.agent_id == self.root => self.send(
                &self.session_id,
                SessionUpdate::UserMessageChunk(ContentChunk::new(ContentBlock::from(
                    text.as_str(),
                ))),
            ),
            EventKind::ItemAdded { .. }
            | EventKind::SessionStarted { .. }
            | EventKind::AgentMessage { .. }
            | EventKind::AgentMessagesDelivered { .. }
            | EventKind::AgentSpawned { .. }
            | EventKind::AgentStatus { .. }
            | EventKind::ResultReturned { .. }
            | EventKind::Verification(_)
            | EventKind::TurnFinished { .. }
            | EventKind::TaskUpdated { .. }
            | EventKind::PlanSubmitted(_)
            | EventKind::PlanDecided(_) => {
                self.event(event);
            }
            // Not replayed: what asks or acts, or what a loaded session does not show.
            EventKind::AgentBudget { .. }
            | EventKind::AgentSandbox { .. }
            | EventKind::AgentOptions(_)
            | EventKind::FarSide(_)
            | EventKind::TurnStarted
            | EventKind::TextDelta { .. }
            | EventKind::ToolCallBegin { .. }
            | EventKind::ToolCallEnd { .. }
            | EventKind::ApprovalRequested { .. }
            | EventKind::ApprovalResolved { .. }
            | EventKind::ApprovalUnanswered { .. }
            | EventKind::QuestionAsked { .. }
            | EventKind::QuestionAnswered { .. }
            | EventKind::Usage { .. }
            | EventKind::Compacted { .. }
            | EventKind::InstructionsLoaded { .. }
            | EventKind::Retrying { .. }
            | EventKind::Stalled { .. }
            | EventKind::Unstalled
            | EventKind::Error { .. }
            | EventKind::Notice { .. }
            | EventKind::HookRan { .. }
            | EventKind::MergeReport(_)
            | EventKind::ResultDelivered { .. }
            | EventKind::Despawned { .. }
            | EventKind::Released
            | EventKind::RoleSaved { .. }
            | EventKind::SupervisorMessage { .. }
            | EventKind::InboxDelivered { .. }
            | EventKind::McpServer { .. }
            | EventKind::MessageQueued { .. }
            | EventKind::CoordinateOnly { .. }
            | EventKind::Paused
            | EventKind::Resumed
            | EventKind::Stopped { .. }
            | EventKind::DeadlockDetected { .. }
            | EventKind::BudgetReached { .. }
            | EventKind::SessionBudgetSet { .. }
            | EventKind::StaleWorktreesRemoved { .. }
            | EventKind::WorktreeCreated { .. }
            | EventKind::DiffStat(_)
            | EventKind::Merged { .. }
            | EventKind::MergeUndone { .. }
            | EventKind::UndoRefused { .. }
            | EventKind::MergeConflict { .. }
            | EventKind::WorktreeRemoved { .. }
            | EventKind::Diff { .. }
            | EventKind::Idle
            | EventKind::Summary { .. }
            | EventKind::Quote(_)
            | EventKind::CheckpointStarted { .. }
            | EventKind::CheckpointTaken { .. }
            | EventKind::Rewound { .. }
            | EventKind::Checkpoints { .. }
            | EventKind::RewindRefused { .. }
            | EventKind::Files { .. }
            | EventKind::Models { .. }
            | EventKind::ModelSet { .. }
            | EventKind::ApprovalSet { .. }
            | EventKind::ReviewStarted { .. }
            | EventKind::ReviewFinished { .. }
            | EventKind::GoalSet { .. }
            | EventKind::GoalChecked(_)
            | EventKind::GoalEnded { .. }
            | EventKind::Batch(_) => {}
        }
    }

    /// One live event. Returns the stop reason when the prompt under way has ended: the
    /// whole tree is idle after the root's turn started.
    pub fn event(&mut self, event: &Event) -> Option<StopReason> {
        let agent = event.agent_id;
        let root = agent == self.root;
        self.team_event(event);
        match &event.kind {
            EventKind::TurnStarted if root => self.turn.started = true,
            EventKind::TurnFinished { end } if root => self.turn.last_end = Some(*end),
            EventKind::TurnFinished { end } => {
                if let Some(view) = self.views.get_mut(&agent) {
                    view.last_end = Some(*end);
                }
            }
            EventKind::AgentSpawned {
                parent_id: Some(parent),
                role,
                task,
                ..
            } => self.spawned(agent, *parent, role, task),
            EventKind::AgentStatus { status, reason, .. } if !root => {
                self.worker_status(agent, *status, reason.as_deref())
            }
            // The verdict in a word (`✓100`, `✗40`, `unchecked`): never a ✓ for nothing.
            EventKind::Verification(v) if !root => {
                self.worker_line(agent, &format!("verification: {}", v.mark()), true);
            }
            EventKind::ResultReturned { result, .. } if !root => {
                let line = format!("result ({:?}): {}", result.status, result.summary);
                self.worker_line(agent, &line, true);
                // A child's result is a message to its supervisor's session.
                if let Some(view) = self.views.get(&agent).filter(|v| v.as_call.is_none()) {
                    self.send(
                        &view.parent_session,
                        session_message(
                            format!("result-{agent}-{}", event.seq),
                            &view.session_id,
                            &view.parent_session,
                            line,
                        ),
                    );
                }
            }
            EventKind::TextDelta { delta } => {
                if let Some(view) = self.views.get_mut(&agent)
                    && view.as_call.is_none()
                {
                    view.streamed = true;
                    let session = view.session_id.clone();
                    self.say(&session, delta);
                }
            }
            EventKind::ItemAdded { item } | EventKind::AgentMessagesDelivered { item, .. } => {
                self.item(agent, item)
            }
            EventKind::ToolCallBegin { call_id } => {
                if let Some(view) = self.views.get(&agent)
                    && view.as_call.is_none()
                    && view.open_calls.contains_key(call_id)
                {
                    self.send(
                        &view.session_id,
                        call_update(
                            call_id,
                            ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
                        ),
                    );
                }
            }
            EventKind::Error { message } if root => self.turn.last_error = Some(message.clone()),
            EventKind::BudgetReached {
                scope: BudgetScope::Agent,
                measure: BudgetMeasure::Tokens,
                ..
            } => {
                if let Some(view) = self.views.get_mut(&agent) {
                    view.out_of_tokens = true;
                }
            }
            EventKind::BudgetReached {
                scope: BudgetScope::Session,
                spent,
                limit,
                ..
            } => {
                self.turn.refused = Some(format!(
                    "session budget reached: {} of {} spent (limits.max_session_cost_usd)",
                    dollars(*spent),
                    dollars(*limit)
                ));
                // Paused by its budget, the team cannot go on here: stop it, end the prompt.
                let _ = self.ops.send(Op::Stop);
            }
            EventKind::TaskUpdated { task } => self.plan(task),
            EventKind::PlanSubmitted(p) => self.worker_line(agent, &p.line(), true),
            EventKind::PlanDecided(d) => self.worker_line(agent, &d.line(), true),
            EventKind::ApprovalRequested {
                request_id,
                tool,
                action,
                ..
            } => {
                let (session, call_id) = self.waiting_call(agent, tool, *request_id);
                ask::approval(
                    &self.rpc,
                    &self.ops,
                    &session,
                    call_id,
                    *request_id,
                    tool,
                    action,
                );
            }
            EventKind::QuestionAsked {
                request_id,
                question,
                options,
                ..
            } => {
                let session = self.shown_session(agent);
                ask::question(
                    &self.rpc,
                    &self.ops,
                    &session,
                    *request_id,
                    question,
                    options,
                );
            }
            EventKind::Idle if self.turn.started => {
                let (reason, why) = self.turn.stop_reason();
                tracing::debug!(target: "squad::acp", "prompt of {} ended: {reason:?}", self.session_id);
                if let Some(why) = why {
                    self.say(&self.session_id, &format!("\n\nsquad stopped: {why}"));
                }
                self.turn = TurnState::default();
                return Some(reason);
            }
            // Ignored here: nothing an ACP client is shown (or it came as an item above).
            EventKind::SessionStarted { .. }
            | EventKind::AgentSpawned { .. }
            | EventKind::AgentBudget { .. }
            | EventKind::AgentSandbox { .. }
            | EventKind::AgentOptions(_)
            | EventKind::FarSide(_)
            | EventKind::AgentStatus { .. }
            | EventKind::TurnStarted
            | EventKind::ToolCallEnd { .. }
            | EventKind::ApprovalResolved { .. }
            | EventKind::ApprovalUnanswered { .. }
            | EventKind::QuestionAnswered { .. }
            | EventKind::Usage { .. }
            | EventKind::Compacted { .. }
            | EventKind::InstructionsLoaded { .. }
            | EventKind::Retrying { .. }
            | EventKind::Stalled { .. }
            | EventKind::Unstalled
            | EventKind::Error { .. }
            | EventKind::Notice { .. }
            | EventKind::HookRan { .. }
            | EventKind::ResultReturned { .. }
            | EventKind::MergeReport(_)
            | EventKind::Verification(_)
            | EventKind::ResultDelivered { .. }
            | EventKind::Despawned { .. }
            | EventKind::Released
            | EventKind::RoleSaved { .. }
            | EventKind::SupervisorMessage { .. }
            | EventKind::InboxDelivered { .. }
            | EventKind::McpServer { .. }
            | EventKind::MessageQueued { .. }
            | EventKind::AgentMessage { .. }
            | EventKind::CoordinateOnly { .. }
            | EventKind::Paused
            | EventKind::Resumed
            | EventKind::Stopped { .. }
            | EventKind::DeadlockDetected { .. }
            | EventKind::BudgetReached { .. }
            | EventKind::SessionBudgetSet { .. }
            | EventKind::StaleWorktreesRemoved { .. }
            | EventKind::WorktreeCreated { .. }
            | EventKind::DiffStat(_)
            | EventKind::Merged { .. }
            | EventKind::MergeUndone { .. }
            | EventKind::UndoRefused { .. }
            | EventKind::MergeConflict { .. }
            | EventKind::WorktreeRemoved { .. }
            | EventKind::Diff { .. }
            | EventKind::Idle
            | EventKind::Summary { .. }
            | EventKind::Quote(_)
            | EventKind::CheckpointStarted { .. }
            | EventKind::CheckpointTaken { .. }
            | EventKind::Rewound { .. }
            | EventKind::Checkpoints { .. }
            | EventKind::RewindRefused { .. }
            | EventKind::Files { .. }
            | EventKind::Models { .. }
            | EventKind::ModelSet { .. }
            | EventKind::ApprovalSet { .. }
            | EventKind::ReviewStarted { .. }
            | EventKind::ReviewFinished { .. }
            | EventKind::GoalSet { .. }
            | EventKind::GoalChecked(_)
            | EventKind::GoalEnded { .. }
            | EventKind::Batch(_) => {}
        }
        None
    }
}
