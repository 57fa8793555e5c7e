//! `submit_plan`: a `plan_first` worker hands its plan to its supervisor (and the user, who
//! sees it as a dialog) and waits for the decision; approved, its writing tools come back
//! at its next request; rejected, it reads the reason and submits again (`runtime/plan`).
//! Offered only to `plan_first` workers whose plan is not approved (`plan/gate.rs`).

use super::{AgentTool, Call, Done, Failure, non_empty, parse};
use crate::model::ToolSpec;
use crate::protocol::AgentStatus;
use crate::roles::Audience;
use crate::runtime::plan::{Decision, Submitted};
use crate::tools::{Reach, ToolFacts, ToolKind};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

/// The tool's name, for the code that must tell its calls apart.
pub const SUBMIT_PLAN: &str = "submit_plan";

/// Longest plan kept: it is read by a supervisor whose context all its workers share.
const MAX_PLAN_BYTES: usize = 6000;

pub struct SubmitPlan;

#[derive(Deserialize)]
struct Args {
    plan: String,
}

#[async_trait]
impl AgentTool for SubmitPlan {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: SUBMIT_PLAN.into(),
            description: "Submit your plan (what you will change, where, how you will check \
                it) and wait for your supervisor's decision. You have only reading tools \
                until it is approved; rejected, you get the reason: revise and submit again."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {"plan": {"type": "string"}},
                "required": ["plan"]
            }),
            freeform: None,
        }
    }

    fn audience(&self) -> Audience {
        Audience::Plan
    }

    /// Planning, as a front end shows it.
    fn facts(&self, _args: &Value) -> ToolFacts {
        ToolFacts::new(ToolKind::Think, Reach::Team)
    }

    async fn call(&self, cx: &Call<'_>, args: Value) -> Result<Done, Failure> {
        let args: Args = parse(&self.spec(), args)?;
        non_empty("plan", &args.plan)?;
        let plan = args.plan.trim();
        if plan.len() > MAX_PLAN_BYTES {
            return Err(Failure::Fixable(format!(
                "the plan is {} bytes; at most {MAX_PLAN_BYTES} (submit_plan's limit): say it \
                 shorter",
                plan.len()
            )));
        }
        let plans = cx.shared.plans;
        let rx = match plans.submit(cx.team, cx.caller, plan) {
            Submitted::Decided(d) => return Ok(Done::output(told(&d))),
            Submitted::Waiting(rx) => rx,
        };
        cx.team.set_status(cx.caller, AgentStatus::Waiting, None);
        let decision = tokio::select! {
            d = rx => d.ok(),
            _ = cx.cancel.cancelled() => None,
        };
        cx.team.set_status(cx.caller, AgentStatus::Running, None);
        match decision {
            Some(d) => Ok(Done::output(told(&d))),
            None => {
                plans.stop_waiting(cx.caller);
                Err(Failure::Fixable(
                    "stopped before a decision; your plan still awaits approval".into(),
                ))
            }
        }
    }
}

/// The decision as the worker reads it.
fn told(d: &Decision) -> String {
    let who = if d.by.is_some() {
        "your supervisor"
    } else {
        "the user"
    };
    if d.approved {
        format!("Plan approved by {who}: your writing tools are available now. Carry it out.")
    } else {
        format!(
            "Plan rejected by {who}: {}\nRevise the plan and call submit_plan again.",
            d.reason
        )
    }
}
