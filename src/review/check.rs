//! Each finding checked against the code before it is shown: a reviewer's finding names a
//! file and lines and quotes the code there; a finding whose file or lines do not exist,
//! or whose quote is not at (or a few lines from) its lines, is dropped with the reason.
//! Pure: the file's text is handed in.

use crate::protocol::ReviewFinding;

/// How far from its lines a quote may be found (reviewers miscount by a line or two).
pub const NEAR: u32 = 3;

/// `Ok` when `finding` holds against `text` (the file at the reviewed revision, `None`
/// when there is no such file), else why not.
pub fn check(finding: &ReviewFinding, text: Option<&str>) -> Result<(), String> {
    let Some(text) = text else {
        return Err(format!("no file {} at the reviewed revision", finding.file));
    };
    let lines: Vec<&str> = text.lines().collect();
    let count = lines.len() as u32;
    if finding.line > count || finding.last_line() > count {
        return Err(format!(
            "line {} is past the end of {} ({count} lines)",
            finding.last_line(),
            finding.file
        ));
    }
    let quote = squash(&finding.quote);
    if quote.is_empty() {
        return Err("no quoted code to check the finding against".into());
    }
    let from = finding.line.saturating_sub(NEAR).max(1) as usize - 1;
    let to = (finding.last_line() + NEAR).min(count) as usize;
    let window = squash(&lines[from..to].join("\n"));
    if window.contains(&quote) || window.contains(&squash(&unmarked(&finding.quote))) {
        return Ok(());
    }
    Err(format!(
        "the quoted code is not at {} (lines {}-{to} checked)",
        finding.place(),
        from + 1
    ))
}

/// The text without whitespace: the check does not care how code is indented or wrapped.
fn squash(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// A quote copied from the diff: each line's leading `+` or `-` marker dropped.
fn unmarked(quote: &str) -> String {
    quote
        .lines()
        .map(|l| l.strip_prefix(['+', '-']).unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ReviewSeverity;

    const FILE: &str = "fn a() {}\n\nfn sum(v: &[u32]) -> u32 {\n    let mut t = 0;\n    for i in 0..=v.len() {\n        t += v[i];\n    }\n    t\n}\n";

    fn finding(line: u32, end: Option<u32>, quote: &str) -> ReviewFinding {
        ReviewFinding {
            file: "src/sum.rs".into(),
            line,
            end_line: end,
            severity: ReviewSeverity::High,
            focus: vec!["correctness".into()],
            title: "t".into(),
            body: String::new(),
            quote: quote.into(),
        }
    }

    #[test]
    fn a_quote_at_its_line_or_near_it_passes_whatever_the_spacing() {
        assert_eq!(
            check(&finding(5, None, "for i in 0..=v.len()"), Some(FILE)),
            Ok(())
        );
        assert_eq!(
            check(&finding(3, None, "for i in 0..=v.len() {"), Some(FILE)),
            Ok(())
        );
        assert_eq!(
            check(
                &finding(5, Some(6), "for i in 0..=v.len() {\n t += v[i];"),
                Some(FILE)
            ),
            Ok(())
        );
        assert_eq!(
            check(&finding(5, None, "+    for  i in 0..=v.len()"), Some(FILE)),
            Ok(())
        );
    }

    #[test]
    fn a_missing_file_line_or_quote_is_dropped_with_why() {
        let e = check(&finding(5, None, "x"), None).unwrap_err();
        assert!(e.contains("no file src/sum.rs"), "{e}");
        let e = check(&finding(40, None, "t"), Some(FILE)).unwrap_err();
        assert!(e.contains("past the end") && e.contains("9 lines"), "{e}");
        let e = check(&finding(8, Some(12), "t"), Some(FILE)).unwrap_err();
        assert!(e.contains("past the end"), "{e}");
        let e = check(&finding(5, None, "unsafe { free(p) }"), Some(FILE)).unwrap_err();
        assert!(e.contains("not at src/sum.rs:5"), "{e}");
        let e = check(&finding(5, None, "  "), Some(FILE)).unwrap_err();
        assert!(e.contains("no quoted code"), "{e}");
        // Right code, wrong place: far from the given line it does not count.
        let far = "fn a() {}\n".repeat(20) + "let x = 1;\n";
        assert!(check(&finding(2, None, "let x = 1;"), Some(&far)).is_err());
    }

    #[test]
    fn every_line_of_a_file_checks_against_itself() {
        // Property: a finding quoting any line of a file at that line passes, and at any
        // line more than NEAR away from every copy of it fails.
        let text: String = (1..=50).map(|i| format!("let v{i} = {i};\n")).collect();
        for i in 1..=50u32 {
            let quote = format!("let v{i} = {i};");
            assert_eq!(
                check(&finding(i, None, &quote), Some(&text)),
                Ok(()),
                "line {i}"
            );
            for at in 1..=50u32 {
                let ok = check(&finding(at, None, &quote), Some(&text)).is_ok();
                assert_eq!(ok, at.abs_diff(i) <= NEAR, "quote of {i} at {at}");
            }
        }
    }
}
