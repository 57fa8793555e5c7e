//! The optional QC reviewer (`[verify] reviewer`, seed 001's QC agent): a read-only worker
//! of the configured role, started under the worker whose result it reviews, given the
//! task, the result and the diff. What it returns becomes findings: a `failure` (or
//! `partial`) blocks the result with each of its known issues as an error; the known
//! issues of a `success` are warnings. A reviewer that cannot finish costs a warning, never
//! the worker's result.

use super::layer::VerificationPolicy;
use crate::protocol::{
    AgentId, AgentResult, AgentStatus, ApprovalPolicy, Finding, ResultStatus, Severity,
};
use crate::roles::Role;
use crate::runtime::cx::AgentCx;
use crate::runtime::team::{AgentCard, AgentInput, NewAgent};
use std::collections::BTreeSet;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// Starts an agent; the runtime's one recursion, passed in so this module need not know
/// where agents are started.
pub type Start<'a> = &'a (dyn Fn(NewAgent) -> AgentId + Send + Sync);

const RULE: &str = "reviewer";

/// What a review of the task in `review` found.
pub struct Review<'a> {
    pub worker: AgentId,
    pub role: &'a str,
    pub task: &'a str,
    pub result: &'a AgentResult,
    /// The files the worker's own calls changed.
    pub changed: &'a BTreeSet<String>,
}

pub async fn review(
    v: &VerificationPolicy,
    cx: &AgentCx,
    start: Start<'_>,
    r: Review<'_>,
    cancel: &CancellationToken,
) -> Vec<Finding> {
    let session = cx.session();
    let (Some(role), Some(worker)) = (session.role(r.role), session.team.card(r.worker)) else {
        return vec![warning(format!(
            "the reviewer role '{}' is not loaded; the result was not reviewed",
            r.role
        ))];
    };
    // In the worker's own worktree when it has one: its change is not merged yet.
    let seal = v.isolation.seal(&session.team, r.worker);
    let root = session.workspace_for(r.worker);
    let diff = crate::verify::change_text(root.root(), r.changed, seal.as_ref()).await;
    let id = start_reviewer(v, cx, start, role, &worker, r.worker);
    let (tx, rx) = oneshot::channel();
    let asked = session.team.deliver(
        id,
        AgentInput::Message {
            text: review_task(r.task, r.result, &diff),
            reply: Some(tx),
        },
    );
    if !asked {
        return vec![warning("the reviewer stopped before it started".into())];
    }
    let reply = tokio::select! {
        reply = rx => reply.unwrap_or_else(|_| Err("it stopped before answering".to_string())),
        _ = cancel.cancelled() => {
            session.team.cancel_subtree(id, "the reviewed worker was interrupted");
            return Vec::new();
        }
    };
    let (_, verdict) = session.team.mark_delivered(id);
    findings_after(reply, verdict)
}

/// Starts the reviewer of `worker_id` (`worker`'s card) under it, read-only.
fn start_reviewer(
    v: &VerificationPolicy,
    cx: &AgentCx,
    start: Start<'_>,
    role: &Role,
    worker: &AgentCard,
    worker_id: AgentId,
) -> AgentId {
    let session = cx.session();
    let id = AgentId::new();
    v.checks.add_reviewer(id);
    start(NewAgent {
        id,
        parent: Some(worker_id),
        role: role.name.clone(),
        model: role.model(&session.config),
        depth: worker.depth + 1,
        task: format!("review the result of {} {}", worker.role, worker_id.short()),
        // A reviewer reads; it never changes what it judges.
        policy: ApprovalPolicy::ReadOnly,
        tools: session.tools.tools_for(role, true, Some(&worker.tools)),
        history: Vec::new(),
        status: AgentStatus::Inactive,
        stats: Default::default(),
        // The review is the checks' work, not the worker's: only the config's limits.
        budget: crate::runtime::team::from_limits(&session.config.limits),
        result: None,
        first_message: None,
        announce: true,
        options: Default::default(),
        released: false,
    });
    id
}

