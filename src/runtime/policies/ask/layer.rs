//! The approval ask in each agent's life: a tool call whose action needs the user's
//! approval (as its policy, a user's hook and the session's earlier answers say) is put to
//! them before it runs; a refusal is the call's result. It comes after every layer that
//! may refuse or change the call, so the user is asked only about what would run.

use super::approve;
use crate::runtime::approval::ApprovalRequest;
use crate::runtime::cx::{AgentCx, Layer, Policy, Starting, ToolNext};
use crate::runtime::tool_call::{ToolOut, ToolReq};
use async_trait::async_trait;

pub struct AskPolicy;

impl Policy for AskPolicy {
    fn layer_for(&self, _agent: &Starting) -> Option<Box<dyn Layer>> {
        Some(Box::new(AskLayer))
    }
}

struct AskLayer;

#[async_trait]
impl Layer for AskLayer {
    async fn tool_call(&self, cx: &AgentCx, req: &mut ToolReq<'_>, next: ToolNext<'_>) -> ToolOut {
        let inv = cx.invocation();
        let (call, role, policy, hook) =
            (req.call, req.role.clone(), req.policy, req.hook_approval);
        let action = match req.action(&inv).await {
            Ok(Some(action)) => action.clone(),
            Ok(None) => return next.run(cx, req).await,
            Err(why) => return ToolOut::refused(why),
        };
        let asked = ApprovalRequest {
            agent_id: cx.id(),
            role: &role,
            policy,
            tool: &call.name,
            action: &action,
            hook,
        };
        match approve(cx, asked).await {
            Ok(()) => next.run(cx, req).await,
            Err(denied) => ToolOut::refused(denied.0),
        }
    }
}
