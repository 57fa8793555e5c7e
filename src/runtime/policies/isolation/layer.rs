//! Isolation in each agent's life: a worker that has not written reads its base (a read after the
//! workspace moved on gets it a worktree made from that base); its first call that may
//! change files gets its worktree
//! (before the call is described, so the user approves a diff against the worktree); a
//! worktree made for a call that names the only files it writes is filled behind that
//! call, and every other call, and the task of an agent in it, waits for the fill; in
//! the shared workspace a worker's file change takes the file's lease; after a change the
//! worktree's diff is measured for the tree; a worker taking up a follow-up is moved onto
//! the workspace's current state; when its turns are over its change is merged; when it
//! is gone its worktree goes. `worker.rs` knows how. Letting a worktree go
//! ([`IsolationPolicy::gone`]) is isolation's own step, which the runtime calls. The layer
//! comes after the user's hooks:
//! a call a hook refuses gets no worktree, and a call a hook changed is prepared as changed.

use super::IsolationPolicy;
use super::worker::WorkerIsolation;
use crate::protocol::{ApprovalAction, TurnEnd};
use crate::runtime::cx::{AgentCx, Layer, ToolNext};
use crate::runtime::points::{Admit, Moment, ToolUse};
use crate::runtime::tool_call::{ToolOut, ToolReq};
use crate::runtime::toolbox::Reach;
use async_trait::async_trait;
use std::sync::Arc;

pub(super) struct IsolationLayer {
    pub(super) iso: Arc<WorkerIsolation>,
    pub(super) p: IsolationPolicy,
}

/// Before a call is described: a worker reads its base (once the workspace moved on, from
/// a worktree made of it); its first call that may change files gets its worktree, so the
/// user approves a diff against it; any other call in a worktree still being filled waits.
async fn prepare(iso: &WorkerIsolation, cx: &AgentCx, tool: &ToolUse<'_>) {
    let (team, agent) = (cx.team(), cx.id());
    if tool.reach == Reach::Reads && cx.is_worker() {
        iso.before_read(team, agent).await;
    }
    // Only the call a worktree was made for may run while it is filled: its files are
    // written first, and the fill writes none of them.
    let early = tool.changes_files() && iso.before_change(team, agent, tool.writes).await;
    if !early {
        iso.wait_for_files(team, agent).await;
    }
}

#[async_trait]
impl Layer for IsolationLayer {
    async fn before_task(&self, cx: &AgentCx, text: &mut String, _from_user: bool) -> Admit {
        if !cx.is_worker() {
            return Admit::Go;
        }
        // The verification layer, next, walks the tree the task starts from.
        self.iso.wait_for_files(cx.team(), cx.id()).await;
        if let Some(note) = self.iso.before_task(cx.team(), cx.id()).await {
            text.push_str("\n\n");
            text.push_str(&note);
        }
        Admit::Go
    }

    async fn tool_call(&self, cx: &AgentCx, req: &mut ToolReq<'_>, next: ToolNext<'_>) -> ToolOut {
        prepare(&self.iso, cx, &req.view()).await;
        let inv = cx.invocation();
        if let Err(why) = self.check(cx, req, &inv).await {
            return ToolOut::refused(why);
        }
        let mut out = next.run(cx, req).await;
        if out.did_run() && req.view().changes_files() {
            self.iso.after_mutation(cx.team(), cx.id()).await;
            // A write outside its task's declared paths is told in its result.
            if let Some(note) = outside_lease(cx, &req.view()) {
                out.output = format!("{}\n\n{note}", out.output);
            }
        }
        out
    }

    async fn hear(&self, cx: &AgentCx, moment: Moment) {
        if let Moment::Settled(end) = moment {
            self.settle(cx, end).await;
        }
    }
}

/// The note for a worker's write outside its board task's declared paths (`tasks/leases.rs`).
fn outside_lease(cx: &AgentCx, tool: &ToolUse<'_>) -> Option<String> {
    let root = cx.root();
    let paths: &[String] = match tool.action? {
        ApprovalAction::FileChange { path, .. } => std::slice::from_ref(path),
        ApprovalAction::Patch { paths, .. } => paths,
        _ => return None,
    };
    let rel = |p: &String| root.resolve(p).ok().map(|p| root.relative(&p));
    let written: Vec<String> = paths.iter().filter_map(rel).collect();
    cx.session().tasks.outside_lease(cx.id(), &written)
}

impl IsolationLayer {
    /// The call described in the root it will run in; `Err`: why it may not run (a worktree
    /// left incomplete, a file another worker holds in the shared workspace).
    async fn check(
        &self,
        cx: &AgentCx,
        req: &mut ToolReq<'_>,
        inv: &crate::runtime::toolbox::Invocation<'_>,
    ) -> Result<(), String> {
        let (reach, changes) = (req.facts.reach, req.view().changes_files());
        let action = req.action(inv).await?;
        // Team calls (`return_results` among them) touch no file and stay open.
        if reach != Reach::Team
            && let Some(why) = self.iso.unwritten(cx.team(), cx.id())
        {
            return Err(why);
        }
        if !changes {
            return Ok(());
        }
        self.iso.claim_write(cx.team(), cx.id(), &cx.root(), action)
    }

    async fn settle(&self, cx: &AgentCx, end: TurnEnd) {
        if cx.is_worker() && end != TurnEnd::Cancelled {
            // Where its results are checked, only one that passed merges.
            let checks = &self.p.checks;
            let checked = !checks.is_reviewer(cx.id()) && checks.enabled_for(cx.id(), &cx.role());
            let merged = self.iso.settle(cx.team(), cx.id(), end, checked).await;
            // Merged files are squad's writes: a rewind takes them back without asking.
            if let Some(checkpoints) = self.p.checkpoints.as_ref() {
                let root = cx.session().workspace.root();
                checkpoints.note_written(root, &merged).await;
            }
        }
    }
}