/// The findings of a review that ran: the reviewer's result, or a warning when it gave
/// none (a reviewer that cannot finish never costs the worker its result).
fn findings_after(reply: Result<String, String>, verdict: Option<AgentResult>) -> Vec<Finding> {
    match (reply, verdict) {
        (_, Some(verdict)) => findings_of(&verdict),
        (Err(e), None) => vec![warning(format!(
            "the reviewer could not finish ({e}); the result was not reviewed"
        ))],
        (Ok(_), None) => vec![warning(
            "the reviewer answered without return_results; the result was not reviewed".into(),
        )],
    }
}

/// The reviewer's result as findings.
fn findings_of(verdict: &AgentResult) -> Vec<Finding> {
    let severity = match verdict.status {
        ResultStatus::Success => Severity::Warning,
        ResultStatus::Failure | ResultStatus::Partial => Severity::Error,
    };
    let mut out: Vec<Finding> = verdict
        .known_issues
        .iter()
        .filter(|i| !i.trim().is_empty())
        .map(|issue| Finding {
            rule: RULE.into(),
            severity,
            message: issue.clone(),
            fix: String::new(),
        })
        .collect();
    if out.is_empty() && severity == Severity::Error {
        out.push(Finding {
            rule: RULE.into(),
            severity,
            message: format!("the reviewer rejected the result: {}", verdict.summary),
            fix: String::new(),
        });
    }
    out
}

fn warning(message: String) -> Finding {
    Finding {
        rule: RULE.into(),
        severity: Severity::Warning,
        message,
        fix: String::new(),
    }
}

/// The reviewer's task: what the worker was asked, what it says it did, what it changed,
/// and how to answer.
fn review_task(task: &str, result: &AgentResult, diff: &str) -> String {
    let mut shown = result.clone();
    shown.verification = None;
    let result = serde_json::to_string_pretty(&shown).unwrap_or_default();
    format!(
        "Review another worker's result before it goes to its supervisor.\n\n\
         The task it was given:\n{task}\n\n\
         Its result:\n{result}\n\n\
         Its changes (a diff against the last commit; new files in full):\n{diff}\n\n\
         Check that the result does what the task asked and that the changes are correct; \
         read files when you need more context. Then call return_results: status \"success\" \
         if the work is acceptable, \"failure\" if it must be fixed. Put each problem that \
         must be fixed in known_issues (the file, what is wrong, the fix); with status \
         \"success\", known_issues are only remarks.",
        task = task.trim()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(status: ResultStatus, issues: &[&str]) -> AgentResult {
        AgentResult {
            completed_at: None,
            status,
            summary: "looked at it".into(),
            artifacts: vec![],
            known_issues: issues.iter().map(|s| s.to_string()).collect(),
            verification: None,
            merge: None,
        }
    }

    #[test]
    fn a_failing_review_blocks_and_a_passing_one_only_remarks() {
        let f = findings_of(&result(ResultStatus::Failure, &["src/a.rs:3 off by one"]));
        assert_eq!(f.len(), 1);
        assert_eq!(
            (f[0].severity, f[0].message.as_str()),
            (Severity::Error, "src/a.rs:3 off by one")
        );
        let f = findings_of(&result(ResultStatus::Failure, &[]));
        assert!(f[0].message.contains("rejected the result: looked at it"));
        let f = findings_of(&result(ResultStatus::Success, &["naming"]));
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(findings_of(&result(ResultStatus::Success, &[])).is_empty());
    }

    #[test]
    fn a_review_without_a_result_is_only_a_warning() {
        let f = findings_after(Err("it stopped".into()), None);
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0].message.contains("could not finish (it stopped)"));
        let f = findings_after(Ok("fine".into()), None);
        assert!(f[0].message.contains("without return_results"));
        let f = findings_after(
            Err("late".into()),
            Some(result(ResultStatus::Failure, &["x"])),
        );
        assert_eq!((f.len(), f[0].severity), (1, Severity::Error));
    }

    #[test]
    fn the_review_task_holds_task_result_and_diff() {
        let text = review_task(
            "write notes.md",
            &result(ResultStatus::Success, &[]),
            "=== notes.md (new)",
        );
        assert!(text.contains("write notes.md"));
        assert!(text.contains("\"status\": \"success\""));
        assert!(text.contains("=== notes.md (new)"));
        assert!(text.contains("return_results"));
    }
}
