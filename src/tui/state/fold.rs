//! The TUI's one fold over events. `apply` is its table: one exhaustive match that hands
//! each kind to the concern that shows it (the session's settings, an agent in the tree,
//! its conversation, what it costs, the dialogs, the team's control and board, the goal,
//! results, worktrees and merges, the review and what was taken back) or names it as
//! ignored here. There is no catch-all arm: a new event kind does not compile until this
//! table says where it goes. Each concern then picks its kinds out of the event with
//! `if let` and calls its module (`session.rs`, `items.rs`, `turns.rs`, …).

use super::SessionState;
use crate::protocol::{Event, EventKind as K};
use std::time::Instant;

impl SessionState {
    /// Folds one event into the state. `now` is when it arrived (elapsed times and wall
    /// times are measured from it, which keeps tests independent of the clock).
    pub fn apply(&mut self, ev: &Event, now: Instant) {
        let live = ev.seq > self.replayed_seq;
        self.tasks.observe(ev);
        self.spend.observe(ev);
        self.timeline.observe(ev, live.then_some(now));
        match &ev.kind {
            K::SessionStarted { .. }
            | K::ModelSet { .. }
            | K::ApprovalSet { .. }
            | K::Models { .. }
            | K::McpServer { .. }
            | K::InstructionsLoaded { .. }
            | K::RoleSaved { .. }
            | K::Summary { .. } => self.fold_session(ev, now),
            K::AgentSpawned { .. }
            | K::AgentStatus { .. }
            | K::AgentSandbox { .. }
            | K::AgentOptions(_)
            | K::Stalled { .. }
            | K::Unstalled
            | K::MessageQueued { .. }
            | K::Despawned { .. }
            | K::Released => self.fold_agent(ev, live, now),
            K::TurnStarted
            | K::TurnFinished { .. }
            | K::ItemAdded { .. }
            | K::AgentMessagesDelivered { .. }
            | K::TextDelta { .. }
            | K::ToolCallEnd { .. }
            | K::Retrying { .. }
            | K::Notice { .. }
            | K::AgentMessage { .. }
            | K::HookRan { .. }
            | K::Error { .. } => self.fold_conversation(ev, now),
            K::Usage { .. }
            | K::Compacted { .. }
            | K::AgentBudget { .. }
            | K::BudgetReached { .. }
            | K::SessionBudgetSet { .. } => self.fold_cost(ev, now),
            K::ApprovalRequested { .. }
            | K::ApprovalResolved { .. }
            | K::QuestionAsked { .. }
            | K::QuestionAnswered { .. }
            | K::PlanSubmitted(_)
            | K::PlanDecided(_) => self.fold_dialog(ev, live, now),
            K::Paused
            | K::Resumed
            | K::Stopped { .. }
            | K::TaskUpdated { .. }
            | K::CoordinateOnly { .. }
            | K::DeadlockDetected { .. } => self.fold_control(ev, now),
            K::GoalSet { .. } | K::GoalChecked(_) | K::GoalEnded { .. } => self.fold_goal(ev, now),
            K::Batch(update) => self.batch_update(ev.agent_id, update, now),
            K::ResultReturned { .. } | K::Verification(_) | K::SupervisorMessage { .. } => {
                self.fold_result(ev, now)
            }
            K::StaleWorktreesRemoved { .. }
            | K::WorktreeCreated { .. }
            | K::DiffStat(_)
            | K::Diff { .. }
            | K::MergeReport(_)
            | K::Merged { .. }
            | K::MergeConflict { .. }
            | K::WorktreeRemoved { .. } => self.fold_worktree(ev, now),
            K::ReviewStarted { .. }
            | K::ReviewFinished { .. }
            | K::Rewound { .. }
            | K::RewindRefused { .. }
            | K::MergeUndone { .. }
            | K::UndoRefused { .. } => self.fold_review_and_taken_back(ev, now),
            // Ignored here. A call's line comes from the assistant item and its result from
            // the result item; an unanswered approval (an exec run read back) is told by the
            // call's result; deliveries and the idle tree show in statuses already;
            // checkpoints are listed by `/rewind` from the log, not drawn; the file list is
            // the composer's (`App::apply` hands it to `@` completion); a quote shows in
            // its spawn's approval, and `spend` above keeps it for `/cost`; where a placed
            // worker runs shows from its options.
            K::ToolCallBegin { .. }
            | K::Quote(_)
            | K::FarSide(_)
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

    /// The session's settings and figures: how it started, the model and approval the
    /// user set, the server's models, MCP servers, project instructions, a role saved,
    /// the closing summary.
    fn fold_session(&mut self, ev: &Event, now: Instant) {
        let id = ev.agent_id;
        if let K::SessionStarted {
            session_id,
            workspace,
            model,
            role,
            approval,
            resumed,
            roles,
        } = &ev.kind
        {
            self.session_started(
                session_id, workspace, model, role, *approval, *resumed, roles,
            );
        } else if let K::ModelSet { model } = &ev.kind {
            self.model_set(id, model, now);
        } else if let K::ApprovalSet { approval } = &ev.kind {
            self.approval_set(id, *approval, now);
        } else if let K::Models { models, error } = &ev.kind {
            self.models_listed(models, error.as_deref());
        } else if let K::McpServer {
            server,
            state,
            transport,
            tools,
            error,
        } = &ev.kind
        {
            self.mcp_server(server, *state, transport, tools, error);
        } else if let K::InstructionsLoaded { files, bytes, cut } = &ev.kind {
            self.instructions_loaded(id, files, *bytes, *cut, now);
        } else if let K::RoleSaved { name, path } = &ev.kind {
            self.role_saved(id, name, path, now);
        } else if let K::Summary { agents, totals, .. } = &ev.kind {
            self.summary = Some((agents.clone(), totals.clone()));
        }
    }

    /// An agent in the tree: spawned, its status and stalls, its sandbox and options,
    /// messages queued for it, and the end of its life (despawned, released).
    fn fold_agent(&mut self, ev: &Event, live: bool, now: Instant) {
        let id = ev.agent_id;
        if let K::AgentSpawned {
            parent_id,
            role,
            model,
            task,
            depth,
        } = &ev.kind
        {
            self.spawn(id, *parent_id, role, model, task, *depth, now);
        } else if let K::AgentStatus { status, reason, .. } = &ev.kind {
            self.agent_status(id, *status, reason, live, now);
        } else if let K::AgentSandbox { sandbox } = &ev.kind {
            self.agent_entry(id, now).sandbox = Some(sandbox.clone());
        } else if let K::AgentOptions(options) = &ev.kind {
            self.agent_entry(id, now).options = options.clone();
        } else if let K::Stalled { on, since_s } = &ev.kind {
            self.stalled(id, on, *since_s, live, now);
        } else if matches!(ev.kind, K::Unstalled) {
            self.agent_entry(id, now).stalled = None;
        } else if let K::MessageQueued { text } = &ev.kind {
            self.agent_entry(id, now).queued.push(text.clone());
        } else if matches!(ev.kind, K::Despawned { .. }) {
            self.despawned(id, now);
        } else if matches!(ev.kind, K::Released) {
            self.released(id, now);
        }
    }

    /// An agent's conversation: its turns, history items, streamed text, tool timings,
    /// retries, notices, hooks and errors.
    fn fold_conversation(&mut self, ev: &Event, now: Instant) {
        let id = ev.agent_id;
        if matches!(ev.kind, K::TurnStarted) {
            self.turn_started(id, now);
        } else if let K::TurnFinished { end } = &ev.kind {
            self.turn_finished(id, *end, now);
        } else if let K::ItemAdded { item } | K::AgentMessagesDelivered { item, .. } = &ev.kind {
            self.add_item(id, item, now);
        } else if let K::TextDelta { delta } = &ev.kind {
            self.text_delta(id, delta, now);
        } else if let K::ToolCallEnd {
            call_id,
            duration_ms,
        } = &ev.kind
        {
            self.tool_call_end(id, call_id, *duration_ms, now);
        } else if let K::Retrying {
            attempt,
            max_attempts,
            reason,
            ..
        } = &ev.kind
        {
            self.retrying(id, *attempt, *max_attempts, reason, now);
        } else if let K::Notice { message } = &ev.kind {
            self.notice(id, message.clone(), now);
        } else if let K::AgentMessage { to, text, .. } = &ev.kind {
            self.agent_message(id, *to, text, now);
        } else if matches!(ev.kind, K::HookRan { .. }) {
            self.hook_ran(id, &ev.kind, now);
        } else if let K::Error { message } = &ev.kind {
            self.error(id, message, now);
        }
    }

    /// What the work costs: token use and the context, compaction, an agent's budget, a
    /// budget reached, the session's limit set.
    fn fold_cost(&mut self, ev: &Event, now: Instant) {
        let id = ev.agent_id;
        if let K::Usage {
            prompt_tokens,
            completion_tokens,
            cost_usd,
            context_tokens,
            context_window,
            ..
        } = &ev.kind
        {
            let context = (*context_tokens, *context_window);
            self.usage(
                id,
                *prompt_tokens,
                *completion_tokens,
                *cost_usd,
                context,
                now,
            );
        } else if let K::Compacted {
            tokens_before,
            tokens_after,
            context_window,
            replaced,
            ..
        } = &ev.kind
        {
            let tokens = (*tokens_before, *tokens_after, *context_window);
            self.compacted(id, tokens, *replaced, now);
        } else if let K::AgentBudget { budget } = &ev.kind {
            self.agent_entry(id, now).budget = *budget;
        } else if let K::BudgetReached {
            scope,
            measure,
            spent,
            limit,
        } = &ev.kind
        {
            self.budget_reached(id, *scope, *measure, *spent, *limit, now);
        } else if let K::SessionBudgetSet { limit_usd } = &ev.kind {
            self.session_budget_set(id, *limit_usd, now);
        }
    }

    /// What waits for the user: approvals and questions asked, and their answers.
    fn fold_dialog(&mut self, ev: &Event, live: bool, now: Instant) {
        let (seq, id) = (ev.seq, ev.agent_id);
        if let K::ApprovalRequested {
            request_id,
            role,
            tool,
            action,
        } = &ev.kind
        {
            self.approval_requested(seq, id, *request_id, role, tool, action, live, now);
        } else if let K::ApprovalResolved { request_id, .. } = &ev.kind {
            _ = self.resolve_approval(*request_id);
        } else if let K::QuestionAsked {
            request_id,
            role,
            question,
            options,
        } = &ev.kind
        {
            self.question_asked(seq, id, *request_id, role, question, options, live, now);
        } else if let K::QuestionAnswered { request_id, .. } = &ev.kind {
            _ = self.resolve_question(*request_id);
        } else if let K::PlanSubmitted(p) = &ev.kind {
            self.plan_submitted(seq, id, p, now);
        } else if let K::PlanDecided(d) = &ev.kind {
            _ = self.resolve_plan(id, d.plan_id);
        }
    }

    /// The team as a whole: paused, resumed, stopped; the board's tasks and a deadlock
    /// among them.
    fn fold_control(&mut self, ev: &Event, now: Instant) {
        let id = ev.agent_id;
        if matches!(ev.kind, K::Paused) {
            self.paused(id, now);
        } else if matches!(ev.kind, K::Resumed) {
            self.resumed(id, now);
        } else if let K::Stopped { cancelled } = &ev.kind {
            self.stopped(id, *cancelled, now);
        } else if let K::TaskUpdated { task } = &ev.kind {
            _ = self.board.update(task);
        } else if let K::DeadlockDetected { tasks } = &ev.kind {
            self.deadlock(tasks, now);
        } else if let K::CoordinateOnly { on } = &ev.kind {
            self.coordinate_only = *on;
        }
    }

    /// The user's goal: set, checked, ended.
    fn fold_goal(&mut self, ev: &Event, now: Instant) {
        let id = ev.agent_id;
        if let K::GoalSet { goal, spent_usd } = &ev.kind {
            self.goal_set(id, goal, *spent_usd, now);
        } else if let K::GoalChecked(check) = &ev.kind {
            self.goal_checked(id, check, now);
        } else if let K::GoalEnded { reason } = &ev.kind {
            self.goal_ended(id, *reason, now);
        }
    }

    /// What an agent's work came to: its result, the verdict on it, its messages to its
    /// supervisor.
    fn fold_result(&mut self, ev: &Event, now: Instant) {
        let id = ev.agent_id;
        if let K::ResultReturned { result, .. } = &ev.kind {
            self.result_returned(id, result, now);
        } else if let K::Verification(v) = &ev.kind {
            self.verification(id, v, now);
        } else if let K::SupervisorMessage {
            supervisor_id,
            kind,
            text,
        } = &ev.kind
        {
            self.supervisor_message(id, *supervisor_id, *kind, text, now);
        }
    }

    /// Workers' worktrees and their changes: created, removed, the size of a change and
    /// its diff, merged or in conflict.
    fn fold_worktree(&mut self, ev: &Event, now: Instant) {
        let id = ev.agent_id;
        if let K::StaleWorktreesRemoved {
            worktrees,
            kept_branches,
        } = &ev.kind
        {
            self.stale_worktrees_removed(id, worktrees.len(), kept_branches, now);
        } else if let K::WorktreeCreated { path, branch } = &ev.kind {
            self.worktree_created(id, path, branch, now);
        } else if let K::DiffStat(stat) = &ev.kind {
            self.diff_stat(id, *stat, now);
        } else if let K::Diff { text } = &ev.kind {
            self.diff = Some((id, text.clone()));
        } else if let K::MergeReport(report) = &ev.kind {
            self.merge_report(id, report, now);
        } else if let K::Merged { files, .. } = &ev.kind {
            self.merged(id, files, now);
        } else if let K::MergeConflict { conflicts } = &ev.kind {
            self.merge_conflict(id, conflicts, now);
        } else if let K::WorktreeRemoved {
            discarded,
            kept,
            branch,
        } = &ev.kind
        {
            self.worktree_removed(id, *discarded, kept.then_some(branch.as_str()), now);
        }
    }

    /// `/review` started and finished; what `/rewind` and `/undo` took back or could not.
    fn fold_review_and_taken_back(&mut self, ev: &Event, now: Instant) {
        let id = ev.agent_id;
        if let K::ReviewStarted { target, reviewers } = &ev.kind {
            self.review_started(id, target, reviewers, now);
        } else if let K::ReviewFinished {
            target,
            findings,
            dropped,
            unanswered,
        } = &ev.kind
        {
            self.review_finished(id, target, findings, dropped, unanswered, now);
        } else if let K::Rewound {
            message,
            files,
            removed,
            history,
        } = &ev.kind
        {
            let history = history.as_ref().map(Vec::len);
            self.rewound(id, *message, files.len(), removed.len(), history, now);
        } else if let K::RewindRefused { message, conflicts } = &ev.kind {
            self.rewind_refused(id, *message, conflicts, now);
        } else if let K::MergeUndone { files } = &ev.kind {
            self.merge_undone(id, files, now);
        } else if let K::UndoRefused { conflicts } = &ev.kind {
            self.undo_refused(id, conflicts, now);
        }
    }
}
