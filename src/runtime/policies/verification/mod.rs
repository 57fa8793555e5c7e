//! Checking a returned result against the workspace: the evidence kept in
//! [`Checks`](super::checks::Checks), the rules of `crate::verify`, the configured
//! commands, and a reviewer agent; what comes of it (deliver, or a correction).

mod base_tests;
pub mod checks;
pub mod layer;
mod reviewer;

pub use reviewer::Start;

use crate::config::CommandRule;
use crate::isolation::{ChangeKind, DiffSummary};
use crate::protocol::{AgentId, AgentResult, Finding, ResultStatus, Severity, Verdict};
use crate::runtime::cx::AgentCx;
use crate::verify::{self, Changes, Evidence, Snapshot};
use checks::{Attempt, Checked, take};
use layer::VerificationPolicy;
use std::collections::BTreeSet;
use std::path::Path;
use tokio_util::sync::CancellationToken;

/// Checks `result` of `agent` against the workspace and decides what happens to it.
pub async fn check(
    v: &VerificationPolicy,
    cx: &AgentCx,
    start_agent: Start<'_>,
    agent: AgentId,
    result: &AgentResult,
    cancel: &CancellationToken,
) -> Checked {
    let session = cx.session();
    let Some((role_name, attempt)) = to_check(v, cx, agent, result) else {
        return Checked::Unchecked;
    };
    let role = session.role(&role_name);
    let workspace = session.workspace_for(agent);
    let root = workspace.root();
    let (own, mut findings) = judge_claims(v, agent, root, result, &attempt).await;
    let Attempt {
        text,
        number: attempt,
        ..
    } = attempt;
    let role_rules = role.map(|r| r.verify_rules.as_slice()).unwrap_or_default();
    let rules_apply = (session.config.verify.rules.iter().chain(role_rules))
        .any(|rule| verify::applies(rule, &own));
    findings.extend(run_commands(v, cx, agent, &role_name, role_rules, &own, cancel).await);
    // The reviewer costs a model run: only a result the rules let through gets one.
    let mut reviewed = false;
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
        findings.extend(reviewer::review(v, cx, start_agent, review, cancel).await);
        reviewed = true;
    }
    let max = session.config.verify.max_corrections;
    // Nothing changed, nothing claimed, no command or reviewer ran: no ✓ for it.
    let checked = !own.is_empty() || verify::claims_a_change(result) || rules_apply || reviewed;
    let verdict = if checked {
        Verdict::of(attempt, max, findings)
    } else {
        Verdict::unchecked(attempt, max, findings)
    };
    if verdict.passed || attempt > max {
        close(v, agent, root, &own);
        return Checked::Deliver(verdict);
    }
    let message = verify::correction_message(&text, &verdict, attempt, max);
    Checked::Correct { verdict, message }
}

/// The worker's own change (its paths) and what the result's claims come to against it.
async fn judge_claims(
    v: &VerificationPolicy,
    agent: AgentId,
    root: &Path,
    result: &AgentResult,
    attempt: &Attempt,
) -> (BTreeSet<String>, Vec<Finding>) {
    let (own, unreadable) =
        match own_changes(v, agent, root, &attempt.start, &attempt.touched).await {
            Ok(own) => (own, None),
            Err(why) => (Changes::default(), Some(why)),
        };
    let mut findings = verify::check_result(
        result,
        &Evidence {
            root,
            changes: &own,
            earlier: &attempt.earlier,
        },
    );
    findings.extend(unreadable);
    (own.paths(), findings)
}

/// The worker's role and its attempt to check; `None` when its result is not checked (a
/// reviewer's own, checks off for its role, or a result that says it failed).
fn to_check(
    v: &VerificationPolicy,
    cx: &AgentCx,
    agent: AgentId,
    result: &AgentResult,
) -> Option<(String, Attempt)> {
    let role_name = cx.team().role(agent)?;
    if v.checks.is_reviewer(agent) {
        return None;
    }
    if !v.checks.enabled_for(agent, &role_name) || result.status == ResultStatus::Failure {
        v.checks.close(agent);
        return None;
    }
    Some((role_name, v.checks.next_attempt(agent)?))
}

/// What the worker changed since its task started: in its own worktree, git's diff of the
/// worktree against its base (a worktree is made at its first write, after its start
/// snapshot was taken of the workspace, so the snapshots of the two cannot be compared);
/// without one, what changed on disk among the files its own calls that ran touched.
/// `Err`: the finding that says its change could not be read (then nothing it claims
/// can pass).
async fn own_changes(
    v: &VerificationPolicy,
    agent: AgentId,
    root: &Path,
    start: &Snapshot,
    touched: &BTreeSet<String>,
) -> Result<Changes, Finding> {
    if let Some(diff) = v.isolation.own_change(agent).await {
        return diff.map(|d| changes_of(&d)).map_err(|e| Finding {
            rule: "own_change".into(),
            severity: Severity::Error,
            message: format!("squad could not read your change in your worktree: {e}"),
            fix: "tell your supervisor in known_issues; your change cannot be checked".into(),
        });
    }
    if touched.is_empty() {
        return Ok(Changes::default());
    }
    Ok(start.changes_to(&take(root).await).within(touched))
}

/// A worktree's diff as created, modified and deleted paths (a file turned symlink, or
/// back, is modified).
fn changes_of(diff: &DiffSummary) -> Changes {
    let mut changes = Changes::default();
    for f in &diff.files {
        let set = match f.kind {
            ChangeKind::Added => &mut changes.created,
            ChangeKind::Deleted => &mut changes.deleted,
            ChangeKind::Modified | ChangeKind::TypeChanged => &mut changes.modified,
        };
        set.insert(f.path.clone());
    }
    changes
}

/// What the commands find: the test command when the worker changed files (judged against
/// its run at the worker's base, `base_tests.rs`), and each configured and role rule that
/// applies to its changes.
async fn run_commands(
    v: &VerificationPolicy,
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
        && let Some(f) = base_tests::judged(v, cx, agent, &ctx, &test, timeout).await
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
fn close(v: &VerificationPolicy, agent: AgentId, root: &Path, own: &BTreeSet<String>) {
    let left = own
        .iter()
        .map(|rel| (rel.clone(), verify::content_mark(&root.join(rel))))
        .collect();
    v.checks.left(agent, left);
    v.checks.close(agent);
}
