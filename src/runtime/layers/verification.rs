//! Verification as a layer: the evidence a worker's result is later checked against. A
//! worker's task begins with a snapshot of its root; each call that may change files is
//! recorded (file tools name their file; anything else, a command, is measured by a
//! snapshot before and after). Any such call makes cached snapshots stale. The check of a
//! returned result itself is `runtime/verification.rs`.

use super::{Layer, Scope, ToolDone, ToolUse};
use crate::protocol::{AgentId, ApprovalAction};
use crate::runtime::checks::{Checks, take};
use crate::verify::Snapshot;
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

pub struct VerificationLayer {
    checks: Arc<Checks>,
    /// The tree before a running command, by agent and call.
    before: Mutex<HashMap<(AgentId, String), Snapshot>>,
}

impl VerificationLayer {
    pub fn new(checks: Arc<Checks>) -> Self {
        Self {
            checks,
            before: Mutex::new(HashMap::new()),
        }
    }
}

/// The paths a file tool's call names, relative to the agent's root (`None`: a command,
/// which names none).
fn named(cx: &Scope<'_>, tool: &ToolUse<'_>) -> Option<Vec<String>> {
    let rel = |path: &String| {
        cx.workspace
            .resolve(path)
            .ok()
            .map(|p| cx.workspace.relative(&p))
    };
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
    async fn before_task(&self, cx: &Scope<'_>, text: &mut String) {
        if cx.is_worker()
            && self.checks.starts_task(cx.agent)
            && self.checks.enabled_for(cx.agent, cx.role)
        {
            self.checks.begin(cx.agent, text, cx.root()).await;
        }
    }

    async fn before_run(&self, cx: &Scope<'_>, tool: &ToolUse<'_>) {
        if !tool.changes_files() {
            return;
        }
        if self.checks.is_tracked(cx.agent) && named(cx, tool).is_none() {
            let snapshot = take(cx.root()).await;
            crate::sync::lock(&self.before).insert((cx.agent, tool.call_id.to_string()), snapshot);
        }
        self.checks.files_may_change();
    }

    async fn after_tool(&self, cx: &Scope<'_>, tool: &ToolUse<'_>, _done: &ToolDone<'_>) {
        if !tool.changes_files() {
            return;
        }
        self.checks.files_may_change();
        let before = crate::sync::lock(&self.before).remove(&(cx.agent, tool.call_id.to_string()));
        if !self.checks.is_tracked(cx.agent) {
            return;
        }
        match (named(cx, tool), before) {
            (Some(paths), _) => self.checks.touch(cx.agent, paths),
            (None, Some(before)) => {
                let after = take(cx.root()).await;
                self.checks
                    .touch(cx.agent, before.changes_to(&after).paths());
            }
            (None, None) => {}
        }
    }
}
