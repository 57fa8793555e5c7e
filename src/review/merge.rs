//! Findings of several reviewers made one list: two findings on the same file, at lines
//! that overlap or lie within a few lines of each other, with the same quoted code or
//! similar titles, are one finding naming every focus that found it (the most severe
//! wording kept). Pure.

use super::check::NEAR;
use crate::protocol::{DroppedFinding, ReviewFinding};
use std::collections::BTreeSet;

/// One finding per problem, most severe first, then by file and line.
pub fn merge(findings: Vec<ReviewFinding>) -> Vec<ReviewFinding> {
    let mut sorted = findings;
    // The most severe of duplicates is the one kept.
    sorted.sort_by_key(|f| f.severity);
    let mut out: Vec<ReviewFinding> = Vec::new();
    for f in sorted {
        match out.iter_mut().find(|kept| same_problem(kept, &f)) {
            Some(kept) => {
                for focus in f.focus {
                    if !kept.focus.contains(&focus) {
                        kept.focus.push(focus);
                    }
                }
            }
            None => out.push(f),
        }
    }
    out.sort_by(|a, b| (a.severity, &a.file, a.line).cmp(&(b.severity, &b.file, b.line)));
    out
}

/// Dropped findings made one list the same way: one per problem, naming every focus
/// that reported it (the first reason kept), so a finding is not listed once per reviewer.
pub fn merge_dropped(dropped: Vec<DroppedFinding>) -> Vec<DroppedFinding> {
    let mut out: Vec<DroppedFinding> = Vec::new();
    for d in dropped {
        match (out.iter_mut()).find(|kept| same_problem(&kept.finding, &d.finding)) {
            Some(kept) => {
                for focus in d.finding.focus {
                    if !kept.finding.focus.contains(&focus) {
                        kept.finding.focus.push(focus);
                    }
                }
            }
            None => out.push(d),
        }
    }
    out
}

/// Whether `a` and `b` tell of one problem.
pub fn same_problem(a: &ReviewFinding, b: &ReviewFinding) -> bool {
    let near = a.line <= b.last_line() + NEAR && b.line <= a.last_line() + NEAR;
    if a.file != b.file || !near {
        return false;
    }
    let (qa, qb) = (squash(&a.quote), squash(&b.quote));
    (!qa.is_empty() && qa == qb) || similar(&a.title, &b.title)
}

/// Titles sharing at least half their words (Jaccard on lower-cased words).
fn similar(a: &str, b: &str) -> bool {
    let words = |s: &str| -> BTreeSet<String> {
        s.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    let (a, b) = (words(a), words(b));
    let union = a.union(&b).count();
    union > 0 && a.intersection(&b).count() * 2 >= union
}

fn squash(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ReviewSeverity;

    fn f(
        file: &str,
        line: u32,
        sev: ReviewSeverity,
        focus: &str,
        title: &str,
        quote: &str,
    ) -> ReviewFinding {
        ReviewFinding {
            file: file.into(),
            line,
            end_line: None,
            severity: sev,
            focus: vec![focus.into()],
            title: title.into(),
            body: String::new(),
            quote: quote.into(),
        }
    }

    #[test]
    fn duplicates_become_one_finding_naming_both_focuses() {
        use ReviewSeverity::*;
        let merged = merge(vec![
            f(
                "a.rs",
                5,
                Medium,
                "tests",
                "Loop reads past the end",
                "for i in 0..=n",
            ),
            f(
                "a.rs",
                6,
                High,
                "correctness",
                "Off-by-one: loop reads past the end",
                "for i in 0..=n",
            ),
            f(
                "a.rs",
                30,
                Low,
                "correctness",
                "Off-by-one: loop reads past the end",
                "x",
            ),
            f(
                "b.rs",
                5,
                Low,
                "security",
                "Loop reads past the end",
                "for i in 0..=n",
            ),
        ]);
        assert_eq!(merged.len(), 3);
        assert_eq!(merged[0].severity, High);
        assert_eq!(merged[0].focus, ["correctness", "tests"]);
        assert_eq!((merged[1].file.as_str(), merged[1].line), ("a.rs", 30));
        assert_eq!(merged[2].file, "b.rs");
    }

    #[test]
    fn near_findings_with_other_titles_and_quotes_stay_apart() {
        use ReviewSeverity::*;
        let merged = merge(vec![
            f(
                "a.rs",
                5,
                High,
                "correctness",
                "Overflow on large input",
                "a + b",
            ),
            f(
                "a.rs",
                6,
                High,
                "security",
                "Path is not checked",
                "open(p)",
            ),
        ]);
        assert_eq!(merged.len(), 2);
    }

    #[test]
    fn merging_is_idempotent_and_keeps_every_focus() {
        // Property: merging twice gives what merging once gave, and no focus is lost.
        use ReviewSeverity::*;
        let sevs = [High, Medium, Low];
        let all: Vec<ReviewFinding> = (0..40u32)
            .map(|i| {
                f(
                    if i % 3 == 0 { "a.rs" } else { "b.rs" },
                    1 + (i * 7) % 25,
                    sevs[(i % 3) as usize],
                    ["correctness", "tests", "security"][(i % 3) as usize],
                    ["Leak in loop", "Wrong bound", "Unchecked path"][(i % 5 % 3) as usize],
                    "",
                )
            })
            .collect();
        let once = merge(all.clone());
        assert_eq!(merge(once.clone()), once);
        let focuses = |v: &[ReviewFinding]| -> BTreeSet<String> {
            v.iter().flat_map(|f| f.focus.clone()).collect()
        };
        assert_eq!(focuses(&once), focuses(&all));
        assert!(once.len() <= all.len());
    }

    #[test]
    fn dropped_findings_are_merged_like_kept_ones() {
        use ReviewSeverity::*;
        let dropped = |focus: &str| DroppedFinding {
            finding: f(
                "a.rs",
                5,
                High,
                focus,
                "Loop reads past the end",
                "for i in 0..=n",
            ),
            reason: "the quote is not at a.rs:5".into(),
        };
        let other = DroppedFinding {
            finding: f("b.rs", 9, Low, "tests", "No test for empty input", "fn sum"),
            reason: "b.rs has no line 9".into(),
        };
        let merged = merge_dropped(vec![
            dropped("correctness"),
            dropped("tests"),
            dropped("security"),
            other.clone(),
        ]);
        assert_eq!(merged.len(), 2, "{merged:?}");
        assert_eq!(
            merged[0].finding.focus,
            ["correctness", "tests", "security"]
        );
        assert_eq!(merged[1], other);
    }
}
