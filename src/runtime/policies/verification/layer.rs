//! Verification in each agent's life: the evidence a worker's result is later checked against. A
//! worker's task begins with a snapshot of its root; each call that may change files and
//! ran is recorded (file tools name their file, unless they failed; anything else, a
//! command, is measured by a snapshot before and after). Any such call makes cached
//! snapshots stale. These are the evidence of a worker without a worktree of its own; one
//! with a worktree is checked against git's diff of it (`mod.rs`, which checks a returned
//! result).
//!
//! The snapshot before a command is taken when the layers before it let the call through:
//! only the user's approval is still to come. A user who edits the workspace
//! while asked could see the edit counted as the command's; a worker in its own worktree
//! (the default) cannot meet that.

use super::checks::{Checks, take};
use crate::protocol::ApprovalAction;
use crate::runtime::cx::{AgentCx, Layer, Policy, Starting, ToolNext};
use crate::runtime::points::{Admit, ToolUse};
use crate::runtime::policies::isolation::worker::WorkerIsolation;
use crate::runtime::tool_call::{ToolOut, ToolReq};
use crate::verify::Snapshot;
use crate::workspace::Workspace;
use async_trait::async_trait;
use std::sync::Arc;

/// The evidence results are checked against, and the worktrees a worker's own change is
/// read from.
#[derive(Clone)]
pub struct VerificationPolicy {
    pub checks: Arc<Checks>,
    pub isolation: Arc<WorkerIsolation>,
}

impl Policy for VerificationPolicy {
    fn layer_for(&self, _agent: &Starting) -> Option<Box<dyn Layer>> {
        Some(Box::new(VerificationLayer {
            checks: self.checks.clone(),
        }))
    }
}

struct VerificationLayer {
    checks: Arc<Checks>,
}

/// The paths a file tool's call names, relative to the agent's root (`None`: a command,
/// which names none).
fn named(root: &Workspace, tool: &ToolUse<'_>) -> Option<Vec<String>> {
    let rel = |path: &String| root.resolve(path).ok().map(|p| root.relative(&p));
    match tool.action {
        Some(ApprovalAction::FileChange { path, .. }) => rel(path).map(|p| vec![p]),
        Some(ApprovalAction::Patch { paths, .. }) => Some(paths.iter().filter_map(rel).collect()),
        _ => None,
    }
}

#[async_trait]
impl Layer for VerificationLayer {
    /// A worker's task starts here (its first message, or a follow-up after it returned):
    /// its result will be checked against its root as it is now.
    async fn before_task(&self, cx: &AgentCx, text: &mut String, _from_user: bool) -> Admit {
        if cx.is_worker()
            && self.checks.starts_task(cx.id())
            && self.checks.enabled_for(cx.id(), &cx.role())
        {
            let root = cx.root();
            self.checks.begin(cx.id(), text, root.root()).await;
        }
        Admit::Go
    }

    async fn tool_call(&self, cx: &AgentCx, req: &mut ToolReq<'_>, next: ToolNext<'_>) -> ToolOut {
        if !req.view().changes_files() {
            return next.run(cx, req).await;
        }
        let inv = cx.invocation();
        if let Err(why) = req.action(&inv).await {
            return ToolOut::refused(why);
        }
        let before = self.before(cx, &req.view()).await;
        let out = next.run(cx, req).await;
        if out.did_run() {
            self.checks.files_may_change();
            if self.checks.is_tracked(cx.id()) {
                self.after(cx, &req.view(), before, out.is_error).await;
            }
        }
        out
    }
}

impl VerificationLayer {
    /// The tree before a command (a file tool names its files instead).
    async fn before(&self, cx: &AgentCx, tool: &ToolUse<'_>) -> Option<Snapshot> {
        let root = cx.root();
        let snapshot = if self.checks.is_tracked(cx.id()) && named(&root, tool).is_none() {
            Some(take(root.root()).await)
        } else {
            None
        };
        self.checks.files_may_change();
        snapshot
    }

    /// What the call changed, recorded.
    async fn after(
        &self,
        cx: &AgentCx,
        tool: &ToolUse<'_>,
        before: Option<Snapshot>,
        failed: bool,
    ) {
        let root = cx.root();
        match (named(&root, tool), before) {
            // A file tool that failed wrote nothing (a refused call never gets here).
            (Some(_), _) if failed => {}
            (Some(paths), _) => self.checks.touch(cx.id(), paths),
            (None, Some(before)) => {
                let after = take(root.root()).await;
                self.checks
                    .touch(cx.id(), before.changes_to(&after).paths());
            }
            (None, None) => {}
        }
    }
}
