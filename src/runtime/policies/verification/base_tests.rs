//! The test command judged against the worker's start (`verify::judge_tests`): it runs
//! in the worker's view, and when it fails there, also at the worker's base, once per
//! base commit and command: siblings spawned from one workspace share that run.
//!
//! The base is the commit the worker's worktree was made from (moved on by a merge or a
//! redo), checked out clean beside the worktrees and removed after the run; the run takes
//! no turn in the merge queue. A worker without a worktree (outside git, or sharing the
//! workspace) has no base to run at: squad keeps a snapshot of stamps, not of contents,
//! so the workspace as its task began is gone, and every worker's writes are in it. Its
//! test failures are judged alone, as before.

use super::layer::VerificationPolicy;
use crate::protocol::{AgentId, Finding};
use crate::runtime::cx::AgentCx;
use crate::tools::{ToolContext, ToolError};
use crate::verify::{self, TestRun};
use crate::workspace::Workspace;
use std::sync::Arc;
use std::time::Duration;

/// The test command's finding for `agent`, whose tool context is `ctx`: `None` when it
/// passes in its view; else judged against its run at the worker's base.
pub async fn judged(
    v: &VerificationPolicy,
    cx: &AgentCx,
    agent: AgentId,
    ctx: &ToolContext,
    command: &str,
    timeout: Duration,
) -> Option<Finding> {
    let now = match verify::run_test(ctx, command, timeout).await {
        Ok(run) => run,
        Err(ToolError::Cancelled) => return None,
        Err(e) => return Some(verify::test_not_run(command, &e)),
    };
    if now.passed() {
        return None;
    }
    let base = at_base(v, cx, agent, ctx, command, timeout).await;
    verify::judge_tests(command, base.as_ref(), &now)
}

/// The test command's run at `agent`'s base: the one kept, or a new one.
async fn at_base(
    v: &VerificationPolicy,
    cx: &AgentCx,
    agent: AgentId,
    ctx: &ToolContext,
    command: &str,
    timeout: Duration,
) -> Option<TestRun> {
    let session = cx.session();
    let (worktrees, commit) = v.isolation.tests_base(&session.team, agent)?;
    let cell = v.checks.base_tests.run_of(&commit, command);
    let run = cell.get_or_try_init(|| async {
        let checkout = worktrees
            .check_out_base(&commit)
            .await
            .map_err(|e| format!("checking out {commit}: {e}"))?;
        let ran = match Workspace::new(&checkout.root) {
            Ok(workspace) => {
                let ctx = ToolContext {
                    workspace: Arc::new(workspace),
                    sandbox: (session.places).confined(&session.team, agent, &checkout.root),
                    editor: None,
                    ..ctx.clone()
                };
                verify::run_test(&ctx, command, timeout)
                    .await
                    .map_err(|e| e.to_string())
            }
            Err(e) => Err(e.to_string()),
        };
        if let Err(e) = worktrees.remove_base(checkout).await {
            tracing::warn!("removing the checkout of base {commit}: {e}");
        }
        ran
    });
    match run.await {
        Ok(run) => Some(run.clone()),
        Err(e) => {
            tracing::warn!("the tests at base {commit} could not run: {e}");
            None
        }
    }
}
