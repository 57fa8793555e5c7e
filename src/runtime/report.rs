//! What an agent is told at a model-call boundary: one notice batch with everything
//! pending for it (the messages in its inbox, its finished workers' outcomes, the task
//! board's news), most urgent first, so a worker's failure comes before results that
//! arrived earlier. The text of `wait_for_agents` and of the notice that wakes a
//! supervisor.

use super::inbox::{self, Notice};
use super::team::{Outcome, Team};
use crate::protocol::{AgentId, AgentStatus, Priority};
use serde_json::{Value, json};

/// Hands `to` everything pending for it as one text: `news` from the task board, the
/// outcomes of the finished workers in `done` (marked delivered; failures are critical),
/// the notices in its inbox, and the workers in `running` listed as still at work. `None`
/// when there is nothing to tell.
pub fn notice_batch(
    team: &Team,
    to: AgentId,
    done: &[AgentId],
    running: &[AgentId],
    news: Vec<Notice>,
) -> Option<String> {
    let board_quiet = news.is_empty();
    let mut notices = news;
    let (outcomes, still) = team.take_outcomes(done, running);
    let (failed, rest): (Vec<Outcome>, Vec<Outcome>) = outcomes
        .into_iter()
        .partition(|o| o.status == AgentStatus::Failed);
    if !failed.is_empty() {
        let body = json!({"results": failed.into_iter().map(entry).collect::<Vec<_>>()});
        notices.push(Notice::new(
            Priority::Critical,
            format!("CRITICAL — workers failed:\n{}", pretty(&body)),
        ));
    }
    if !rest.is_empty() || !still.is_empty() {
        let still: Vec<Value> = still
            .into_iter()
            .map(|a| json!({"agent_id": a.id.to_string(), "role": a.role, "status": a.status.as_str()}))
            .collect();
        let header = if still.is_empty() {
            "Results of your workers:"
        } else {
            "Results of your finished workers (others are still running):"
        };
        let all_done = still.is_empty() && board_quiet;
        let results: Vec<Value> = rest.into_iter().map(entry).collect();
        let body = json!({"results": results, "still_running": still});
        // A fact, not an instruction: what to do with it is the model's to decide (a
        // capable supervisor reads the files and runs the tests before it answers).
        let header = if all_done { DONE_HEADER } else { header };
        let text = format!("{header}\n{}", pretty(&body));
        notices.push(Notice::new(Priority::Normal, text));
    }
    notices.extend(team.take_notices(to));
    inbox::join(notices)
}

/// The header of the results when no worker runs and the board has no news.
const DONE_HEADER: &str = "Results of your workers (all of them have finished; none is running \
                           now):";

/// One worker's outcome as its supervisor reads it.
fn entry(o: Outcome) -> Value {
    let mut entry = json!({
        "agent_id": o.id.to_string(),
        "role": o.role,
        "status": o.status.as_str(),
    });
    // A result once returned is always reported, whatever happened after it.
    let has_result = o.result.is_some();
    if let Some(r) = o.result {
        entry["result"] = serde_json::to_value(r).unwrap_or(Value::Null);
    }
    match o.status {
        AgentStatus::Completed => {}
        AgentStatus::Failed => {
            entry["error"] = json!(o.failure.unwrap_or_else(|| "unknown error".into()));
            entry["note"] = json!("the worker failed; spawn a new one or do the work yourself");
        }
        AgentStatus::Cancelled => {
            entry["note"] = json!("the worker was cancelled before it finished");
        }
        _ if has_result => {}
        _ => {
            entry["note"] =
                json!("the worker ended its turn without return_results; its last message follows");
            entry["last_message"] = json!(o.last_message.unwrap_or_default());
        }
    }
    entry
}

fn pretty(body: &Value) -> String {
    serde_json::to_string_pretty(body).unwrap_or_else(|_| body.to_string())
}
