//! Applying an update's hunks to a file's text, in memory.
//!
//! Each hunk is looked for after the one before (hunks come in the file's order): its
//! `@@` anchors first, each after the previous, then its old lines. Lines match exactly
//! first, then ignoring trailing whitespace, then ignoring all surrounding whitespace, so a
//! model that gets indentation or trailing spaces slightly wrong still lands, while the
//! exact match wins wherever there is one.

use super::parse::Hunk;

/// Why a hunk did not apply; the caller adds the file's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HunkError {
    /// 1-based, in the update's order.
    pub number: usize,
    /// `@@ def foo():`, or `@@`.
    pub label: String,
    pub missing: Missing,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Missing {
    /// An `@@` anchor line was not found after `after_line` (1-based; 0: the file's start).
    Anchor { anchor: String, after_line: usize },
    /// The hunk's context and removed lines were not found after `after_line`.
    Lines {
        lines: Vec<String>,
        after_line: usize,
        /// Where they do occur, when that is above where they were looked for (out of order).
        earlier_at: Option<usize>,
    },
}

impl std::fmt::Display for HunkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let from = |after: usize| {
            if after == 0 {
                String::new()
            } else {
                format!(" after line {after}")
            }
        };
        match &self.missing {
            Missing::Anchor { anchor, after_line } => write!(
                f,
                "hunk {} ({}): the anchor line '{anchor}' was not found{}",
                self.number,
                self.label,
                from(*after_line)
            ),
            Missing::Lines {
                lines,
                after_line,
                earlier_at,
            } => {
                write!(
                    f,
                    "hunk {} ({}): these lines were not found{}:",
                    self.number,
                    self.label,
                    from(*after_line)
                )?;
                for line in lines.iter().take(MAX_SHOWN) {
                    write!(f, "\n  |{line}")?;
                }
                if lines.len() > MAX_SHOWN {
                    write!(f, "\n  |… ({} more lines)", lines.len() - MAX_SHOWN)?;
                }
                if let Some(at) = earlier_at {
                    write!(
                        f,
                        "\n(they are at line {at}, above where this hunk was looked for: hunks \
                         must come in the file's order, each below its @@ anchors)"
                    )?;
                }
                Ok(())
            }
        }
    }
}

/// The most lines of a failed hunk quoted back; the model has them in its own patch.
const MAX_SHOWN: usize = 20;

/// A text as lines, each with its own ending (`\n`, `\r\n`, a lone `\r`, or none for a
/// last line without one), so an edit changes only the lines it names and a file of mixed
/// or old Mac endings keeps them.
struct Lines {
    lines: Vec<String>,
    ends: Vec<&'static str>,
    /// The ending most lines have: the one new lines get.
    eol: &'static str,
}

impl Lines {
    fn split(text: &str) -> Self {
        let (mut lines, mut ends) = (Vec::new(), Vec::new());
        let mut rest = text;
        while !rest.is_empty() {
            let Some(at) = rest.find(['\n', '\r']) else {
                lines.push(rest.to_string());
                ends.push("");
                break;
            };
            let end = match &rest[at..] {
                r if r.starts_with("\r\n") => "\r\n",
                r if r.starts_with('\r') => "\r",
                _ => "\n",
            };
            lines.push(rest[..at].to_string());
            ends.push(end);
            rest = &rest[at + end.len()..];
        }
        let count = |e: &str| ends.iter().filter(|&&x| x == e).count();
        let eol = ["\r\n", "\r"]
            .into_iter()
            .find(|e| count(e) > count("\n"))
            .unwrap_or("\n");
        Self { lines, ends, eol }
    }

    /// Back to text. Every line but the last gets an ending if an edit left it without
    /// one; the last one ends as the file's last line did (an empty file gets one).
    fn join(mut self, final_end: Option<&'static str>) -> String {
        let n = self.lines.len();
        for (i, end) in self.ends.iter_mut().enumerate() {
            if i + 1 < n && end.is_empty() {
                *end = self.eol;
            }
        }
        if let Some(last) = self.ends.last_mut() {
            match final_end {
                Some("") => *last = "",
                _ if last.is_empty() => *last = self.eol,
                _ => {}
            }
        }
        let mut out = String::new();
        for (line, end) in self.lines.iter().zip(&self.ends) {
            out.push_str(line);
            out.push_str(end);
        }
        out
    }
}

