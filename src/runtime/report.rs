//! What a supervisor is told about its workers' outcomes: the text of `wait_for_agents`
//! and of the notice that wakes a supervisor when its workers finish.

use super::team::Team;
use crate::protocol::{AgentId, AgentStatus};
use serde_json::{Value, json};

/// Reports the finished workers in `done` (marking their outcomes delivered) and lists
/// those in `running`; `news` from the task board comes first (a deadlock is critical).
pub fn results_report(
    team: &Team,
    done: &[AgentId],
    running: &[AgentId],
    news: Option<String>,
) -> String {
    let (outcomes, still) = team.take_outcomes(done, running);
    let results: Vec<Value> = outcomes
        .into_iter()
        .map(|o| {
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
                    entry["note"] =
                        json!("the worker failed; spawn a new one or do the work yourself");
                }
                AgentStatus::Cancelled => {
                    entry["note"] = json!("the worker was cancelled before it finished");
                }
                _ if has_result => {}
                _ => {
                    entry["note"] = json!(
                        "the worker ended its turn without return_results; its last message follows"
                    );
                    entry["last_message"] = json!(o.last_message.unwrap_or_default());
                }
            }
            entry
        })
        .collect();
    let still: Vec<Value> = still
        .into_iter()
        .map(|a| json!({"agent_id": a.id.to_string(), "role": a.role, "status": a.status.as_str()}))
        .collect();
    let header = if still.is_empty() {
        "Results of your workers:"
    } else {
        "Results of your finished workers (others are still running):"
    };
    let body = json!({"results": results, "still_running": still});
    let report = format!(
        "{header}\n{}",
        serde_json::to_string_pretty(&body).unwrap_or_else(|_| body.to_string())
    );
    match news {
        Some(news) => format!("{news}\n\n{report}"),
        None => report,
    }
}
