//! `/review` as the screen keeps it: the review under way or the last one finished, its
//! findings and what was dropped. The persona's conversation tells of it too (a notice
//! per event, the findings' `file:line` lines included), so it stays in the scrollback
//! after the findings popup is closed.

use super::{EntryKind, SessionState};
use crate::protocol::{AgentId, DroppedFinding, ReviewFinding, ReviewTarget};
use std::time::Instant;

/// The last review.
#[derive(Clone, Debug, PartialEq)]
pub struct ReviewView {
    pub target: ReviewTarget,
    /// Reviewers started (one per focus).
    pub reviewers: usize,
    /// `None` while the reviewers work.
    pub outcome: Option<(Vec<ReviewFinding>, Vec<DroppedFinding>)>,
    /// No reviewer could answer (the first one's error): the review did not happen.
    pub unanswered: Option<String>,
}

impl SessionState {
    pub(super) fn review_started(
        &mut self,
        id: AgentId,
        target: &ReviewTarget,
        reviewers: &[AgentId],
        now: Instant,
    ) {
        self.review = Some(ReviewView {
            target: target.clone(),
            reviewers: reviewers.len(),
            outcome: None,
            unanswered: None,
        });
        let line = match reviewers.len() {
            0 => format!("review of {target}: nothing changed, nothing to review"),
            n => format!("review of {target}: {n} reviewers at work (read-only)"),
        };
        self.agent_entry(id, now)
            .conversation
            .push(EntryKind::Notice(line));
    }

    pub(super) fn review_finished(
        &mut self,
        id: AgentId,
        target: &ReviewTarget,
        findings: &[ReviewFinding],
        dropped: &[DroppedFinding],
        unanswered: &Option<String>,
        now: Instant,
    ) {
        let reviewers = self.review.as_ref().map_or(0, |r| r.reviewers);
        self.review = Some(ReviewView {
            target: target.clone(),
            reviewers,
            outcome: Some((findings.to_vec(), dropped.to_vec())),
            unanswered: unanswered.clone(),
        });
        // A review nobody could answer is no clean result: said as the CLI says it.
        if let Some(why) = unanswered {
            let text =
                format!("review of {target} did not happen: no reviewer could answer ({why})");
            self.agent_entry(id, now)
                .conversation
                .push(EntryKind::Error(text));
            return;
        }
        let mut text = format!(
            "review of {target}: {} finding{}, {} dropped",
            findings.len(),
            if findings.len() == 1 { "" } else { "s" },
            dropped.len()
        );
        for f in findings {
            text.push_str(&format!(
                "\n  {}  {}  {}",
                f.place(),
                f.severity.as_str(),
                f.title
            ));
        }
        self.agent_entry(id, now)
            .conversation
            .push(EntryKind::Notice(text));
    }
}
