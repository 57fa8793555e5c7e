//! Human progress lines on stderr for `exec` text mode.

use super::board::BoardLines;
use crate::protocol::{
    AgentId, ApprovalAction, BudgetReached, BudgetScope, Declined, Event, EventKind, HistoryItem,
    McpServerState, Verdict,
};
use crate::text::{clip, describe_result, key_argument};
use std::collections::HashMap;

pub struct Progress {
    root: AgentId,
    board: BoardLines,
    roles: HashMap<AgentId, String>,
    /// Calls named by the assistant items, by id, until they begin: (name, arguments).
    calls: HashMap<String, (String, String)>,
}

impl Progress {
    pub fn new(root: AgentId) -> Self {
        Self {
            root,
            board: BoardLines::default(),
            roles: HashMap::new(),
            calls: HashMap::new(),
        }
    }

    fn who(&self, id: AgentId) -> String {
        Self::name(&self.roles, self.root, id)
    }

    fn name(roles: &HashMap<AgentId, String>, root: AgentId, id: AgentId) -> String {
        // Before the persona is announced, what the root says at start is squad's own.
        let unknown = if id == root { "squad" } else { "agent" };
        let role = roles.get(&id).map_or(unknown, String::as_str);
        if id == root {
            role.to_string()
        } else {
            format!("{role} {}", id.short())
        }
    }

    /// The board, when tasks changed since it was last printed.
    pub fn board_block(&mut self) -> Option<String> {
        let (roles, root) = (&self.roles, self.root);
        self.board.block(|id| Self::name(roles, root, id))
    }

