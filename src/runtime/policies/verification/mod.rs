//! Checking a returned result against the workspace: the evidence kept in
//! [`Checks`](super::checks::Checks), the rules of `crate::verify`, the configured
//! commands, and a reviewer agent; what comes of it (deliver, or a correction).

mod base_tests;
pub mod checks;
pub mod layer;
mod reviewer;

pub use reviewer::Start;

use crate::config::CommandRule;
use crate::protocol::{AgentId, AgentResult, Finding, ResultStatus, Severity, Verdict};
use crate::runtime::cx::AgentCx;
use crate::verify::{self, Evidence, Snapshot};
use checks::{Attempt, Checked, take};
use std::collections::BTreeSet;
use std::path::Path;
use tokio_util::sync::CancellationToken;

/// Checks `result` of `agent` against the workspace and decides what happens to it.
pub async fn check(
    cx: &AgentCx,
    start_agent: Start<'_>,
    agent: AgentId,
    result: &AgentResult,
    cancel: &CancellationToken,
) -> Checked {
    let session = cx.session();
    let Some((
        role_name,
        Attempt {
            text,
            start,
            touched,
            number: attempt,
            earlier,
        },
    )) = to_check(cx, agent, result)
    else {
        return Checked::Unchecked;
    };
    let role = session.role(&role_name);
    let workspace = session.workspace_for(agent);
    let root = workspace.root();
    let own = own_changes(root, &start, &touched).await;
    let mut findings = verify::check_result(
        result,
        &Evidence {
            root,
            start: &start,
            own_changes: &own,
            earlier: &earlier,
        },
    );
    let role_rules = role.map(|r| r.verify_rules.as_slice()).unwrap_or_default();
    findings.extend(run_commands(cx, agent, &role_name, role_rules, &own, cancel).await);
    // The reviewer costs a model run: only a result the rules let through gets one.
    if let Some(reviewer) = &session.config.verify.reviewer
        && !findings.iter().any(|f| f.severity == Severity::Error)
    {
        let review = reviewer::Review {
            worker: agent,
            role: reviewer,
            task: &text,
            result,
            changed: &own,
        };
        findings.extend(reviewer::review(cx, start_agent, review, cancel).await);
    }
    let max = session.config.verify.max_corrections;
    let verdict = Verdict::of(attempt, max, findings);
    if verdict.passed || attempt > max {
        close(cx, agent, root, &own);
        return Checked::Deliver(verdict);
    }
    let message = verify::correction_message(&text, &verdict, attempt, max);
    Checked::Correct { verdict, message }
}

/// The worker's role and its attempt to check; `None` when its result is not checked (a
/// reviewer's own, checks off for its role, or a result that says it failed).
fn to_check(cx: &AgentCx, agent: AgentId, result: &AgentResult) -> Option<(String, Attempt)> {
    let session = cx.session();
    let role_name = session.team.role(agent)?;
    if session.checks.is_reviewer(agent) {
        return None;
    }
    if !session.checks.enabled_for(agent, &role_name) || result.status == ResultStatus::Failure {
        session.checks.close(agent);
        return None;
    }
    Some((role_name, session.checks.next_attempt(agent)?))
}

/// The files under `root` the worker's own calls changed since its task started. Only
/// files its own calls touched can be its changes: a worker that touched none needs no
/// second walk of the tree.
async fn own_changes(
    root: &Path,
    start: &Snapshot,
    touched: &BTreeSet<String>,
) -> BTreeSet<String> {
    if touched.is_empty() {
        return BTreeSet::new();
    }
    start
        .changes_to(&take(root).await)
        .paths()
        .intersection(touched)
        .cloned()
        .collect()
}

/// What the commands find: the test command when the worker changed files (judged against
/// its run at the worker's base, `base_tests.rs`), and each configured and role rule that
/// applies to its changes.
async fn run_commands(
    cx: &AgentCx,
    agent: AgentId,
    role_name: &str,
    role_rules: &[CommandRule],
    own: &BTreeSet<String>,
    cancel: &CancellationToken,
) -> Vec<Finding> {
    let session = cx.session();
    let mut findings = Vec::new();
    let ctx = session.tool_context(agent, role_name, cancel);
    let timeout = ctx.settings.command_timeout;
    if !own.is_empty()
        && let Some(test) = ctx.settings.test_command.clone()
        && let Some(f) = base_tests::judged(cx, agent, &ctx, &test, timeout).await
    {
        findings.push(f);
    }
    for rule in session.config.verify.rules.iter().chain(role_rules) {
        if verify::applies(rule, own)
            && let Some(f) =
                verify::run_rule(&ctx, &rule.id, rule.severity, &rule.command, timeout).await
        {
            findings.push(f);
        }
    }
    findings
}

/// Ends the checks of a delivered result, keeping what its files hold now (the marks
/// later results are checked against).
fn close(cx: &AgentCx, agent: AgentId, root: &Path, own: &BTreeSet<String>) {
    let session = cx.session();
    let left = own
        .iter()
        .map(|rel| (rel.clone(), verify::content_mark(&root.join(rel))))
        .collect();
    session.checks.left(agent, left);
    session.checks.close(agent);
}
