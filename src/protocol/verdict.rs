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
    /// No errors (warnings allowed). An unchecked result has none either: see `unchecked`.
    pub passed: bool,
    /// 100 − 20 per error − 5 per warning, at least 0; `None` when nothing was checked (a
    /// result with nothing to check earns no score, least of all 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<u8>,
    /// Nothing could be checked: no change, no claim of one, no command or reviewer ran.
    /// Shown as `unchecked`, never as a ✓.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unchecked: bool,
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
            score: Some(100usize.saturating_sub(penalty) as u8),
            unchecked: false,
            failures,
            warnings,
            max_corrections,
        }
    }

    /// The verdict of a result nothing could be checked against (its `findings` are
    /// warnings about the result itself): no score, shown as `unchecked`.
    pub fn unchecked(attempt: u32, max_corrections: u32, findings: Vec<Finding>) -> Self {
        Self {
            score: None,
            unchecked: true,
            ..Self::of(attempt, max_corrections, findings)
        }
    }

    /// `✓ 95`, `✗ 40` or `unchecked`: the verdict in a word, as every front end shows it.
    pub fn mark(&self) -> String {
        match (self.unchecked, self.passed, self.score) {
            (true, _, _) | (_, _, None) => "unchecked".to_string(),
            (false, true, Some(s)) => format!("\u{2713}{s}"),
            (false, false, Some(s)) => format!("\u{2717}{s}"),
        }
    }

    /// The score as `95/100`, or `unchecked`.
    pub fn score_text(&self) -> String {
        self.score
            .filter(|_| !self.unchecked)
            .map_or_else(|| "unchecked".to_string(), |s| format!("{s}/100"))
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
        assert_eq!(v.score, Some(100));
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
        assert_eq!(
            (v.score, v.failures.len(), v.warnings.len()),
            (Some(35), 3, 1)
        );
        let v = Verdict::of(2, 3, vec![finding(Severity::Warning)]);
        assert!(v.passed);
        assert_eq!(v.score, Some(95));
        let many = (0..6).map(|_| finding(Severity::Error)).collect();
        assert_eq!(Verdict::of(1, 3, many).score, Some(0));
    }

    #[test]
    fn nothing_checked_is_unchecked_with_no_score_in_every_form() {
        let v = Verdict::unchecked(1, 3, vec![finding(Severity::Warning)]);
        assert!(v.unchecked && v.passed && v.score.is_none());
        assert_eq!(
            (v.mark(), v.score_text()),
            ("unchecked".into(), "unchecked".into())
        );
        let json = serde_json::to_value(&v).unwrap();
        assert_eq!(json["unchecked"], true);
        assert!(json.get("score").is_none(), "{json}");
        let checked = serde_json::to_value(Verdict::of(1, 3, vec![])).unwrap();
        assert!(checked.get("unchecked").is_none() && checked["score"] == 100);
        assert_eq!(Verdict::of(1, 3, vec![]).mark(), "\u{2713}100");
        // A verdict of an older log (a score, no flag) reads back as checked.
        let old: Verdict =
            serde_json::from_str(r#"{"attempt":1,"passed":true,"score":100}"#).unwrap();
        assert_eq!((old.unchecked, old.score), (false, Some(100)));
    }
}
