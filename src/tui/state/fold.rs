//! The TUI's one fold over events: each kind goes to the concern that shows it (the
//! session's settings, an agent's life, its turn and conversation, the dialogs, the
//! team's control, the goal, worktrees and merges, the review, what was taken back) or
//! is named as ignored here. There is no catch-all arm: a new event kind does not compile
//! until this table says what it means on screen.

use super::SessionState;
use crate::protocol::{Event, EventKind as K};
use std::time::Instant;

impl SessionState {
    /// Folds one event into the state. `now` is when it arrived (elapsed times and wall
    /// times are measured from it, which keeps tests independent of the clock).
    pub fn apply(&mut self, ev: &Event, now: Instant) {
        let id = ev.agent_id;
        let live = ev.seq > self.replayed_seq;
        self.tasks.observe(ev);
        self.timeline.observe(ev, live.then_some(now));
        match &ev.kind {
            K::SessionStarted {
                session_id,
                workspace,
                model,
                role,
                approval,
                resumed,
                roles,
            } => self.session_started(
                session_id, workspace, model, role, *approval, *resumed, roles,
            ),
            K::ModelSet { model } => self.model_set(id, model, now),
            K::ApprovalSet { approval } => self.approval_set(id, *approval, now),
            K::Models { models, error } => self.models_listed(models, error.as_deref()),
            K::McpServer {
                server,
                state,
                transport,
                tools,
                error,
            } => self.mcp_server(server, *state, transport, tools, error),
            K::InstructionsLoaded { files, bytes, cut } => {
                self.instructions_loaded(id, files, *bytes, *cut, now)
            }
            K::RoleSaved { name, path } => self.role_saved(id, name, path, now),
            K::Summary { agents, totals } => self.summary = Some((agents.clone(), totals.clone())),
            K::Diff { text } => self.diff = Some((id, text.clone())),
            K::AgentSpawned {
                parent_id,
                role,
                model,
                task,
                depth,
            } => self.spawn(id, *parent_id, role, model, task, *depth, now),
            K::AgentStatus { status, reason, .. } => {
                self.agent_status(id, *status, reason, live, now)
            }
            K::AgentBudget { budget } => self.agent_entry(id, now).budget = *budget,
            K::AgentSandbox { sandbox } => {
                self.agent_entry(id, now).sandbox = Some(sandbox.clone())
            }
            K::AgentOptions(options) => self.agent_entry(id, now).options = options.clone(),
            K::Despawned { .. } => self.despawned(id, now),
            K::Released => self.released(id, now),
            K::TurnStarted => self.turn_started(id, now),
            K::TurnFinished { end } => self.turn_finished(id, *end, now),
            K::ItemAdded { item } => self.add_item(id, item, now),
            K::TextDelta { delta } => self.text_delta(id, delta, now),
            K::ToolCallEnd {
                call_id,
                duration_ms,
            } => self.tool_call_end(id, call_id, *duration_ms, now),
            K::Usage {
                prompt_tokens,
                completion_tokens,
                cost_usd,
                context_tokens,
                context_window,
                ..
            } => self.usage(
                id,
                *prompt_tokens,
                *completion_tokens,
                *cost_usd,
                (*context_tokens, *context_window),
                now,
            ),
            K::Compacted {
                tokens_before,
                tokens_after,
                context_window,
                replaced,
                ..
            } => self.compacted(
                id,
                (*tokens_before, *tokens_after, *context_window),
                *replaced,
                now,
            ),
            K::Retrying {
                attempt,
                max_attempts,
                reason,
                ..
            } => self.retrying(id, *attempt, *max_attempts, reason, now),
            K::Stalled { on, since_s } => self.stalled(id, on, *since_s, live, now),
            K::Unstalled => self.agent_entry(id, now).stalled = None,
            K::Notice { message } => self.notice(id, message.clone(), now),
            K::HookRan { .. } => self.hook_ran(id, &ev.kind, now),
            K::Error { message } => self.error(id, message, now),
            K::ResultReturned { result, .. } => self.result_returned(id, result, now),
            K::Verification(v) => self.verification(id, v, now),
            K::SupervisorMessage {
                supervisor_id,
                kind,
                text,
            } => self.supervisor_message(id, *supervisor_id, *kind, text, now),
            K::MessageQueued { text } => self.agent_entry(id, now).queued.push(text.clone()),
            K::TaskUpdated { task } => _ = self.board.update(task),
            K::DeadlockDetected { tasks } => self.deadlock(tasks, now),
            K::ApprovalRequested {
                request_id,
                role,
                tool,
                action,
            } => self.approval_requested(ev.seq, id, *request_id, role, tool, action, live, now),
            K::ApprovalResolved { request_id, .. } => _ = self.resolve_approval(*request_id),
            K::QuestionAsked {
                request_id,
                role,
                question,
                options,
            } => self.question_asked(ev.seq, id, *request_id, role, question, options, live, now),
            K::QuestionAnswered { request_id, .. } => _ = self.resolve_question(*request_id),
            K::Paused => self.paused(id, now),
            K::Resumed => self.resumed(id, now),
            K::Stopped { cancelled } => self.stopped(id, *cancelled, now),
            K::BudgetReached {
                scope,
                measure,
                spent,
                limit,
            } => self.budget_reached(id, *scope, *measure, *spent, *limit, now),
            K::SessionBudgetSet { limit_usd } => self.session_budget_set(id, *limit_usd, now),
            K::GoalSet { goal, spent_usd } => self.goal_set(id, goal, *spent_usd, now),
            K::GoalChecked(check) => self.goal_checked(id, check, now),
            K::GoalEnded { reason } => self.goal_ended(id, *reason, now),
            K::StaleWorktreesRemoved {
                worktrees,
                kept_branches,
            } => self.stale_worktrees_removed(id, worktrees.len(), kept_branches, now),
            K::WorktreeCreated { path, branch } => self.worktree_created(id, path, branch, now),
            K::DiffStat(stat) => self.diff_stat(id, *stat, now),
            K::MergeReport(report) => self.merge_report(id, report, now),
            K::Merged { files, .. } => self.merged(id, files, now),
            K::MergeConflict { conflicts } => self.merge_conflict(id, conflicts, now),
            K::WorktreeRemoved {
                discarded,
                kept,
                branch,
            } => self.worktree_removed(id, *discarded, kept.then_some(branch.as_str()), now),
            K::ReviewStarted { target, reviewers } => {
                self.review_started(id, target, reviewers, now)
            }
            K::ReviewFinished {
                target,
                findings,
                dropped,
                unanswered,
            } => self.review_finished(id, target, findings, dropped, unanswered, now),
            K::Rewound {
                message,
                files,
                removed,
                history,
            } => self.rewound(
                id,
                *message,
                files.len(),
                removed.len(),
                history.as_ref().map(Vec::len),
                now,
            ),
            K::RewindRefused { message, conflicts } => {
                self.rewind_refused(id, *message, conflicts, now)
            }
            K::MergeUndone { files } => self.merge_undone(id, files, now),
            K::UndoRefused { conflicts } => self.undo_refused(id, conflicts, now),
            // Ignored here. A call's line comes from the assistant item and its result from
            // the result item; an unanswered approval (an exec run read back) is told by the
            // call's result; deliveries and the idle tree show in statuses already;
            // checkpoints are listed by `/rewind` from the log, not drawn; the file list is
            // the composer's (`App::apply` hands it to `@` completion).
            K::ToolCallBegin { .. }
            | K::ApprovalUnanswered { .. }
            | K::ResultDelivered { .. }
            | K::InboxDelivered { .. }
            | K::Idle
            | K::CheckpointStarted { .. }
            | K::CheckpointTaken { .. }
            | K::Checkpoints { .. }
            | K::Files { .. } => {}
        }
    }
}
