//! The checkpoints in each agent's life: the persona's before each user message and before
//! its tool calls; every agent's writes in the workspace noted as squad's.

use super::Checkpoints;
use crate::runtime::cx::{AgentCx, Layer, Policy, Starting};
use crate::runtime::points::{Admit, ToolDone, ToolGate, ToolUse};
use async_trait::async_trait;
use std::sync::Arc;

pub struct CheckpointPolicy(pub Arc<Checkpoints>);

impl Policy for CheckpointPolicy {
    fn layer_for(&self, agent: &Starting) -> Option<Box<dyn Layer>> {
        Some(Box::new(CheckpointLayer {
            checkpoints: self.0.clone(),
            persona: !agent.is_worker(),
        }))
    }
}

struct CheckpointLayer {
    checkpoints: Arc<Checkpoints>,
    persona: bool,
}

#[async_trait]
impl Layer for CheckpointLayer {
    async fn before_task(&self, cx: &AgentCx, _text: &mut String, from_user: bool) -> Admit {
        if self.persona && from_user {
            let (session, persona) = (cx.session().clone(), cx.id());
            let (message, done) = self.checkpoints.begin(&session.team, persona);
            let checkpoints = self.checkpoints.clone();
            cx.session().agent_tasks.spawn(async move {
                let taken = checkpoints.taken(message).await;
                session.team.emit(persona, taken);
                let _ = done.send(true);
            });
        }
        Admit::Go
    }

    /// The persona's calls of a turn run only once its checkpoint is taken.
    async fn before_tool(&self, _cx: &AgentCx, _tool: &ToolUse<'_>) -> ToolGate {
        if self.persona {
            self.checkpoints.ready().await;
        }
        ToolGate::Go
    }

    async fn after_tool(&self, cx: &AgentCx, tool: &ToolUse<'_>, done: &ToolDone<'_>) {
        let Some(paths) = tool.writes.filter(|_| !done.is_error) else {
            return;
        };
        let root = cx.root();
        if root.root() == cx.session().workspace.root() {
            self.checkpoints.note_written(root.root(), paths).await;
        }
    }
}
