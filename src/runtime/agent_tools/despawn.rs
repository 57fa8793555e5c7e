//! `despawn_agent`: cancel a worker and everything below it.

use super::{AgentTool, Call, Done, Failure, non_empty, parse, resolve_child};
use crate::model::ToolSpec;
use crate::roles::Audience;
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

pub struct DespawnAgent;

#[derive(Deserialize)]
struct Args {
    agent_id: String,
}

#[async_trait]
impl AgentTool for DespawnAgent {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "despawn_agent".into(),
            description: "Cancel a worker of yours and its own workers.".into(),
            parameters: json!({
                "type": "object",
                "properties": {"agent_id": {"type": "string"}},
                "required": ["agent_id"]
            }),
            freeform: None,
        }
    }

    fn audience(&self) -> Audience {
        Audience::Supervisors
    }

    async fn call(&self, cx: &Call<'_>, args: Value) -> Result<Done, Failure> {
        let args: Args = parse(&self.spec(), args)?;
        non_empty("agent_id", &args.agent_id)?;
        let id = resolve_child(cx.team, cx.caller, &args.agent_id)?;
        if cx.team.is_released(id) {
            return Ok(Done::output(format!(
                "worker {} was released already: there is nothing to cancel",
                id.short()
            )));
        }
        let n = cx.team.cancel_subtree(id, "despawned by its supervisor");
        Ok(Done::output(format!(
            "cancelled worker {} ({n} agent(s) in its subtree)",
            id.short()
        )))
    }
}
