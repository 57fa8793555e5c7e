//! `squad review`: one `Op::Review` through the same session core as `exec`, then the
//! findings printed: as `{"findings":[…],"dropped":[…]}` with `--json`, else one
//! `file:line  severity  title` line each (what was dropped, and reviewers that gave no
//! answer, on stderr). A finished review exits 0 whatever it found; one that could not
//! start, or that no reviewer could answer, exits 1.

use super::{ExecOutcome, Interrupt};
use crate::protocol::{DroppedFinding, EventKind, Op, ReviewFinding, ReviewTarget};
use crate::runtime::SessionHandle;

/// Runs the review of `target` and prints it.
pub async fn run(mut handle: SessionHandle, target: ReviewTarget, json: bool) -> ExecOutcome {
    let root = handle.info.root_agent;
    let _ = handle.ops.send(Op::Review { target });
    let mut outcome = ExecOutcome {
        final_answer: String::new(),
        failure: None,
        interrupted: None,
        goal: None,
        nothing_changed: false,
    };
    let mut started = false;
    loop {
        let event = tokio::select! {
            ev = handle.events.recv() => match ev {
                Some(ev) => ev,
                None => {
                    outcome.failure = Some("the session ended before the review finished".into());
                    break;
                }
            },
            _ = tokio::signal::ctrl_c() => {
                outcome.interrupted = Some(Interrupt::Int);
                outcome.failure = Some("interrupted (Ctrl+C)".into());
                break;
            }
        };
        // Nothing else ends or tells of the review.
        if let EventKind::ReviewStarted { reviewers, .. } = &event.kind {
            started = true;
            if !json {
                eprintln!("squad: {} reviewers at work (read-only)", reviewers.len());
            }
        } else if let EventKind::ReviewFinished {
            target,
            findings,
            dropped,
            unanswered,
        } = event.kind
        {
            // A review none could answer did not happen, and says so with exit 1.
            outcome.final_answer = print(&target, &findings, &dropped, json);
            if unanswered.is_some() {
                outcome.failure = Some("no reviewer could answer; see the errors above".into());
            }
            break;
        } else if let EventKind::Error { message } = event.kind {
            // Before the review starts, the root's `review:` error is its refusal (no git,
            // no such commit); after, a reviewer's error only costs its findings.
            if event.agent_id == root && !started && message.starts_with("review:") {
                outcome.failure = Some(message);
                break;
            }
            eprintln!("squad: {message}");
        }
    }
    shut_down(&mut handle, !json).await;
    outcome
}

/// Prints the review; returns what went to stdout.
fn print(
    target: &ReviewTarget,
    findings: &[ReviewFinding],
    dropped: &[DroppedFinding],
    json: bool,
) -> String {
    let out = if json {
        let value = serde_json::json!({ "findings": findings, "dropped": dropped });
        serde_json::to_string_pretty(&value).unwrap_or_default() + "\n"
    } else {
        text(findings)
    };
    print!("{out}");
    if !json {
        eprintln!(
            "squad: review of {target}: {} finding(s), {} dropped",
            findings.len(),
            dropped.len()
        );
        for d in dropped {
            eprintln!(
                "  dropped {}  {}: {}",
                d.finding.place(),
                d.finding.title,
                d.reason
            );
        }
    }
    out
}

/// `file:line  severity  title  [focuses]`, one finding a line.
pub fn text(findings: &[ReviewFinding]) -> String {
    findings
        .iter()
        .map(|f| {
            format!(
                "{}  {}  {}  [{}]\n",
                f.place(),
                f.severity.as_str(),
                f.title,
                f.focus.join(", ")
            )
        })
        .collect()
}

/// Ends the session and waits for its last event, so the log is complete; in text mode
/// the per-agent table (what each reviewer cost) goes to stderr, as `exec`'s does.
pub(super) async fn shut_down(handle: &mut SessionHandle, table: bool) {
    let _ = handle.ops.send(Op::Shutdown);
    let wait = async {
        while let Some(ev) = handle.events.recv().await {
            if let EventKind::Summary { agents, totals, .. } = ev.kind {
                if table {
                    eprint!("{}", super::summary_table(&agents, &totals));
                }
                break;
            }
        }
    };
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), wait).await;
}
