//! What a reviewer answers: one JSON object `{"findings":[…]}` as its final message,
//! parsed against a fixed shape. A finding missing what squad needs to check it is
//! dropped with a reason; an answer that is not that object at all is an error the
//! reviewer is shown once, to answer again.

use crate::protocol::{DroppedFinding, ReviewFinding, ReviewSeverity};
use serde::Deserialize;

/// The shape of a reviewer's answer, told in its task.
pub const ANSWER_SHAPE: &str = r#"{"findings": [{"file": "src/x.rs", "line": 12, "end_line": 14, "severity": "high|medium|low", "title": "one line", "body": "what is wrong, why it matters, the fix", "quote": "the exact code at those lines, copied from the file"}]}"#;

#[derive(Deserialize)]
struct Answer {
    findings: Vec<Reported>,
}

/// One finding as the reviewer wrote it; every field optional so one bad finding does
/// not cost the others.
#[derive(Deserialize)]
struct Reported {
    #[serde(default)]
    file: Option<String>,
    #[serde(default)]
    line: Option<i64>,
    #[serde(default)]
    end_line: Option<i64>,
    #[serde(default)]
    severity: Option<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    quote: Option<String>,
}

/// The findings of `focus`'s reviewer and the ones it wrote malformed, or why the answer
/// as a whole is not the object asked for.
pub fn parse_answer(
    text: &str,
    focus: &str,
) -> Result<(Vec<ReviewFinding>, Vec<DroppedFinding>), String> {
    let json = json_object(text).ok_or("the answer holds no JSON object")?;
    let answer: Answer =
        serde_json::from_str(json).map_err(|e| format!("not the shape asked for: {e}"))?;
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    for r in answer.findings {
        match r.into_finding(focus) {
            (f, None) => kept.push(f),
            (finding, Some(reason)) => dropped.push(DroppedFinding { finding, reason }),
        }
    }
    Ok((kept, dropped))
}

impl Reported {
    /// The finding, and what makes it malformed if anything does.
    fn into_finding(self, focus: &str) -> (ReviewFinding, Option<String>) {
        let severity = match self.severity.as_deref().map(str::trim) {
            Some("high" | "critical" | "error") => Some(ReviewSeverity::High),
            Some("medium" | "warning") => Some(ReviewSeverity::Medium),
            Some("low" | "info" | "nit") => Some(ReviewSeverity::Low),
            _ => None,
        };
        let line = self
            .line
            .and_then(|l| u32::try_from(l).ok())
            .filter(|l| *l > 0);
        let end_line = self.end_line.and_then(|l| u32::try_from(l).ok());
        let finding = ReviewFinding {
            file: self.file.unwrap_or_default().trim().to_string(),
            line: line.unwrap_or(0),
            end_line,
            severity: severity.unwrap_or(ReviewSeverity::Medium),
            focus: vec![focus.to_string()],
            title: self.title.unwrap_or_default().trim().to_string(),
            body: self.body.unwrap_or_default().trim().to_string(),
            quote: self.quote.unwrap_or_default(),
        };
        let problem = if finding.file.is_empty() {
            Some("malformed: no file".to_string())
        } else if line.is_none() {
            Some("malformed: no line (1-based)".to_string())
        } else if finding.title.is_empty() {
            Some("malformed: no title".to_string())
        } else if severity.is_none() {
            Some("malformed: severity must be high, medium or low".to_string())
        } else if end_line.is_some_and(|e| e < finding.line) {
            Some("malformed: end_line is before line".to_string())
        } else {
            None
        };
        (finding, problem)
    }
}

/// The JSON object in a reply: the whole text, a fenced block, or the span from the first
/// `{` to the last `}` (models wrap JSON in words and fences).
fn json_object(text: &str) -> Option<&str> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    (end > start).then(|| &text[start..=end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_fenced_json_and_drops_malformed_findings() {
        let text = "Here it is:\n```json\n{\"findings\": [\
            {\"file\": \"a.rs\", \"line\": 3, \"severity\": \"high\", \"title\": \"off by one\", \"quote\": \"i <= n\"},\
            {\"file\": \"a.rs\", \"line\": 0, \"severity\": \"low\", \"title\": \"x\"},\
            {\"file\": \"b.rs\", \"line\": 2, \"severity\": \"urgent\", \"title\": \"y\"}\
            ]}\n```";
        let (kept, dropped) = parse_answer(text, "tests").unwrap();
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].focus, ["tests"]);
        assert_eq!(kept[0].severity, ReviewSeverity::High);
        assert_eq!(dropped.len(), 2);
        assert!(dropped[0].reason.contains("no line"));
        assert!(dropped[1].reason.contains("severity"));
    }

    #[test]
    fn an_answer_without_the_object_is_an_error() {
        assert!(parse_answer("looks fine to me", "tests").is_err());
        assert!(parse_answer("{\"issues\": []}", "tests").is_err());
        assert_eq!(parse_answer("{\"findings\": []}", "t").unwrap().0, vec![]);
    }
}
