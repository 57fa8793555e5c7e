//! `claim_task`: a worker takes a ready task from the board itself (`tasks/claims.rs`):
//! one owner per task, one task per worker, and a task whose declared paths overlap a
//! running one's is refused naming its holder, or waited for when the task says so.

use super::{AgentTool, Call, Done, Failure, parse};
use crate::model::ToolSpec;
use crate::roles::Audience;
use crate::runtime::board::ClaimRefused;
use crate::tools::{Reach, ToolFacts, ToolKind};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use std::time::Duration;

/// The tool's name, for the code that must tell its calls apart.
pub const CLAIM_TASK: &str = "claim_task";

pub struct ClaimTask;

#[derive(Deserialize)]
struct Args {
    #[serde(default)]
    task_id: Option<String>,
}

/// How often a claim that waits for a lease looks again, besides the team's changes.
const RECHECK: Duration = Duration::from_millis(500);

#[async_trait]
impl AgentTool for ClaimTask {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: CLAIM_TASK.into(),
            description: "Take a ready task from the board (the first one, or task_id); \
                return_results when done."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {"task_id": {"type": "string"}}
            }),
            freeform: None,
        }
    }

    fn audience(&self) -> Audience {
        Audience::Workers
    }

    /// Planning, as a front end shows it.
    fn facts(&self, _args: &Value) -> ToolFacts {
        ToolFacts::new(ToolKind::Think, Reach::Team)
    }

    async fn call(&self, cx: &Call<'_>, args: Value) -> Result<Done, Failure> {
        let args: Args = parse(&self.spec(), args)?;
        let id = args
            .task_id
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty());
        let role = cx.team.role(cx.caller).unwrap_or_default();
        let tasks = cx.shared.tasks;
        let mut changes = cx.team.subscribe();
        let claimed = loop {
            match tasks.claim(cx.team, cx.caller, &role, id) {
                Ok(claimed) => break claimed,
                Err(ClaimRefused::Overlap { wait: true, .. }) => {
                    tokio::select! {
                        _ = changes.changed() => {}
                        _ = tokio::time::sleep(RECHECK) => {}
                        _ = cx.cancel.cancelled() => {
                            return Err(Failure::Fixable("interrupted while waiting for the task's paths to be free".into()));
                        }
                    }
                }
                Err(e) => return Err(Failure::Fixable(e.to_string())),
            }
        };
        let brief = tasks.brief(&claimed).unwrap_or_default();
        let mut out = json!({"task_id": claimed, "brief": brief});
        if let Some((_, paths)) = tasks.lease_of(cx.caller) {
            out["paths"] = json!(paths);
            out["note"] = json!("change only these paths; return_results when done");
        } else {
            out["note"] = json!("return_results when done");
        }
        Ok(Done::output(out.to_string()))
    }
}
