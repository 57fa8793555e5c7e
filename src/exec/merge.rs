//! `squad merge WORKER`: one `Op::MergeWorker` on a saved session (the latest, or
//! `--session ID`), through the same session core as `exec`, no model called. It merges a
//! worker's change that was kept unmerged on its branch because it did not pass its
//! checks. Exit 0 once merged; 1 when it conflicts (nothing changes in the workspace) or
//! cannot be merged (no such worker, nothing to merge), with the reason on stderr.

use super::ExecOutcome;
use super::review::shut_down;
use crate::protocol::{EventKind, Op};
use crate::runtime::SessionHandle;

/// Merges the change of `worker` and says what came of it.
pub async fn run(mut handle: SessionHandle, worker: String) -> ExecOutcome {
    let root = handle.info.root_agent;
    let _ = handle.ops.send(Op::MergeWorker { worker });
    let mut outcome = ExecOutcome {
        final_answer: String::new(),
        failure: None,
        interrupted: None,
        goal: None,
        nothing_changed: false,
    };
    while let Some(event) = handle.events.recv().await {
        let who = event.agent_id.short();
        match event.kind {
            EventKind::Merged { files, .. } => {
                outcome.final_answer = format!(
                    "merged the change of worker {who} into the workspace: {}",
                    files.join(", ")
                );
                println!("{}", outcome.final_answer);
                break;
            }
            EventKind::MergeConflict { conflicts } => {
                for c in &conflicts {
                    eprintln!("  {c}");
                }
                outcome.failure = Some(format!(
                    "the change of worker {who} conflicts with the workspace; nothing was merged"
                ));
                break;
            }
            EventKind::Error { message } if event.agent_id == root => {
                if message.starts_with(crate::protocol::MERGE_REFUSED) {
                    outcome.failure = Some(message);
                    break;
                }
                eprintln!("squad: {message}");
            }
            EventKind::Error { message } => eprintln!("squad: {message}"),
            // Ignored here: nothing else ends or tells of the merge.
            EventKind::SessionStarted { .. }
            | EventKind::AgentSpawned { .. }
            | EventKind::AgentBudget { .. }
            | EventKind::AgentSandbox { .. }
            | EventKind::AgentOptions(_)
            | EventKind::AgentStatus { .. }
            | EventKind::TurnStarted
            | EventKind::TurnFinished { .. }
            | EventKind::ItemAdded { .. }
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
            | EventKind::TaskUpdated { .. }
            | EventKind::MessageQueued { .. }
            | EventKind::Paused
            | EventKind::Resumed
            | EventKind::Stopped { .. }
            | EventKind::DeadlockDetected { .. }
            | EventKind::BudgetReached { .. }
            | EventKind::SessionBudgetSet { .. }
            | EventKind::StaleWorktreesRemoved { .. }
            | EventKind::WorktreeCreated { .. }
            | EventKind::DiffStat(_)
            | EventKind::MergeUndone { .. }
            | EventKind::UndoRefused { .. }
            | EventKind::WorktreeRemoved { .. }
            | EventKind::Diff { .. }
            | EventKind::Idle
            | EventKind::Summary { .. }
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
            | EventKind::GoalEnded { .. } => {}
        }
    }
    if outcome.final_answer.is_empty() && outcome.failure.is_none() {
        outcome.failure = Some("the session ended before the merge was done".into());
    }
    shut_down(&mut handle, false).await;
    outcome
}
