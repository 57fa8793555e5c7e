//! The batch's rows are spawned through `spawn_agent`'s own path with this in place of the
//! caller's host: the same in everything, but for a row's spawn, which the batch's one
//! approval (asked before its first row) already covers; a hundred rows are one question.

use super::super::agent_tools::{Checked, Host};
use super::super::approval::{ApprovalRequest, Denied};
use super::super::team::NewAgent;
use crate::protocol::{AgentId, AgentResult, ApprovalAction};
use crate::roles::Role;
use async_trait::async_trait;
use std::sync::Arc;

pub struct RowHost<'a>(pub &'a dyn Host);

#[async_trait]
impl Host for RowHost<'_> {
    fn tools_for(
        &self,
        role: &Role,
        is_worker: bool,
        ceiling: Option<&[String]>,
        model: &str,
    ) -> Vec<String> {
        self.0.tools_for(role, is_worker, ceiling, model)
    }

    async fn approve(&self, req: ApprovalRequest<'_>) -> Result<(), Denied> {
        match req.action {
            ApprovalAction::Spawn { .. } => Ok(()),
            _ => self.0.approve(req).await,
        }
    }

    async fn notify(&self, kind: &'static str, message: &str) {
        self.0.notify(kind, message).await;
    }

    async fn base_for_spawn(
        &self,
        role: &str,
        mode: Option<crate::config::IsolationMode>,
    ) -> Option<Arc<crate::isolation::Base>> {
        self.0.base_for_spawn(role, mode).await
    }

    fn isolate(
        &self,
        agent: AgentId,
        mode: Option<crate::config::IsolationMode>,
        base: Option<Arc<crate::isolation::Base>>,
    ) {
        self.0.isolate(agent, mode, base);
    }

    fn start_agent(&self, new: NewAgent) -> AgentId {
        self.0.start_agent(new)
    }

    fn tool_context(&self) -> crate::tools::ToolContext {
        self.0.tool_context()
    }

    async fn check_result(&self, result: &AgentResult) -> Checked {
        self.0.check_result(result).await
    }

    fn first_request(
        &self,
        draft: &super::super::quote::draft::Draft<'_>,
    ) -> super::super::quote::draft::FirstRequest {
        self.0.first_request(draft)
    }

    fn placements(&self) -> Option<Arc<super::super::policies::placement::registry::Placements>> {
        self.0.placements()
    }
}
