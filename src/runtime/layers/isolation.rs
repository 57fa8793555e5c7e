//! Isolation as a layer: a worker that has not written reads its base (a read after the
//! workspace moved on gets it a worktree made from that base); its first call that may
//! change files gets its worktree
//! (before the call is described, so the user approves a diff against the worktree); a
//! worktree made for a call that names the only files it writes is filled behind that
//! call, and every other call, and the task of an agent in it, waits for the fill; in
//! the shared workspace a worker's file change takes the file's lease; after a change the
//! worktree's diff is measured for the tree; a worker taking up a follow-up is moved onto
//! the workspace's current state; when its turns are over its change is merged; when it
//! is gone its worktree goes. `runtime/isolation.rs` knows how.

use super::{Layer, Scope, ToolDone, ToolGate, ToolUse};
use crate::protocol::TurnEnd;
use crate::runtime::isolation::WorkerIsolation;
use crate::runtime::toolbox::Reach;
use async_trait::async_trait;
use std::sync::Arc;

pub struct IsolationLayer {
    iso: Arc<WorkerIsolation>,
}

impl IsolationLayer {
    pub fn new(iso: Arc<WorkerIsolation>) -> Self {
        Self { iso }
    }
}

#[async_trait]
impl Layer for IsolationLayer {
    async fn before_task(&self, cx: &Scope<'_>, text: &mut String) {
        if !cx.is_worker() {
            return;
        }
        // The verification layer, next, walks the tree the task starts from.
        self.iso.wait_for_files(cx.team, cx.agent).await;
        if let Some(note) = self.iso.before_task(cx.team, cx.agent).await {
            text.push_str("\n\n");
            text.push_str(&note);
        }
    }

    async fn prepare_tool(&self, cx: &Scope<'_>, tool: &ToolUse<'_>) {
        // A worker reads its base: once the workspace moved on, from a worktree made of it.
        if tool.reach == Reach::Reads && cx.is_worker() {
            self.iso.before_read(cx.team, cx.agent).await;
        }
        // Only the call a worktree was made for may run while it is filled: its files are
        // written first, and the fill writes none of them.
        let early =
            tool.changes_files() && self.iso.before_change(cx.team, cx.agent, tool.writes).await;
        if !early {
            self.iso.wait_for_files(cx.team, cx.agent).await;
        }
    }

    async fn before_tool(&self, cx: &Scope<'_>, tool: &ToolUse<'_>) -> ToolGate {
        // Team calls (`return_results` among them) touch no file and stay open.
        if tool.reach != Reach::Team
            && let Some(why) = self.iso.unwritten(cx.team, cx.agent)
        {
            return ToolGate::Block(why);
        }
        if !tool.changes_files() {
            return ToolGate::Go;
        }
        // A file another worker holds in the shared workspace is refused.
        match self
            .iso
            .claim_write(cx.team, cx.agent, cx.workspace, tool.action)
        {
            Ok(()) => ToolGate::Go,
            Err(held) => ToolGate::Block(held),
        }
    }

    async fn after_tool(&self, cx: &Scope<'_>, tool: &ToolUse<'_>, _done: &ToolDone<'_>) {
        if tool.changes_files() {
            self.iso.after_mutation(cx.team, cx.agent).await;
        }
    }

    async fn settle(&self, cx: &Scope<'_>, end: TurnEnd) {
        if cx.is_worker() && end != TurnEnd::Cancelled {
            self.iso.settle(cx.team, cx.agent, end).await;
        }
    }

    async fn gone(&self, cx: &Scope<'_>) {
        if cx.is_worker() && !self.iso.is_closing() {
            self.iso.clean_up(cx.team, cx.agent).await;
        }
    }
}
