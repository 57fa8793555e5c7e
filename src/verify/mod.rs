//! Checking a worker's result against the workspace: what changed on disk since it
//! started, the rules a result must pass, and the correction it gets when it does not.
//! The runtime decides when to check and what to do with the verdict
//! (`runtime/verification.rs`); this module only knows files, commands and results.

mod commands;
mod diff;
mod rules;
mod snapshot;
mod test_judge;
mod test_outcomes;

pub use commands::{applies, run_rule};
pub use diff::change_text;
pub use rules::{Earlier, Evidence, check_result, claims_a_change, content_mark};
pub use snapshot::{Changes, Snapshot, Stamp, relative};
pub use test_judge::{BaseRuns, TestRun, judge as judge_tests, run_test, test_not_run};

use crate::protocol::Verdict;

/// The message a worker gets when its result did not pass: the task, every failure with
/// its fix, and what to do next. `round` counts corrections from 1, of at most `max`.
pub fn correction_message(task: &str, verdict: &Verdict, round: u32, max: u32) -> String {
    let mut out = format!(
        "Your result was checked against the workspace and did not pass \
         (score {}; correction {round} of {max}). Fix only these, then call \
         return_results again with an accurate result:\n",
        verdict.score_text(),
    );
    for (i, f) in verdict.failures.iter().enumerate() {
        out.push_str(&format!("{}. [{}] {}\n", i + 1, f.rule, f.message));
        if !f.fix.is_empty() {
            out.push_str(&format!("   Fix: {}\n", f.fix));
        }
    }
    if !verdict.warnings.is_empty() {
        out.push_str("\nWarnings (they lower the score but do not block the result):\n");
        for f in &verdict.warnings {
            out.push_str(&format!("- [{}] {}", f.rule, f.message));
            if !f.fix.is_empty() {
                out.push_str(&format!(" Fix: {}", f.fix));
            }
            out.push('\n');
        }
    }
    // The task comes last: a small model read a task that said otherwise than a check
    // (VERSION=1 asked, VERSION=2 checked) as the thing to keep.
    out.push_str(&format!(
        "\nThese checks are the project's rules: where your task says otherwise, the checks \
         win. If a failure cannot be fixed, call return_results with status \"failure\" or \
         \"partial\" and say why in known_issues.\n\nFor reference, your task was:\n{}",
        task.trim()
    ));
    out
}
