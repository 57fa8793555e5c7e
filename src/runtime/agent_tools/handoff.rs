//! `handoff_to`: the session's persona hands the conversation to another.

use super::{AgentTool, Call, Done, Effect, Failure, non_empty, parse};
use crate::model::ToolSpec;
use crate::roles::Audience;
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

pub struct HandoffTo;

#[derive(Deserialize)]
struct Args {
    target_agent: String,
    reason: String,
    #[serde(default)]
    context: String,
}

/// A persona switch requested by a tool call, applied after the batch's results.
pub struct Handoff {
    pub to: String,
    pub reason: String,
    pub context: String,
}

#[async_trait]
impl AgentTool for HandoffTo {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "handoff_to".into(),
            description: "Hand the session to another persona (one of your handoffs); the user \
                then talks to it."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "target_agent": {"type": "string", "description": "Role name."},
                    "reason": {"type": "string"},
                    "context": {"type": "string", "description": "What it needs to know."}
                },
                "required": ["target_agent", "reason"]
            }),
            freeform: None,
        }
    }

    fn audience(&self) -> Audience {
        Audience::Persona
    }

    async fn call(&self, cx: &Call<'_>, args: Value) -> Result<Done, Failure> {
        let args: Args = parse(&self.spec(), args)?;
        non_empty("target_agent", &args.target_agent)?;
        non_empty("reason", &args.reason)?;
        let role = cx.team.role(cx.caller).unwrap_or_default();
        let roles = cx.shared.roles;
        let allowed = roles
            .get(&role)
            .map(|r| r.handoffs.clone())
            .unwrap_or_default();
        if cx.caller != cx.team.root() {
            return Err(Failure::Fixable(
                "only the session's active persona can hand off".into(),
            ));
        }
        let target = args.target_agent;
        if !allowed.contains(&target) {
            return Err(Failure::Fixable(format!(
                "`{role}` may not hand off to `{target}`; it may hand off to: {}",
                if allowed.is_empty() {
                    "nobody".to_string()
                } else {
                    allowed.join(", ")
                }
            )));
        }
        if roles.get(&target).is_none() {
            return Err(Failure::Fixable(format!(
                "no role named `{target}` is loaded"
            )));
        }
        Ok(Done {
            output: format!("handing off to {target}; it continues from here with your context"),
            effect: Effect::Handoff(Handoff {
                to: target,
                reason: args.reason,
                context: args.context,
            }),
        })
    }
}
