//! Code review (`/review`, `squad review`): what is reviewed (`target`), what a reviewer
//! answers (`finding`), each finding checked against the code (`check`) and duplicates
//! made one (`merge`). The reviewers themselves are agents of the team, which the runtime
//! starts (`runtime/review.rs`); this module is the part that needs no agent, so it is
//! tested without a model.

pub mod check;
pub mod finding;
pub mod merge;
pub mod target;

use crate::protocol::{DroppedFinding, ReviewFinding};
use std::path::PathBuf;
use target::Reviewed;

/// The role every reviewer runs as.
pub const REVIEWER_ROLE: &str = "code_reviewer";

#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    #[error("{0} is not in a git repository; a review needs git")]
    NotARepository(PathBuf),
    #[error("no commit `{0}`: {1}")]
    Revision(String, String),
    #[error("git failed: {0}")]
    Git(String),
}

/// One reviewer's angle on the change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Focus {
    pub name: &'static str,
    /// What this reviewer looks for (and leaves to the others).
    pub asks: &'static str,
}

const CORRECTNESS: Focus = Focus {
    name: "correctness",
    asks: "bugs: wrong results, off-by-one errors, unhandled errors and edge cases, \
           races, resource leaks, broken callers of changed code",
};
const TESTS: Focus = Focus {
    name: "tests",
    asks: "tests: changed behaviour without a test, tests that cannot fail or test the \
           wrong thing, and code the tests show to be wrong",
};
const SECURITY: Focus = Focus {
    name: "security",
    asks: "security: injection, paths leaving their root, secrets in code or logs, \
           unchecked outside input, unsafe defaults",
};
const RULES: Focus = Focus {
    name: "rules",
    asks: "the project's own rules in AGENTS.md (read it first): each place the change \
           breaks one, naming the rule",
};

/// The reviewers to start: correctness, tests and security, and the project's rules when
/// it has an AGENTS.md to hold them to.
pub fn focuses(has_rules: bool) -> Vec<Focus> {
    let mut out = vec![CORRECTNESS, TESTS, SECURITY];
    if has_rules {
        out.push(RULES);
    }
    out
}

/// A reviewer's task: the change, its focus, and the answer's shape.
pub fn task(focus: &Focus, reviewed: &Reviewed) -> String {
    let diff = crate::text::clip(&reviewed.diff, target::MAX_DIFF_BYTES);
    let place = match &reviewed.rev {
        None => "the workspace's files as they are now".to_string(),
        Some(rev) => {
            format!("the files at commit {rev} (read_file shows the workspace, which may differ)")
        }
    };
    format!(
        "Review {target}. Your focus: {asks}. Other reviewers cover the other angles; \
         report only what is in your focus.\n\n\
         Findings are about {place}. Read files for context when you need it; you only \
         read, you change nothing.\n\n\
         The change:\n```diff\n{diff}\n```\n\n\
         Answer with only this JSON object as your final message (an empty list when you \
         find nothing):\n{shape}\n\
         `line`/`end_line` are 1-based lines of the file after the change; `quote` is the \
         code at those lines, copied exactly. Findings whose quote is not at its lines are \
         dropped.",
        target = reviewed.target,
        asks = focus.asks,
        shape = finding::ANSWER_SHAPE,
    )
}

/// The correction a reviewer gets once when its answer was not the JSON asked for.
pub fn correction(error: &str) -> String {
    format!(
        "Your answer could not be read ({error}). Answer again with only the JSON object \
         asked for: {}",
        finding::ANSWER_SHAPE
    )
}

/// What the review shows: the reviewers' findings checked against the code at the
/// reviewed revision, then merged; and what was dropped, with why.
pub async fn conclude(
    reviewed: &Reviewed,
    found: Vec<ReviewFinding>,
    mut dropped: Vec<DroppedFinding>,
) -> (Vec<ReviewFinding>, Vec<DroppedFinding>) {
    let mut texts: std::collections::HashMap<String, Option<String>> = Default::default();
    let mut kept = Vec::new();
    for finding in found {
        if !texts.contains_key(&finding.file) {
            let text = reviewed.read(&finding.file).await;
            texts.insert(finding.file.clone(), text);
        }
        let text = texts.get(&finding.file).and_then(|t| t.as_deref());
        match check::check(&finding, text) {
            Ok(()) => kept.push(finding),
            Err(reason) => dropped.push(DroppedFinding { finding, reason }),
        }
    }
    (merge::merge(kept), merge::merge_dropped(dropped))
}
