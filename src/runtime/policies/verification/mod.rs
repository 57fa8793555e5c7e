//! Checking a returned result against the workspace: the evidence kept in
//! [`Checks`](super::checks::Checks), the rules of `crate::verify`, the configured
//! commands, and a reviewer agent; what comes of it (deliver, or a correction).

pub mod checks;
pub mod layer;
mod reviewer;

pub use reviewer::Start;

use crate::protocol::{AgentId, AgentResult, ResultStatus, Severity, Verdict};
use crate::runtime::session::Session;
use crate::verify::{self, Evidence};
use checks::{Attempt, Checked, take};
use std::collections::BTreeSet;
use tokio_util::sync::CancellationToken;

/// Checks `result` of `agent` against the workspace and decides what happens to it.
pub async fn check(
    session: &Session,
    start_agent: Start<'_>,
    agent: AgentId,
    result: &AgentResult,
    cancel: &CancellationToken,
) -> Checked {
    let Some(role_name) = session.team.role(agent) else {
        return Checked::Unchecked;
    };
    if session.checks.is_reviewer(agent) {
        return Checked::Unchecked;
    }
    let role = session.role(&role_name);
    if !session.checks.enabled_for(agent, &role_name) || result.status == ResultStatus::Failure {
        session.checks.close(agent);
        return Checked::Unchecked;
    }
    let Some(Attempt {
        text,
        start,
        touched,
        number: attempt,
        earlier,
    }) = session.checks.next_attempt(agent)
    else {
        return Checked::Unchecked;
    };
    let workspace = session.workspace_for(agent);
    let root = workspace.root();
    // Only files its own calls touched can be its changes: a worker that touched none
    // needs no second walk of the tree.
    let own: BTreeSet<String> = if touched.is_empty() {
        BTreeSet::new()
    } else {
        start
            .changes_to(&take(root).await)
            .paths()
            .intersection(&touched)
            .cloned()
            .collect()
    };
    let mut findings = verify::check_result(
        result,
        &Evidence {
            root,
            start: &start,
            own_changes: &own,
            earlier: &earlier,
        },
    );
    let ctx = session.tool_context(agent, &role_name, cancel);
    let timeout = ctx.settings.command_timeout;
    if !own.is_empty()
        && let Some(test) = ctx.settings.test_command.clone()
        && let Some(f) = verify::run_rule(&ctx, "tests", Severity::Error, &test, timeout).await
    {
        findings.push(f);
    }
    let role_rules = role.map(|r| r.verify_rules.as_slice()).unwrap_or_default();
    for rule in session.config.verify.rules.iter().chain(role_rules) {
        if verify::applies(rule, &own)
            && let Some(f) =
                verify::run_rule(&ctx, &rule.id, rule.severity, &rule.command, timeout).await
        {
            findings.push(f);
        }
    }
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
        findings.extend(reviewer::review(session, start_agent, review, cancel).await);
    }
    let max = session.config.verify.max_corrections;
    let verdict = Verdict::of(attempt, max, findings);
    if verdict.passed || attempt > max {
        let left = own
            .iter()
            .map(|rel| (rel.clone(), verify::content_mark(&root.join(rel))))
            .collect();
        session.checks.left(agent, left);
        session.checks.close(agent);
        return Checked::Deliver(verdict);
    }
    let message = verify::correction_message(&text, &verdict, attempt, max);
    Checked::Correct { verdict, message }
}
