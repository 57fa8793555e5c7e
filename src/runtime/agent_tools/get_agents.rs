//! `get_agents`: the caller's workers at a glance.

use super::{AgentTool, Call, Done, Failure};
use crate::model::ToolSpec;
use crate::roles::Audience;
use crate::text::clip;
use async_trait::async_trait;
use serde_json::{Value, json};

pub struct GetAgents;

#[async_trait]
impl AgentTool for GetAgents {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "get_agents".into(),
            description: "Your workers: status, role, task, whether a result is ready.".into(),
            parameters: json!({"type": "object", "properties": {}}),
        }
    }

    fn audience(&self) -> Audience {
        Audience::Supervisors
    }

    fn concurrent(&self) -> bool {
        true
    }

    async fn call(&self, cx: &Call<'_>, _args: Value) -> Result<Done, Failure> {
        let children = cx.team.child_infos(cx.caller);
        let mut counts = serde_json::Map::new();
        let list: Vec<Value> = children
            .iter()
            .map(|a| {
                let n = counts.entry(a.status.as_str()).or_insert(json!(0));
                *n = json!(n.as_u64().unwrap_or(0) + 1);
                let mut entry = json!({
                    "agent_id": a.id.to_string(),
                    "role": a.role,
                    "status": a.status.as_str(),
                    "task": clip(&a.task, 120),
                    "has_result": a.has_result,
                });
                if let Some(v) = &a.verification {
                    entry["verification"] = json!({
                        "passed": v.passed,
                        "score": v.score,
                        "attempt": v.attempt,
                        "errors": v.failures.len(),
                    });
                }
                entry
            })
            .collect();
        Ok(Done::output(
            json!({"agents": list, "counts": counts, "total": children.len()}).to_string(),
        ))
    }
}