    /// The progress line an event makes, if any.
    pub fn line(&mut self, event: &Event) -> Option<String> {
        let id = event.agent_id;
        match &event.kind {
            EventKind::AgentSpawned {
                role,
                task,
                parent_id,
                ..
            } => {
                self.roles.insert(id, role.clone());
                parent_id.map(|_| format!("+ spawned {} — {}", self.who(id), clip(task, 100)))
            }
            EventKind::ItemAdded { item } => self.item(id, item),
            EventKind::AgentMessage { to, text, .. } => Some(format!(
                "✉ [{}] to {}: {}",
                self.who(id),
                self.who(*to),
                clip(&crate::text::one_line(text), 200)
            )),
            EventKind::PlanSubmitted(p) => Some(format!("▤ [{}] {}", self.who(id), p.line())),
            EventKind::PlanDecided(d) => Some(format!("▤ [{}] {}", self.who(id), d.line())),
            EventKind::ToolCallBegin { call_id } => {
                self.calls.remove(call_id).map(|(name, arguments)| {
                    format!(
                        "→ [{}] {name} {}",
                        self.who(id),
                        clip(&key_argument(&arguments), 100)
                    )
                })
            }
            EventKind::Retrying {
                attempt,
                max_attempts,
                delay_ms,
                reason,
            } => Some(format!(
                "  … [{}] retrying ({attempt}/{max_attempts}) in {delay_ms} ms: {reason}",
                self.who(id)
            )),
            EventKind::Error { message } => Some(format!("! [{}] {message}", self.who(id))),
            EventKind::Notice { message } => Some(format!("  [{}] {message}", self.who(id))),
            EventKind::HookRan { .. } => event
                .kind
                .hook_summary()
                .map(|line| format!("  [{}] {line}", self.who(id))),
            EventKind::Stalled { on, since_s } => Some(format!(
                "  ! [{}] stalled: no progress on the {on} for {since_s}s",
                self.who(id)
            )),
            EventKind::Unstalled => Some(format!("  [{}] going again", self.who(id))),
            EventKind::GoalSet { goal, .. } => Some(format!(
                "◎ goal: {} — met when {} (at most {} turns)",
                clip(goal.text.trim(), 100),
                goal.end(),
                goal.max_turns
            )),
            EventKind::GoalChecked(check) => Some(check.line()),
            EventKind::GoalEnded { reason } => Some(format!("◎ goal {}", reason.as_str())),
            EventKind::Batch(update) => update.line(),
            EventKind::BudgetReached {
                scope,
                measure,
                spent,
                limit,
            } => {
                let reached = BudgetReached {
                    measure: *measure,
                    spent: *spent,
                    limit: *limit,
                };
                Some(match scope {
                    BudgetScope::Agent => format!("! [{}] {reached}: stopped", self.who(id)),
                    // Said before the calls the stop cuts short report it.
                    BudgetScope::Session => {
                        format!("! session {reached}: stopping the run")
                    }
                })
            }
            // Failures come as errors; a server coming up is worth one line.
            EventKind::McpServer {
                server,
                state: McpServerState::Ready,
                tools,
                ..
            } => Some(format!(
                "+ MCP server {server} ready ({} tools)",
                tools.len()
            )),
            EventKind::ApprovalRequested { tool, action, .. } => Some(format!(
                "? [{}] {tool} needs approval: {}",
                self.who(id),
                match action {
                    ApprovalAction::Command { command }
                    | ApprovalAction::SandboxedCommand { command, .. } => command.clone(),
                    ApprovalAction::Escalation { command, reason } => {
                        format!("{command} (outside the sandbox: {reason})")
                    }
                    ApprovalAction::FileChange { path, .. } => path.clone(),
                    ApprovalAction::Patch { paths, .. } => paths.join(", "),
                    ApprovalAction::Spawn { role, .. } => format!("spawn {role}"),
                    ApprovalAction::McpTool { server, tool, .. } => format!("{server}: {tool}"),
                    ApprovalAction::Hook { command, .. } => format!("changed hook {command}"),
                }
            )),
            EventKind::QuestionAsked {
                question, options, ..
            } => {
                let mut line = format!(
                    "? [{}] asks the user: {}",
                    self.who(id),
                    clip(question, 300)
                );
                if !options.is_empty() {
                    let numbered: Vec<String> = options
                        .iter()
                        .enumerate()
                        .map(|(i, o)| format!("{} {}", i + 1, clip(o, 60)))
                        .collect();
                    line.push_str(&format!(" [{}]", numbered.join(" · ")));
                }
                Some(line)
            }
            EventKind::QuestionAnswered {
                answer, declined, ..
            } => Some(match (answer, declined) {
                (Some(answer), _) => format!("  answered: {}", clip(answer, 200)),
                (None, Some(Declined::NoUser)) => {
                    "  nobody can answer here: it goes on with its best judgment".to_string()
                }
                (None, why) => format!("  {}", why.unwrap_or(Declined::User).as_str()),
            }),
            EventKind::ResultReturned { result, .. } => Some(format!(
                "✓ [{}] result — {}",
                self.who(id),
                describe_result(result)
            )),
            EventKind::Verification(v) => Some(self.verdict(id, v)),
            EventKind::SupervisorMessage {
                supervisor_id,
                kind,
                text,
            } => Some(format!(
                "✉ [{}] {} to {}: {}",
                self.who(id),
                kind.as_str(),
                self.who(*supervisor_id),
                clip(&crate::text::one_line(text), 200)
            )),
            // Gathered into one block per burst: `board_block`.
            EventKind::TaskUpdated { task } => {
                self.board.update(task);
                None
            }
            EventKind::Compacted {
                tokens_before,
                tokens_after,
                context_window,
                replaced,
                ..
            } => Some(format!(
                "⇣ [{}] context compacted: {replaced} items summarized, ~{tokens_before} → ~{tokens_after} of {context_window} tokens",
                self.who(id)
            )),
            EventKind::InstructionsLoaded { files, bytes, cut } => Some(format!(
                "project instructions: {} ({bytes} bytes{})",
                files
                    .iter()
                    .map(|f| f.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                if *cut { ", cut to the limit" } else { "" }
            )),
            EventKind::AgentStatus {
                status,
                reason: Some(reason),
                ..
            } => Some(format!("  [{}] {status}: {reason}", self.who(id))),
            EventKind::Merged { files, .. } => Some(format!(
                "⇄ [{}] merged into the workspace: {}",
                self.who(id),
                if files.is_empty() {
                    "(already there)".to_string()
                } else {
                    clip(&files.join(", "), 200)
                }
            )),
            EventKind::MergeConflict { conflicts } => Some(format!(
                "✗ [{}] merge conflict, workspace unchanged: {}",
                self.who(id),
                clip(
                    &conflicts
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join("; "),
                    300
                )
            )),
            EventKind::MergeReport(r) if r.state == crate::protocol::MergeState::FailedChecks => {
                Some(format!(
                    "✗ [{}] unmerged (failed checks): {}",
                    self.who(id),
                    clip(&r.note, 400)
                ))
            }
            EventKind::StaleWorktreesRemoved {
                worktrees,
                kept_branches,
            } => Some(crate::protocol::stale_worktrees_message(
                worktrees.len(),
                kept_branches,
            )),
            // Ignored here: no progress line (the table at the end counts the rest).
            EventKind::SessionStarted { .. }
            | EventKind::AgentBudget { .. }
            | EventKind::AgentSandbox { .. }
            | EventKind::AgentOptions(_)
            | EventKind::FarSide(_)
            | EventKind::AgentStatus { .. }
            | EventKind::TurnStarted
            | EventKind::TurnFinished { .. }
            | EventKind::TextDelta { .. }
            | EventKind::ToolCallEnd { .. }
            | EventKind::ApprovalResolved { .. }
            | EventKind::ApprovalUnanswered { .. }
            | EventKind::Usage { .. }
            | EventKind::MergeReport(_)
            | EventKind::ResultDelivered { .. }
            | EventKind::Despawned { .. }
            | EventKind::Released
            | EventKind::RoleSaved { .. }
            | EventKind::InboxDelivered { .. }
            | EventKind::McpServer { .. }
            | EventKind::MessageQueued { .. }
            | EventKind::AgentMessagesDelivered { .. }
            | EventKind::CoordinateOnly { .. }
            | EventKind::Paused
            | EventKind::Resumed
            | EventKind::Stopped { .. }
            | EventKind::DeadlockDetected { .. }
            | EventKind::SessionBudgetSet { .. }
            | EventKind::WorktreeCreated { .. }
            | EventKind::DiffStat(_)
            | EventKind::MergeUndone { .. }
            | EventKind::UndoRefused { .. }
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
            | EventKind::ReviewFinished { .. } => None,
        }
    }

    /// `✗ [implementer 1a2b3c4d] verification 40/100, correction 1 of 3` and one line per
    /// finding; `✓ … verified 100/100 after 1 correction`.
    fn verdict(&self, id: AgentId, v: &Verdict) -> String {
        let who = self.who(id);
        let corrections = v.attempt.saturating_sub(1);
        let mut out = if v.unchecked {
            format!("· [{who}] unchecked: nothing to check (no change, no test command)")
        } else if v.passed {
            let after = match corrections {
                0 => String::new(),
                1 => " after 1 correction".to_string(),
                n => format!(" after {n} corrections"),
            };
            format!("✓ [{who}] verified {}{after}", v.score_text())
        } else if v.attempt <= v.max_corrections {
            format!(
                "✗ [{who}] verification {}, correction {} of {}",
                v.score_text(),
                v.attempt,
                v.max_corrections
            )
        } else {
            format!(
                "✗ [{who}] verification {} after {corrections} correction(s): goes up as failed",
                v.score_text()
            )
        };
        for (label, f) in v
            .failures
            .iter()
            .map(|f| ("error  ", f))
            .chain(v.warnings.iter().map(|f| ("warning", f)))
        {
            out.push_str(&format!(
                "\n    {label} {}",
                clip(f.message.lines().next().unwrap_or(""), 160)
            ));
        }
        out
    }

    fn item(&mut self, id: AgentId, item: &HistoryItem) -> Option<String> {
        match item {
            HistoryItem::Assistant { tool_calls, .. } => {
                for c in tool_calls {
                    self.calls
                        .insert(c.id.clone(), (c.name.clone(), c.arguments.clone()));
                }
                None
            }
            HistoryItem::ToolResult {
                name,
                output,
                is_error: true,
                call_id,
            } => {
                self.calls.remove(call_id);
                Some(format!(
                    "  ✗ {name}: {}",
                    clip(output.lines().next().unwrap_or(""), 200)
                ))
            }
            HistoryItem::Handoff {
                from, to, reason, ..
            } => {
                self.roles.insert(id, to.clone());
                Some(format!("⇄ {from} → {to}: {reason}"))
            }
            _ => None,
        }
    }
}
