//! The checkpoints in each agent's life: the persona's before each user message and before
//! its tool calls; every agent's writes in the workspace noted as squad's. The user's
//! `/rewind` and its list (`Op::Rewind`, `Op::ListCheckpoints`) are its ops (`rewind.rs`).

use super::Checkpoints;
use crate::runtime::cx::{AgentCx, Layer, ToolNext};
use crate::runtime::points::Admit;
use crate::runtime::tool_call::{ToolOut, ToolReq};
use async_trait::async_trait;
use std::sync::Arc;

pub(super) struct CheckpointLayer {
    pub(super) checkpoints: Arc<Checkpoints>,
    pub(super) persona: bool,
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
                let failed = checkpoints.failed(&taken);
                session.team.emit(persona, taken);
                if let Some(told) = failed {
                    session.team.emit(persona, told);
                }
                if let Some(told) = checkpoints.unreadable().await {
                    session.team.emit(persona, told);
                }
                let _ = done.send(true);
            });
        }
        Admit::Go
    }

    /// The persona's calls of a turn run only once its checkpoint is taken; what a call
    /// that ran wrote in the workspace is squad's.
    async fn tool_call(&self, cx: &AgentCx, req: &mut ToolReq<'_>, next: ToolNext<'_>) -> ToolOut {
        if self.persona {
            self.checkpoints.ready().await;
        }
        let out = next.run(cx, req).await;
        if let Some(paths) = req
            .writes
            .as_deref()
            .filter(|_| out.did_run() && !out.is_error)
        {
            let root = cx.root();
            if root.root() == cx.session().workspace.root() {
                self.checkpoints.note_written(root.root(), paths).await;
            }
        }
        out
    }
}
