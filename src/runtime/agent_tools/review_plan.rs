//! `review_plan`: a supervisor approves the plan its `plan_first` worker submitted (its
//! writing tools come back) or rejects it with a reason the worker reads. Offered only to
//! supervisors whose role may spawn a `plan_first` role (`runtime/plan/gate.rs`).

use super::{AgentTool, Call, Done, Failure, parse, resolve_child};
use crate::model::ToolSpec;
use crate::roles::Audience;
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

/// The tool's name, for the code that must tell its calls apart.
pub const REVIEW_PLAN: &str = "review_plan";

pub struct ReviewPlan;

#[derive(Deserialize)]
struct Args {
    agent_id: String,
    approve: bool,
    #[serde(default)]
    reason: String,
}

#[async_trait]
impl AgentTool for ReviewPlan {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: REVIEW_PLAN.into(),
            description: "Approve a worker's submitted plan (it gets its writing tools) or \
                reject it with a reason it can act on."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "agent_id": {"type": "string"},
                    "approve": {"type": "boolean"},
                    "reason": {"type": "string"}
                },
                "required": ["agent_id", "approve"]
            }),
            freeform: None,
        }
    }

    fn audience(&self) -> Audience {
        Audience::Plan
    }

    async fn call(&self, cx: &Call<'_>, args: Value) -> Result<Done, Failure> {
        let args: Args = parse(&self.spec(), args)?;
        let worker = resolve_child(cx.team, cx.caller, &args.agent_id)?;
        (cx.shared.plans)
            .decide(cx.team, worker, args.approve, &args.reason, Some(cx.caller))
            .map_err(|e| Failure::Fixable(e.to_string()))?;
        Ok(Done::output(if args.approve {
            format!(
                "approved: worker {} has its writing tools now",
                worker.short()
            )
        } else {
            format!(
                "rejected: worker {} reads your reason and revises",
                worker.short()
            )
        }))
    }
}
