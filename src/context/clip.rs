//! Big tool output is kept small in the conversation from the start: it keeps its head and
//! tail, and a note in the middle says how much was cut and how to read it, so one large
//! file or log does not fill the window for the rest of the session.

/// What the note suggests for reading the cut part.
#[derive(Clone, Debug, PartialEq)]
pub enum ClipHint {
    /// `read_file` output whose first line is line `first_line` of `path`.
    ReadFile {
        path: String,
        first_line: u64,
    },
    /// Output of a shell command.
    Command,
    Other,
}

/// Share of the kept bytes given to the head; the rest goes to the tail.
const HEAD_SHARE: f64 = 0.6;

/// `None` when `output` fits in `cap` bytes; otherwise its head and tail (cut at line
/// ends where one is near) around a note.
pub fn clip_tool_output(output: &str, cap: usize, hint: &ClipHint) -> Option<String> {
    if output.len() <= cap {
        return None;
    }
    let head_budget = (cap as f64 * HEAD_SHARE) as usize;
    let tail_budget = cap.saturating_sub(head_budget);
    let head_end = line_end_before(output, head_budget);
    let tail_start = line_start_after(output, output.len() - tail_budget).max(head_end);
    let (head, cut, tail) = (
        &output[..head_end],
        &output[head_end..tail_start],
        &output[tail_start..],
    );
    let cut_lines = cut.matches('\n').count() + usize::from(!cut.ends_with('\n'));
    let what = format!(
        "[squad: {} bytes ({} lines) cut from the middle of this output to keep the conversation small",
        cut.len(),
        cut_lines
    );
    let how = match hint {
        ClipHint::ReadFile { path, first_line } => {
            let from = first_line + head.matches('\n').count() as u64;
            let to = from + cut_lines as u64 - 1;
            format!(
                "; they are lines {from}-{to}. Read them with read_file path=\"{path}\" \
                 start_line={from} end_line={to}, a part at a time]"
            )
        }
        ClipHint::Command => "; to see them, narrow the command (grep, head, tail, sed -n 'A,Bp') \
             or write its output to a file and read_file it a part at a time]"
            .to_string(),
        ClipHint::Other => "; ask for less at a time to see them]".to_string(),
    };
    let mut out = String::with_capacity(head.len() + tail.len() + what.len() + how.len() + 2);
    out.push_str(head);
    if !head.is_empty() && !head.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&what);
    out.push_str(&how);
    out.push('\n');
    out.push_str(tail);
    Some(out)
}

/// The end of the last whole line within `max` bytes, or a char boundary when the lines
/// are longer than half of it.
fn line_end_before(s: &str, max: usize) -> usize {
    let mut end = max.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    match s[..end].rfind('\n') {
        Some(i) if i + 1 >= end / 2 => i + 1,
        _ => end,
    }
}

/// The start of the first whole line at or after `min`, or a char boundary when that line
/// runs on for more than half of what is left.
fn line_start_after(s: &str, min: usize) -> usize {
    let mut start = min.min(s.len());
    while !s.is_char_boundary(start) {
        start += 1;
    }
    let left = s.len() - start;
    match s[start..].find('\n') {
        Some(i) if i < left / 2 => start + i + 1,
        _ => start,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_output_is_kept_whole() {
        assert_eq!(clip_tool_output("abc", 3, &ClipHint::Other), None);
    }

    #[test]
    fn long_output_keeps_head_and_tail_whole_lines_and_says_how_to_read_the_rest() {
        let text: String = (1..=1000).map(|i| format!("line {i}\n")).collect();
        let hint = ClipHint::ReadFile {
            path: "big.txt".into(),
            first_line: 1,
        };
        let out = clip_tool_output(&text, 1000, &hint).unwrap();
        assert!(out.len() < 1400, "{}", out.len());
        assert!(out.starts_with("line 1\n"));
        assert!(out.ends_with("line 1000\n"));
        let note = out.lines().find(|l| l.starts_with("[squad:")).unwrap();
        let first_cut = out.lines().take_while(|l| !l.starts_with("[squad")).count() + 1;
        let last_cut = 1000 - out.lines().skip_while(|l| !l.starts_with("[squad")).count() + 1;
        assert!(
            note.contains(&format!("start_line={first_cut} end_line={last_cut}")),
            "{note}"
        );
        // One line far longer than the cap is cut inside, on char boundaries.
        let wide = "é".repeat(5000);
        let out = clip_tool_output(&wide, 100, &ClipHint::Command).unwrap();
        assert!(out.contains("narrow the command"));
        assert!(out.len() < 400);
    }
}
