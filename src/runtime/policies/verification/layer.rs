//! Verification in each agent's life: the evidence a worker's result is later checked against. A
//! worker's task begins with a snapshot of its root; each call that may change files and
//! ran is recorded (file tools name their file, unless they failed; anything else, a
//! command, is measured by a snapshot before and after). Any such call makes cached
//! snapshots stale. These are the evidence of a worker without a worktree of its own; one
//! with a worktree is checked against git's diff of it (`mod.rs`, which checks a returned
//! result).
//!
//! The snapshot before a command is taken when the layers let the call through, as the
//! last of them: only the user's approval is still to come. A user who edits the workspace
//! while asked could see the edit counted as the command's; a worker in its own worktree
//! (the default) cannot meet that.

use super::checks::{Checks, take};
use crate::protocol::ApprovalAction;
use crate::runtime::cx::{AgentCx, Layer, Policy, Starting};
use crate::runtime::points::{Admit, ToolDone, ToolGate, ToolUse};
use crate::verify::Snapshot;
use crate::workspace::Workspace;
use async_trait::async_trait;
use std::sync::{Arc, Mutex};

pub struct VerificationPolicy(pub Arc<Checks>);

impl Policy for VerificationPolicy {
    fn layer_for(&self, _agent: &Starting) -> Option<Box<dyn Layer>> {
        Some(Box::new(VerificationLayer {
            checks: self.0.clone(),
            before: Mutex::new(None),
        }))
    }
}

struct VerificationLayer {
    checks: Arc<Checks>,
    /// The tree before a command about to run, with its call's id. Calls that may change
    /// files run one at a time, so one is enough.
    before: Mutex<Option<(String, Snapshot)>>,
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

    async fn before_tool(&self, cx: &AgentCx, tool: &ToolUse<'_>) -> ToolGate {
        if !tool.changes_files() {
            return ToolGate::Go;
        }
        let root = cx.root();
        if self.checks.is_tracked(cx.id()) && named(&root, tool).is_none() {
            let snapshot = take(root.root()).await;
            *crate::sync::lock(&self.before) = Some((tool.call_id.to_string(), snapshot));
        }
        self.checks.files_may_change();
        ToolGate::Go
    }

    async fn after_tool(&self, cx: &AgentCx, tool: &ToolUse<'_>, done: &ToolDone<'_>) {
        if !tool.changes_files() {
            return;
        }
        self.checks.files_may_change();
        let before = crate::sync::lock(&self.before)
            .take()
            .filter(|(call, _)| call == tool.call_id)
            .map(|(_, s)| s);
        if !self.checks.is_tracked(cx.id()) {
            return;
        }
        let root = cx.root();
        match (named(&root, tool), before) {
            // A file tool that failed wrote nothing (a refused call never gets here).
            (Some(_), _) if done.is_error => {}
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
