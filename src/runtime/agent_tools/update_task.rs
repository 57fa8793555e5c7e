//! `update_task`: the supervisor cancels, reopens or annotates a task of the board.

use super::{AgentTool, Call, Done, Failure, non_empty, parse};
use crate::model::ToolSpec;
use crate::roles::Audience;
use crate::runtime::board::ManualStatus;
use crate::tools::{Reach, ToolFacts, ToolKind};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

pub struct UpdateTask;

#[derive(Deserialize)]
struct Args {
    id: String,
    #[serde(default)]
    status: Option<ManualStatus>,
    #[serde(default)]
    notes: Option<String>,
}

#[async_trait]
impl AgentTool for UpdateTask {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "update_task".into(),
            description: "Cancel or reopen a task of the board, or add a note to it.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "status": {"type": "string", "enum": ["cancelled", "reopen"]},
                    "notes": {"type": "string"}
                },
                "required": ["id"]
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
        non_empty("id", &args.id)?;
        let out = cx
            .shared
            .tasks
            .update(cx.team, cx.caller, args.id.trim(), args.status, args.notes)
            .map_err(|e| Failure::Fixable(e.to_string()))?;
        Ok(Done::output(out.to_string()))
    }
}
