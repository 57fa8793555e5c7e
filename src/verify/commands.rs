//! The rules that run a command: the tests, and the user's own `[[verify.rules]]`. A
//! command passes when it exits 0; otherwise the finding carries the tail of its output,
//! which is what the worker needs to fix it.

use crate::config::CommandRule;
use crate::protocol::{Finding, Severity};
use crate::tools::{RunStatus, ToolContext, ToolError, run_shell};
use globset::{Glob, GlobSetBuilder};
use std::collections::BTreeSet;
use std::time::Duration;

/// Lines of a failing command's output kept in its finding.
pub(super) const TAIL_LINES: usize = 30;

/// Runs `command` as rule `rule`; `None` when it passed.
pub async fn run_rule(
    ctx: &ToolContext,
    rule: &str,
    severity: Severity,
    command: &str,
    timeout: Duration,
) -> Option<Finding> {
    match run_shell(ctx, command, timeout).await {
        Ok(outcome) => failure(rule, severity, command, outcome.status, &outcome.output),
        Err(ToolError::Cancelled) => None,
        Err(e) => Some(not_run(rule, severity, command, &e)),
    }
}

/// The finding of a command that could not start.
pub(super) fn not_run(rule: &str, severity: Severity, command: &str, e: &ToolError) -> Finding {
    Finding {
        rule: rule.to_string(),
        severity,
        message: format!("`{command}` could not run: {e}"),
        fix: "tell your supervisor in known_issues; this check cannot run here".into(),
    }
}

/// How a command ended, in words; `None` when it passed.
pub(super) fn ended(status: RunStatus) -> Option<String> {
    match status {
        RunStatus::Exited(0) => None,
        RunStatus::Exited(code) => Some(format!("exited {code}")),
        RunStatus::Signalled(sig) => Some(format!("was killed by signal {sig}")),
        RunStatus::TimedOut(after) => Some(format!("did not finish within {}s", after.as_secs())),
    }
}

/// The finding of rule `rule` for `command` that ended with `status` and `output`;
/// `None` when it passed.
pub(super) fn failure(
    rule: &str,
    severity: Severity,
    command: &str,
    status: RunStatus,
    output: &str,
) -> Option<Finding> {
    let finding = |message: String, fix: String| Finding {
        rule: rule.to_string(),
        severity,
        message,
        fix,
    };
    let what = ended(status)?;
    let tail = tail(output, TAIL_LINES);
    if let Some(said) = short_message(&tail) {
        // A check that says what it wants in a line or two: that sentence first, the
        // command after (a 1.5B model read "fix the error in the grep command" from the
        // command-first form, and never wrote the line the check asked for).
        return Some(finding(
            format!("{said} (the check `{command}` {what})"),
            format!("change the files so that this holds: {said}"),
        ));
    }
    let message = if tail.is_empty() {
        format!("`{command}` {what}")
    } else {
        format!("`{command}` {what}; its output ends with:\n{tail}")
    };
    Some(finding(
        message,
        format!("make `{command}` pass (run it yourself to see the whole output)"),
    ))
}

/// A failing check's whole output when it is a short message (at most two lines), joined.
fn short_message(output: &str) -> Option<String> {
    let lines: Vec<&str> = output
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let text = lines.join(" ");
    (!lines.is_empty() && lines.len() <= 2 && text.len() <= 200).then_some(text)
}

/// Whether a rule applies to these changes: rules without `when_changed` always do.
pub fn applies(rule: &CommandRule, changed: &BTreeSet<String>) -> bool {
    if rule.when_changed.is_empty() {
        return true;
    }
    let mut set = GlobSetBuilder::new();
    for pattern in &rule.when_changed {
        // Bad globs are refused when the config and roles load; skip one here, never fail.
        if let Ok(g) = Glob::new(pattern) {
            set.add(g);
        }
        // `*.rs` should match `src/x.rs` too, as users mean it.
        if !pattern.contains('/')
            && let Ok(g) = Glob::new(&format!("**/{pattern}"))
        {
            set.add(g);
        }
    }
    let Ok(set) = set.build() else { return true };
    changed.iter().any(|p| set.is_match(p))
}

pub(super) fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.trim_end().lines().collect();
    let start = all.len().saturating_sub(lines);
    all[start..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(globs: &[&str]) -> CommandRule {
        CommandRule {
            id: "lint".into(),
            command: "true".into(),
            severity: Severity::Error,
            when_changed: globs.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn when_changed_globs_match_paths_at_any_depth() {
        let changed: BTreeSet<String> = ["src/lib.rs".to_string()].into();
        assert!(applies(&rule(&[]), &changed));
        assert!(applies(&rule(&["*.rs"]), &changed));
        assert!(applies(&rule(&["src/**"]), &changed));
        assert!(!applies(&rule(&["*.md"]), &changed));
        assert!(!applies(&rule(&["docs/*.rs"]), &changed));
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        let text = (1..=50).map(|i| format!("line {i}\n")).collect::<String>();
        let t = tail(&text, 3);
        assert_eq!(t, "line 48\nline 49\nline 50");
    }

    #[test]
    fn a_line_or_two_is_a_message_and_a_test_log_is_not() {
        assert_eq!(
            short_message("config.env must contain the line VERSION=2\n").as_deref(),
            Some("config.env must contain the line VERSION=2")
        );
        assert_eq!(
            short_message("  first\n\n second \n").as_deref(),
            Some("first second")
        );
        assert_eq!(short_message(""), None);
        assert_eq!(short_message("a\nb\nc\n"), None);
        assert_eq!(short_message(&"x".repeat(201)), None);
    }
}
