//! `plan_tasks`: the supervisor's plan on the session's task board.

use super::{AgentTool, Call, Done, Failure, parse};
use crate::model::ToolSpec;
use crate::roles::Audience;
use crate::runtime::board::PlannedTask;
use crate::tools::{Reach, ToolFacts, ToolKind};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

pub struct PlanTasks;

#[derive(Deserialize)]
struct Args {
    tasks: Vec<PlannedTask>,
}

#[async_trait]
impl AgentTool for PlanTasks {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "plan_tasks".into(),
            description:
                // A cycle or an unknown id is refused with an error that says so.
                "Put tasks on the session's board (or replace pending ones with the same id)."
                    .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "tasks": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "id": {"type": "string"},
                                "title": {"type": "string"},
                                "description": {"type": "string"},
                                "role": {"type": "string"},
                                "depends_on": {"type": "array", "items": {"type": "string"}}
                            },
                            "required": ["id", "title"]
                        }
                    }
                },
                "required": ["tasks"]
            }),
            freeform: None,
        }
    }

    fn audience(&self) -> Audience {
        Audience::Supervisors
    }

    /// Planning, as a front end shows it.
    fn facts(&self, _args: &Value) -> ToolFacts {
        ToolFacts::new(ToolKind::Think, Reach::Team)
    }

    async fn call(&self, cx: &Call<'_>, args: Value) -> Result<Done, Failure> {
        let args: Args = parse(&self.spec(), args)?;
        if args.tasks.is_empty() {
            return Err(Failure::Fixable(
                "`tasks` must list at least one task".into(),
            ));
        }
        // The user's `task_created` hooks hear a plan the board would take, and may refuse it.
        let tasks = cx.shared.tasks;
        tasks
            .check_plan(&args.tasks)
            .map_err(|e| Failure::Fixable(e.to_string()))?;
        if let Some(why) = cx.host.refuses_plan(&args.tasks).await {
            return Err(Failure::Fixable(why));
        }
        let board = tasks
            .plan(cx.team, cx.caller, args.tasks)
            .map_err(|e| Failure::Fixable(e.to_string()))?;
        Ok(Done::output(board.to_string()))
    }
}
