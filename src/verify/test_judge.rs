//! The test command judged against the worker's start: a worker is charged only with the
//! tests it broke, not with those that already failed where it started (its base). With
//! two workers fixing two bugs, each one's view holds only its own fix: the other's test
//! fails there, and failed at the base too, so it is not this worker's failure.
//!
//! Where the output names tests (`test_outcomes.rs`), by test: failing now and not at the
//! base is broken, failing at the base and not now is fixed, failing at both was already
//! failing. Where it names none, by how the command ended: a base that failed the same way
//! (same status, same output but for numbers and the folder it ran in) excuses the
//! failure; anything else is the worker's, as without a base.

use super::commands::{TAIL_LINES, ended, failure, tail};
use super::test_outcomes::failed_tests;
use crate::protocol::{Finding, Severity};
use crate::tools::{RunStatus, ToolContext, ToolError, run_shell};
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::OnceCell;

/// The rule the test command's findings carry.
const RULE: &str = "tests";

/// Test names listed in a finding, at most.
const NAMES_SHOWN: usize = 10;

/// One run of the test command.
#[derive(Clone, Debug)]
pub struct TestRun {
    pub(crate) status: RunStatus,
    pub output: String,
    /// The folder it ran in: its path in the output is not a difference between two runs.
    pub root: PathBuf,
}

impl TestRun {
    pub fn passed(&self) -> bool {
        self.status == RunStatus::Exited(0)
    }
}

/// The test command's runs at workers' bases, by base and command, so siblings with one
/// base share one run. A run that could not be made (a checkout that failed, a cancelled
/// worker) is not kept: the next to ask tries again.
#[derive(Default)]
pub struct BaseRuns {
    runs: Mutex<HashMap<(String, String), Shared>>,
}

/// One run at a base, made once by the first to ask and read by the rest.
type Shared = Arc<OnceCell<TestRun>>;

impl BaseRuns {
    /// The run of `command` at `base`: set once, by the first to ask.
    pub fn run_of(&self, base: &str, command: &str) -> Shared {
        crate::sync::lock(&self.runs)
            .entry((base.to_string(), command.to_string()))
            .or_default()
            .clone()
    }
}

/// Runs the test command in `ctx`'s workspace.
pub async fn run_test(
    ctx: &ToolContext,
    command: &str,
    timeout: Duration,
) -> Result<TestRun, ToolError> {
    let outcome = run_shell(ctx, command, timeout).await?;
    Ok(TestRun {
        status: outcome.status,
        output: outcome.output,
        root: ctx.workspace.root().to_path_buf(),
    })
}

/// The finding of a test command that could not start.
pub fn test_not_run(command: &str, e: &ToolError) -> Finding {
    super::commands::not_run(RULE, Severity::Error, command, e)
}

/// The finding of the test command's run `now` in the worker's view, judged against its
/// run at the worker's base (`None`: there is none to compare with; then any failure is
/// the worker's). `None` when it passed. An error is what the worker broke; a warning says
/// the tests still fail, and which were failing before it started.
pub fn judge(command: &str, base: Option<&TestRun>, now: &TestRun) -> Option<Finding> {
    let what = ended(now.status)?;
    let alone = || failure(RULE, Severity::Error, command, now.status, &now.output);
    let Some(base) = base else {
        return alone();
    };
    let failing = failed_tests(&now.output);
    let before = if base.passed() {
        BTreeSet::new()
    } else {
        failed_tests(&base.output)
    };
    if !failing.is_empty() && (base.passed() || !before.is_empty()) {
        return Some(by_test(command, &what, &failing, &before, &now.output));
    }
    if base.passed() || base.status != now.status || masked(base) != masked(now) {
        let mut f = alone()?;
        if !base.passed() {
            let at_base = ended(base.status).unwrap_or_default();
            f.message.push_str(&format!(
                "\n(At your starting point it {at_base}, differently.)"
            ));
        }
        return Some(f);
    }
    Some(Finding {
        rule: RULE.into(),
        severity: Severity::Warning,
        message: format!(
            "`{command}` {what}, the same way as at your starting point: the tests were \
             already failing before you started, not because of your change"
        ),
        fix: String::new(),
    })
}

/// The finding of a run whose failing tests are named.
fn by_test(
    command: &str,
    what: &str,
    failing: &BTreeSet<String>,
    before: &BTreeSet<String>,
    output: &str,
) -> Finding {
    let broken: Vec<&String> = failing.difference(before).collect();
    let fixed: Vec<&String> = before.difference(failing).collect();
    let already: Vec<&String> = failing.intersection(before).collect();
    let mut notes = String::new();
    if !fixed.is_empty() {
        notes.push_str(&format!("\nYou fixed: {}.", list(&fixed)));
    }
    if !already.is_empty() {
        notes.push_str(&format!(
            "\nAlready failing before you started (not yours): {}.",
            list(&already)
        ));
    }
    if broken.is_empty() {
        return Finding {
            rule: RULE.into(),
            severity: Severity::Warning,
            message: format!(
                "`{command}` {what}, but you broke no test.{notes}",
                notes = notes.trim_end()
            ),
            fix: String::new(),
        };
    }
    let tail = tail(output, TAIL_LINES);
    Finding {
        rule: RULE.into(),
        severity: Severity::Error,
        message: format!(
            "`{command}` {what}: you broke {} that did not fail before you started: {}.\
             {notes}\nIts output ends with:\n{tail}",
            count(broken.len()),
            list(&broken),
        ),
        fix: format!(
            "make {} pass again (run `{command}` yourself to see the whole output); tests \
             that were already failing are not yours to fix",
            list(&broken)
        ),
    }
}

fn count(n: usize) -> String {
    if n == 1 {
        "1 test".into()
    } else {
        format!("{n} tests")
    }
}

fn list(names: &[&String]) -> String {
    let shown: Vec<&str> = names.iter().take(NAMES_SHOWN).map(|s| s.as_str()).collect();
    let more = names.len().saturating_sub(NAMES_SHOWN);
    let mut text = shown.join(", ");
    if more > 0 {
        text.push_str(&format!(" and {more} more"));
    }
    text
}

/// A run's output with the folder it ran in and every run of digits (times, counts that
/// vary, addresses) made alike, so two runs that failed the same way compare equal.
fn masked(run: &TestRun) -> String {
    let text = run
        .output
        .replace(run.root.to_string_lossy().as_ref(), "<root>");
    let mut out = String::with_capacity(text.len());
    let mut in_digits = false;
    for c in text.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push('0');
            }
            in_digits = true;
        } else {
            out.push(c);
            in_digits = false;
        }
    }
    out
}

#[cfg(test)]
#[path = "test_judge_tests.rs"]
mod tests;
