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
        // Nothing else ends or tells of the merge.
        if let EventKind::Merged { files, .. } = event.kind {
            outcome.final_answer = format!(
                "merged the change of worker {who} into the workspace: {}",
                files.join(", ")
            );
            println!("{}", outcome.final_answer);
            break;
        } else if let EventKind::MergeConflict { conflicts } = event.kind {
            for c in &conflicts {
                eprintln!("  {c}");
            }
            outcome.failure = Some(format!(
                "the change of worker {who} conflicts with the workspace; nothing was merged"
            ));
            break;
        } else if let EventKind::Error { message } = event.kind {
            if event.agent_id == root && message.starts_with(crate::protocol::MERGE_REFUSED) {
                outcome.failure = Some(message);
                break;
            }
            eprintln!("squad: {message}");
        }
    }
    if outcome.final_answer.is_empty() && outcome.failure.is_none() {
        outcome.failure = Some("the session ended before the merge was done".into());
    }
    shut_down(&mut handle, false).await;
    outcome
}
