//! What the front ends see of each tool call: it began, and it ended with how long it ran.
//! Right below the pause gate, so a call held while the team is paused has not begun;
//! every layer after it (a hook's refusal, the approval ask) is part of the call's time.

use crate::runtime::cx::{AgentCx, Layer, Policy, Starting, ToolNext};
use crate::runtime::tool_call::{ToolOut, ToolReq};
use async_trait::async_trait;

pub struct ShownPolicy;

impl Policy for ShownPolicy {
    fn layer_for(&self, _agent: &Starting) -> Option<Box<dyn Layer>> {
        Some(Box::new(ShownLayer))
    }
}

struct ShownLayer;

#[async_trait]
impl Layer for ShownLayer {
    async fn tool_call(&self, cx: &AgentCx, req: &mut ToolReq<'_>, next: ToolNext<'_>) -> ToolOut {
        let call = req.call;
        cx.team().told(cx.id(), &call.id, next.run(cx, req)).await
    }
}
