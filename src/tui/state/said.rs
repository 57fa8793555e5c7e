//! A message the user sent, as the screen shows it: the words typed, a `!command`'s
//! output (shown verbatim), and the files `@path` attached (`<file path=…>` blocks the
//! core appended, `workspace::attach_mentions`), each one line until expanded.

/// One user message, split for drawing.
#[derive(Clone, Debug, PartialEq)]
pub struct UserEntry {
    /// What the user typed; for `!command`, the command line with its `!`.
    pub text: String,
    /// A `!command`'s output, shown as it is.
    pub output: Option<String>,
    pub attachments: Vec<Attachment>,
    /// Attachments shown in full (Enter on the selected message).
    pub expanded: bool,
}

/// A file attached with `@path`.
#[derive(Clone, Debug, PartialEq)]
pub struct Attachment {
    pub path: String,
    pub body: String,
}

impl Attachment {
    pub fn lines(&self) -> usize {
        self.body.lines().count()
    }
}

const OPEN: &str = "\n\n<file path=\"";
const CLOSE: &str = "\n</file>";

impl UserEntry {
    /// Splits a user message as the core recorded it.
    pub fn parse(message: &str) -> Self {
        let mut rest = message;
        let mut attachments = Vec::new();
        // The core appends the blocks at the end, one after the other: read them back
        // from the end.
        while let Some(body_end) = rest.strip_suffix(CLOSE) {
            let Some(at) = body_end.rfind(OPEN) else {
                break;
            };
            let block = &body_end[at + OPEN.len()..];
            let Some((path, body)) = block.split_once("\">\n") else {
                break;
            };
            attachments.push(Attachment {
                path: path.to_string(),
                body: body.to_string(),
            });
            rest = &body_end[..at];
        }
        attachments.reverse();
        let (text, output) = match rest.split_once('\n') {
            Some((command, output)) if command.starts_with('!') && attachments.is_empty() => {
                (command.to_string(), Some(output.to_string()))
            }
            _ => (rest.to_string(), None),
        };
        Self {
            text,
            output,
            attachments,
            expanded: false,
        }
    }

    /// Whether Enter has anything to show or hide.
    pub fn expandable(&self) -> bool {
        !self.attachments.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attachments_and_command_output_are_told_apart_from_the_words() {
        let m = UserEntry::parse(
            "fix @calc.py and @t.py\n\n<file path=\"calc.py\">\ndef add(a, b):\n    return a+b\n</file>\
             \n\n<file path=\"t.py\">\nx = 1\n</file>",
        );
        assert_eq!(m.text, "fix @calc.py and @t.py");
        assert_eq!(m.output, None);
        let paths: Vec<&str> = m.attachments.iter().map(|a| a.path.as_str()).collect();
        assert_eq!(paths, ["calc.py", "t.py"]);
        assert_eq!(m.attachments[0].body, "def add(a, b):\n    return a+b");
        assert_eq!(m.attachments[0].lines(), 2);

        let c = UserEntry::parse("!ls -l\ntotal 0\n  a   b");
        assert_eq!(c.text, "!ls -l");
        assert_eq!(c.output.as_deref(), Some("total 0\n  a   b"));
        let plain = UserEntry::parse("just words\nand more </file>");
        assert_eq!(plain.text, "just words\nand more </file>");
        assert!(plain.attachments.is_empty() && plain.output.is_none());
    }
}
