//! `get_tasks`: the session's task board.

use super::{AgentTool, Call, Done, Failure};
use crate::model::ToolSpec;
use crate::roles::Audience;
use crate::tools::{Reach, ToolFacts, ToolKind};
use async_trait::async_trait;
use serde_json::{Value, json};

pub struct GetTasks;

#[async_trait]
impl AgentTool for GetTasks {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "get_tasks".into(),
            description: "The task board.".into(),
            parameters: json!({"type": "object", "properties": {}}),
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

    fn concurrent(&self) -> bool {
        true
    }

    async fn call(&self, cx: &Call<'_>, _args: Value) -> Result<Done, Failure> {
        Ok(Done::output(cx.shared.tasks.board().to_string()))
    }
}
