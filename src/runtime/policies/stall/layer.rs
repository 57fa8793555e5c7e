//! The stall watch in each agent's life: the rest of the stack below it (the send of a
//! model call, beating its pulse as it streams; the run of a tool call) is watched, and
//! the agent marked stalled while it stays quiet for `[guards] stall_after_s`.

use super::watch;
use crate::runtime::cx::{AgentCx, Layer, ModelNext, Policy, Starting, ToolNext};
use crate::runtime::points::{Called, ModelCall, Pulse, ToolUse, Waiting};
use crate::runtime::tool_call::{ToolOut, ToolReq};
use async_trait::async_trait;
use std::time::Duration;

/// `[guards] stall_after_s` (`None`: not watched).
pub struct StallPolicy(pub Option<Duration>);

impl Policy for StallPolicy {
    fn layer_for(&self, _agent: &Starting) -> Option<Box<dyn Layer>> {
        self.0
            .map(|after| Box::new(StallLayer(after)) as Box<dyn Layer>)
    }
}

struct StallLayer(Duration);

#[async_trait]
impl Layer for StallLayer {
    async fn model_call(&self, cx: &AgentCx, call: &mut ModelCall, next: ModelNext<'_>) -> Called {
        let pulse = call.pulse.clone();
        let send = next.run(cx, call);
        watch(
            cx.team(),
            cx.id(),
            Some(self.0),
            &Waiting::ModelCall,
            &pulse,
            send,
        )
        .await
    }

    async fn tool_call(&self, cx: &AgentCx, req: &mut ToolReq<'_>, next: ToolNext<'_>) -> ToolOut {
        // What the tree shows of the call, apart from the call the rest of the stack holds.
        let (call, args) = (req.call, req.args.clone());
        let tool = ToolUse {
            call_id: &call.id,
            name: &call.name,
            args: &args,
            reach: req.facts.reach,
            reports: req.facts.reports,
            writes: None,
            action: None,
        };
        let run = next.run(cx, req);
        watch(
            cx.team(),
            cx.id(),
            Some(self.0),
            &Waiting::Tool(&tool),
            &Pulse::default(),
            run,
        )
        .await
    }
}