/// A line and its ending.
type Line = (String, &'static str);

/// The ways two lines may match, strictest first.
const LEVELS: [fn(&str, &str) -> bool; 3] = [
    |a, b| a == b,
    |a, b| a.trim_end() == b.trim_end(),
    |a, b| a.trim() == b.trim(),
];

/// Where `pattern` occurs in `lines` at or after `from`: the strictest level that finds it
/// anywhere wins. With `at_end`, the position that ends the file is tried first.
fn seek(lines: &[String], pattern: &[String], from: usize, at_end: bool) -> Option<usize> {
    if pattern.len() > lines.len() {
        return None;
    }
    let last_start = lines.len() - pattern.len();
    let matches_at = |at: usize, level: fn(&str, &str) -> bool| {
        pattern.iter().zip(&lines[at..]).all(|(p, l)| level(l, p))
    };
    for level in LEVELS {
        if at_end && last_start >= from && matches_at(last_start, level) {
            return Some(last_start);
        }
        if let Some(at) = (from..=last_start).find(|&at| matches_at(at, level)) {
            return Some(at);
        }
    }
    None
}

/// An anchor line after `from`: as context lines match, and at last any line that starts
/// with it (models shorten `@@ def foo(a, b):` to `@@ def foo`).
fn seek_anchor(lines: &[String], anchor: &str, from: usize) -> Option<usize> {
    let one = [anchor.to_string()];
    seek(lines, &one, from, false).or_else(|| {
        let want = anchor.trim();
        (from..lines.len()).find(|&i| lines[i].trim_start().starts_with(want))
    })
}

/// The text with every hunk applied, or the first hunk that does not apply.
pub fn apply_hunks(text: &str, hunks: &[Hunk]) -> Result<String, HunkError> {
    let mut file = Lines::split(text);
    let final_end = file.ends.last().copied();
    // (start, lines replaced, new lines with their endings), in file order.
    let mut edits: Vec<(usize, usize, Vec<Line>)> = Vec::new();
    let mut cursor = 0;
    for (i, hunk) in hunks.iter().enumerate() {
        let fail = |missing| HunkError {
            number: i + 1,
            label: hunk.label(),
            missing,
        };
        for anchor in &hunk.anchors {
            match seek_anchor(&file.lines, anchor, cursor) {
                Some(at) => cursor = at + 1,
                None => {
                    return Err(fail(Missing::Anchor {
                        anchor: anchor.clone(),
                        after_line: cursor,
                    }));
                }
            }
        }
        if hunk.old.is_empty() {
            // A pure addition: after its anchor, else at the end of the file.
            let at = if hunk.anchors.is_empty() || hunk.end_of_file {
                file.lines.len()
            } else {
                cursor
            };
            let new = hunk.new.iter().map(|l| (l.clone(), file.eol)).collect();
            edits.push((at, 0, new));
            cursor = at;
            continue;
        }
        match seek(&file.lines, &hunk.old, cursor, hunk.end_of_file) {
            Some(at) => {
                // Context keeps its own text and ending; the last line written in place
                // of removed ones ends as the last removed line did.
                let mut new: Vec<Line> = hunk
                    .new
                    .iter()
                    .zip(&hunk.context)
                    .map(|(line, context)| match context {
                        Some(i) => (file.lines[at + i].clone(), file.ends[at + i]),
                        None => (line.clone(), file.eol),
                    })
                    .collect();
                if let (Some(last), Some(None)) = (new.last_mut(), hunk.context.last()) {
                    last.1 = file.ends[at + hunk.old.len() - 1];
                }
                edits.push((at, hunk.old.len(), new));
                cursor = at + hunk.old.len();
            }
            None => {
                let earlier_at = seek(&file.lines, &hunk.old, 0, false).map(|at| at + 1);
                return Err(fail(Missing::Lines {
                    lines: hunk.old.clone(),
                    after_line: cursor,
                    earlier_at,
                }));
            }
        }
    }
    // Back to front, so each edit's position still holds.
    for (at, len, new) in edits.into_iter().rev() {
        let (lines, ends): (Vec<String>, Vec<&'static str>) = new.into_iter().unzip();
        file.lines.splice(at..at + len, lines);
        file.ends.splice(at..at + len, ends);
    }
    Ok(file.join(final_end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::patch::parse::{FileOp, parse};

    /// The hunks of an update whose body (`@@` lines and hunk lines) is `body`.
    fn hunks(body: &str) -> Vec<Hunk> {
        let patch = parse(&format!(
            "*** Begin Patch\n*** Update File: f\n{body}\n*** End Patch"
        ))
        .unwrap();
        match patch.ops.into_iter().next() {
            Some(FileOp::Update { hunks, .. }) => hunks,
            other => panic!("an update: {other:?}"),
        }
    }

    #[test]
    fn exact_wins_over_a_looser_match_earlier_in_the_file() {
        let out = apply_hunks("x  \nx\n", &hunks("-x\n+y")).unwrap();
        assert_eq!(out, "x  \ny\n");
    }

    #[test]
    fn trailing_then_surrounding_whitespace_is_forgiven_and_context_keeps_the_files() {
        let out = apply_hunks("a  \n    b\n", &hunks(" a\n-b\n+c")).unwrap();
        assert_eq!(out, "a  \nc\n");
    }

    #[test]
    fn crlf_and_a_missing_final_newline_are_kept() {
        let out = apply_hunks("a\r\nb", &hunks("-b\n+c\n+d")).unwrap();
        assert_eq!(out, "a\r\nc\r\nd");
    }

    #[test]
    fn mixed_line_ends_are_left_as_they_are() {
        let out = apply_hunks("a\r\nb\nc\r\n", &hunks(" a\n-b\n+B")).unwrap();
        assert_eq!(out, "a\r\nB\nc\r\n");
    }

    #[test]
    fn nested_anchors_pick_the_right_repeat() {
        let text = "class A:\n  def f():\n    x = 1\nclass B:\n  def f():\n    x = 1\n";
        let out = apply_hunks(
            text,
            &hunks("@@ class B:\n@@ def f():\n-    x = 1\n+    x = 2"),
        );
        let out = out.unwrap();
        assert!(out.ends_with("class B:\n  def f():\n    x = 2\n"), "{out}");
        assert!(
            out.starts_with("class A:\n  def f():\n    x = 1\n"),
            "{out}"
        );
    }

    #[test]
    fn a_hunk_before_the_previous_one_says_so() {
        let err = apply_hunks("a\nb\nc\n", &hunks("@@\n-c\n+C\n@@\n-a\n+A")).unwrap_err();
        assert_eq!(err.number, 2);
        assert!(
            err.to_string()
                .contains("at line 1, above where this hunk was looked for"),
            "{err}"
        );
    }

    #[test]
    fn an_anchor_not_found_is_named() {
        let err = apply_hunks("a\n", &hunks("@@ fn nowhere()\n-a\n+b")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "hunk 1 (@@ fn nowhere()): the anchor line 'fn nowhere()' was not found"
        );
    }

    #[test]
    fn an_anchored_pure_addition_goes_right_after_its_anchor() {
        let out = apply_hunks("def f():\n    pass\n", &hunks("@@ def f():\n+    # hi"));
        assert_eq!(out.unwrap(), "def f():\n    # hi\n    pass\n");
    }

    #[test]
    fn lone_carriage_return_endings_are_lines_and_are_kept() {
        let out = apply_hunks("a\rb\rc\r", &hunks(" a\n-b\n+B\n+B2")).unwrap();
        assert_eq!(out, "a\rB\rB2\rc\r");
        // One line of a Unix file ending in a lone \r keeps it.
        let out = apply_hunks("x\ny\rz\n", &hunks("-x\n+X")).unwrap();
        assert_eq!(out, "X\ny\rz\n");
    }

    #[test]
    fn an_addition_after_a_last_line_without_newline_keeps_it_without() {
        let out = apply_hunks("a", &hunks("+b")).unwrap();
        assert_eq!(out, "a\nb");
    }

    #[test]
    fn an_empty_file_gets_lines_and_a_final_newline() {
        let out = apply_hunks("", &hunks("+one")).unwrap();
        assert_eq!(out, "one\n");
    }
}
