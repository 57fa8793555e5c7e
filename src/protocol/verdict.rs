use serde::{Deserialize, Serialize};

/// How much a failed check counts: errors block a result, warnings only lower its score.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    #[default]
    Error,
    Warning,
}

/// One check that did not pass.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// The rule's id (`artifact_created`, `tests`, or a user rule's own id).
    pub rule: String,
    pub severity: Severity,
    pub message: String,
    /// What the worker should do about it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub fix: String,
}

/// The outcome of checking one `return_results` against the workspace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// 1 for the first result of a task, 2 after one correction, …
    pub attempt: u32,
    /// No errors (warnings allowed).
    pub passed: bool,
    /// 100 − 20 per error − 5 per warning, at least 0.
    pub score: u8,
    #[serde(default)]
    pub failures: Vec<Finding>,
    #[serde(default)]
    pub warnings: Vec<Finding>,
    /// Correction rounds allowed (`[verify] max_corrections`): an attempt beyond it goes
    /// up as it is.
    #[serde(default)]
    pub max_corrections: u32,
}

impl Verdict {
    /// Builds the verdict of `findings`, splitting them by severity and scoring them.
    pub fn of(attempt: u32, max_corrections: u32, findings: Vec<Finding>) -> Self {
        let (failures, warnings): (Vec<Finding>, Vec<Finding>) = findings
            .into_iter()
            .partition(|f| f.severity == Severity::Error);
        let penalty = 20 * failures.len() + 5 * warnings.len();
        Self {
            attempt,
            passed: failures.is_empty(),
            score: 100usize.saturating_sub(penalty) as u8,
            failures,
            warnings,
            max_corrections,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(severity: Severity) -> Finding {
        Finding {
            rule: "r".into(),
            severity,
            message: "m".into(),
            fix: String::new(),
        }
    }

    #[test]
    fn score_is_100_minus_20_per_error_minus_5_per_warning_floored_at_0() {
        let v = Verdict::of(1, 3, vec![]);
        assert!(v.passed);
        assert_eq!(v.score, 100);
        let v = Verdict::of(
            1,
            3,
            vec![
                finding(Severity::Error),
                finding(Severity::Error),
                finding(Severity::Error),
                finding(Severity::Warning),
            ],
        );
        assert!(!v.passed);
        assert_eq!((v.score, v.failures.len(), v.warnings.len()), (35, 3, 1));
        let v = Verdict::of(2, 3, vec![finding(Severity::Warning)]);
        assert!(v.passed);
        assert_eq!(v.score, 95);
        let many = (0..6).map(|_| finding(Severity::Error)).collect();
        assert_eq!(Verdict::of(1, 3, many).score, 0);
    }
}
