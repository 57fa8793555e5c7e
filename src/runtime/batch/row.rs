//! One row: its worker started through `spawn_agent`'s path, and its outcome judged (a
//! result that passed its checks, merged, and matches the schema; else why not).

use super::super::agent_tools::{AgentTool, Call, Failure, SpawnAgent};
use super::super::team::Outcome;
use super::plan::Plan;
use crate::batch::rows::Row;
use crate::protocol::{AgentId, AgentStatus, MergeState, ResultStatus};
use serde_json::{Value, json};

/// The row's first message: its filled instruction, last (after everything the rows
/// share), and on a retry why the last attempt did not count.
pub fn task_text(plan: &Plan, row: &Row, last_error: Option<&str>) -> String {
    let mut text = plan.template.fill(row);
    if let Some(why) = last_error {
        text.push_str("\n\n# Your earlier attempt at this row did not count\n");
        text.push_str(why);
    }
    text
}

/// Starts a worker on `row` as `spawn_agent` would; its id, or why it could not start.
pub async fn start(
    cx: &Call<'_>,
    plan: &Plan,
    row: &Row,
    last_error: Option<&str>,
) -> Result<AgentId, String> {
    let spec = &plan.spec;
    let mut args = json!({
        "role_name": spec.role,
        "task_prompt": task_text(plan, row, last_error),
        "name": format!("row {}", row.id),
        "instructions": plan.instructions,
    });
    if !spec.budget.is_unlimited() {
        args["budget"] = json!(spec.budget);
    }
    let done = SpawnAgent.call(cx, args).await.map_err(|f| match f {
        Failure::Fixable(m) | Failure::Fatal(m) => m,
    })?;
    let reply: Value = serde_json::from_str(&done.output).map_err(|e| e.to_string())?;
    reply["agent_id"]
        .as_str()
        .and_then(AgentId::parse)
        .ok_or_else(|| format!("spawn_agent gave no agent_id: {}", done.output))
}

/// The row's result from its worker's outcome, or why the attempt does not count.
pub fn judge(outcome: &Outcome, schema: Option<&Value>) -> Result<Value, String> {
    let summary = match (outcome.status, &outcome.result) {
        (AgentStatus::Completed, Some(r)) => {
            if r.status != ResultStatus::Success {
                return Err(format!(
                    "the worker reported {}: {}",
                    r.status.as_str(),
                    r.summary
                ));
            }
            if let Some(v) = r.verification.as_ref().filter(|v| !v.passed) {
                return Err(format!(
                    "its result did not pass its checks ({} error(s))",
                    v.failures.len()
                ));
            }
            if let Some(m) = r.merge.as_ref().filter(|m| !merged(m.state)) {
                return Err(format!(
                    "its change did not merge: {}",
                    m.conflicts.join("; ")
                ));
            }
            r.summary.clone()
        }
        // A worker whose role answers in words: its last message is its answer.
        (AgentStatus::Completed | AgentStatus::Inactive, None) => {
            outcome.last_message.clone().unwrap_or_default()
        }
        (status, _) => {
            return Err(outcome
                .failure
                .clone()
                .unwrap_or_else(|| format!("the worker ended {status:?} without a result")));
        }
    };
    crate::batch::schema::row_result(&summary, schema)
}

fn merged(state: MergeState) -> bool {
    matches!(state, MergeState::Merged | MergeState::Pending)
}
