//! Parsing OpenAI's V4A patch format (`*** Begin Patch` … `*** End Patch`) into file
//! operations. Only the text is read here; nothing touches the disk.
//!
//! Lenient where models are sloppy and nothing can go wrong: markers may be padded with
//! whitespace, blank lines between operations are skipped, a blank line inside a hunk is an
//! empty context line, a unified-diff range (`@@ -3,7 +3,8 @@`) is accepted as a bare `@@`,
//! and a `<<'EOF'` … `EOF` wrapper (a shell heredoc copied along) is dropped. Strict where a
//! guess could change the wrong lines: every other line is an error naming its line number.

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File:";
const DELETE: &str = "*** Delete File:";
const UPDATE: &str = "*** Update File:";
const MOVE: &str = "*** Move to:";
const END_OF_FILE: &str = "*** End of File";

/// A parsed patch: its file operations in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    pub ops: Vec<FileOp>,
}

/// One file operation. `line` is where it starts in the patch, for error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileOp {
    Add {
        path: String,
        contents: String,
        line: usize,
    },
    Delete {
        path: String,
        line: usize,
    },
    Update {
        path: String,
        move_to: Option<String>,
        hunks: Vec<Hunk>,
        line: usize,
    },
}

/// One `@@` hunk of an update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// The `@@ …` anchor lines, outermost first: each is looked for after the one before,
    /// and the hunk's lines after the last (for code repeated in several functions).
    pub anchors: Vec<String>,
    /// The lines the file has now: context and removed lines, in order.
    pub old: Vec<String>,
    /// The lines it gets instead: context and added lines, in order.
    pub new: Vec<String>,
    /// For each of `new`, the index in `old` of the context line it repeats (`None`: an
    /// added line), so a context line matched loosely keeps the file's own whitespace.
    pub context: Vec<Option<usize>>,
    /// `*** End of File`: the old lines end the file.
    pub end_of_file: bool,
    /// Where the hunk starts in the patch.
    pub line: usize,
}

impl Hunk {
    /// How the hunk is named in errors: `@@ def foo():`, or `@@` without an anchor.
    pub fn label(&self) -> String {
        if self.anchors.is_empty() {
            "@@".to_string()
        } else {
            let joined: Vec<String> = self.anchors.iter().map(|a| format!("@@ {a}")).collect();
            joined.join(" / ")
        }
    }
}

/// Why a patch's text was refused. Each names what to send instead.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ParseError {
    #[error(
        "the patch is empty: between '{BEGIN}' and '{END}' give at least one '{ADD} PATH', \
         '{DELETE} PATH' or '{UPDATE} PATH'"
    )]
    Empty,
    #[error("line {line}: the patch must start with '{BEGIN}', found '{found}'")]
    NoBegin { line: usize, found: String },
    #[error(
        "the patch must end with a line '{END}' (the last line is '{found}'; was the patch cut off?)"
    )]
    NoEnd { found: String },
    #[error(
        "line {line}: '{found}' is not a valid header; expected '{ADD} PATH', '{DELETE} PATH', \
         '{UPDATE} PATH' or '{END}'{hint}"
    )]
    BadHeader {
        line: usize,
        found: String,
        hint: &'static str,
    },
    #[error("line {line}: '{marker}' needs a path after it")]
    NoPath { line: usize, marker: &'static str },
    #[error(
        "line {line}: '{found}' is not a valid hunk header; a hunk starts with '@@' alone or \
         '@@ ' and a line of the file to find it by (e.g. '@@ def main():')"
    )]
    BadHunkHeader { line: usize, found: String },
    #[error(
        "line {line}: in the update of '{path}', '{found}' must start with ' ' (a context \
         line), '-' (a removed line) or '+' (an added line)"
    )]
    BadHunkLine {
        line: usize,
        path: String,
        found: String,
    },
    #[error(
        "line {line}: the hunk of '{path}' starting here has no lines; give context, '-' and \
         '+' lines after its '@@'"
    )]
    EmptyHunk { line: usize, path: String },
    #[error(
        "line {line}: '{UPDATE} {path}' has no hunks; give '@@' hunks, or '{MOVE} NEWPATH' to \
         rename it"
    )]
    EmptyUpdate { line: usize, path: String },
}

/// Parses a whole patch.
pub fn parse(text: &str) -> Result<Patch, ParseError> {
    let mut lines: Vec<(usize, &str)> = text.lines().enumerate().map(|(i, l)| (i + 1, l)).collect();
    while lines.last().is_some_and(|(_, l)| l.trim().is_empty()) {
        lines.pop();
    }
    let first_content = lines.iter().position(|(_, l)| !l.trim().is_empty());
    let Some(first_content) = first_content else {
        return Err(ParseError::Empty);
    };
    lines.drain(..first_content);
    strip_heredoc(&mut lines);
    let Some(&(line, first)) = lines.first() else {
        return Err(ParseError::Empty);
    };
    if first.trim() != BEGIN {
        return Err(ParseError::NoBegin {
            line,
            found: first.trim().to_string(),
        });
    }
    let last = lines.last().map(|(_, l)| l.trim()).unwrap_or_default();
    if lines.len() < 2 || last != END {
        return Err(ParseError::NoEnd {
            found: last.to_string(),
        });
    }
    let body = &lines[1..lines.len() - 1];
    let mut parser = Parser { body, at: 0 };
    let mut ops = Vec::new();
    while let Some((line, text)) = parser.peek() {
        let t = text.trim();
        if t.is_empty() {
            parser.at += 1;
            continue;
        }
        let hint = match ops.last() {
            Some(FileOp::Add { .. }) => " (every line of an added file starts with '+')",
            _ => "",
        };
        if let Some(rest) = t.strip_prefix(ADD) {
            parser.at += 1;
            let path = path_of(rest, line, ADD)?;
            ops.push(FileOp::Add {
                contents: parser.added_lines(),
                path,
                line,
            });
        } else if let Some(rest) = t.strip_prefix(DELETE) {
            parser.at += 1;
            ops.push(FileOp::Delete {
                path: path_of(rest, line, DELETE)?,
                line,
            });
        } else if let Some(rest) = t.strip_prefix(UPDATE) {
            parser.at += 1;
            let path = path_of(rest, line, UPDATE)?;
            ops.push(parser.update(path, line)?);
        } else {
            return Err(ParseError::BadHeader {
                line,
                found: t.to_string(),
                hint,
            });
        }
    }
    if ops.is_empty() {
        return Err(ParseError::Empty);
    }
    Ok(Patch { ops })
}

/// Drops a shell heredoc around the patch (`apply_patch <<'EOF'` … `EOF`), which models
/// trained on the shell form sometimes send along.
fn strip_heredoc(lines: &mut Vec<(usize, &str)>) {
    let opens = lines.first().is_some_and(|(_, l)| {
        let t = l.trim();
        ["<<EOF", "<<'EOF'", "<<\"EOF\""]
            .iter()
            .any(|h| t.ends_with(h))
    });
    let closes = lines.len() >= 2 && lines.last().is_some_and(|(_, l)| l.trim() == "EOF");
    if opens && closes {
        lines.pop();
        lines.remove(0);
    }
}

fn path_of(rest: &str, line: usize, marker: &'static str) -> Result<String, ParseError> {
    let path = rest.trim();
    if path.is_empty() {
        return Err(ParseError::NoPath { line, marker });
    }
    Ok(path.to_string())
}

/// Whether a trimmed line starts the next file operation.
fn is_file_header(t: &str) -> bool {
    t.starts_with(ADD) || t.starts_with(DELETE) || t.starts_with(UPDATE)
}

/// The anchor of a `@@` line (`None`: a bare `@@`), or `None` twice over: not a hunk header.
fn anchor_of(raw: &str) -> Option<Option<String>> {
    let t = raw.trim_end();
    if t == "@@" {
        return Some(None);
    }
    let rest = t.strip_prefix("@@ ")?.trim();
    // A unified-diff range (`-3,7 +3,8 @@ fn f()`): the text after it, if any, is the anchor.
    let rest = match unified_range_end(rest) {
        Some(after) => after.trim(),
        None => rest,
    };
    Some((!rest.is_empty() && rest != "@@").then(|| rest.to_string()))
}

/// After `-A[,B] +C[,D] @@`, the rest of the line; `None` if `s` does not start so.
fn unified_range_end(s: &str) -> Option<&str> {
    let range = |s: &str, sign: char| -> Option<()> {
        let digits = s.strip_prefix(sign)?;
        let ok = !digits.is_empty()
            && digits.split(',').count() <= 2
            && digits
                .split(',')
                .all(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()));
        ok.then_some(())
    };
    let mut parts = s.splitn(3, ' ');
    range(parts.next()?, '-')?;
    range(parts.next()?, '+')?;
    let rest = parts.next()?;
    rest.strip_prefix("@@")
}

struct Parser<'a> {
    body: &'a [(usize, &'a str)],
    at: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<(usize, &'a str)> {
        self.body.get(self.at).map(|&(n, l)| (n, l))
    }

    /// The `+` lines of an added file, as its contents. A blank line followed by more `+`
    /// lines counts as an empty line of the file (models drop the `+` of empty lines).
    fn added_lines(&mut self) -> String {
        let mut contents = String::new();
        while let Some((_, raw)) = self.peek() {
            if let Some(rest) = raw.strip_prefix('+') {
                contents.push_str(rest);
                contents.push('\n');
            } else if raw.trim().is_empty()
                && self
                    .body
                    .get(self.at + 1)
                    .is_some_and(|(_, next)| next.starts_with('+'))
            {
                contents.push('\n');
            } else {
                break;
            }
            self.at += 1;
        }
        contents
    }

    /// An update's optional `*** Move to:` and its hunks, up to the next file header.
    fn update(&mut self, path: String, line: usize) -> Result<FileOp, ParseError> {
        let mut move_to = None;
        if let Some((n, raw)) = self.peek()
            && let Some(rest) = raw.trim().strip_prefix(MOVE)
        {
            move_to = Some(path_of(rest, n, MOVE)?);
            self.at += 1;
        }
        let mut hunks: Vec<Hunk> = Vec::new();
        let mut open: Option<OpenHunk> = None;
        while let Some((n, raw)) = self.peek() {
            let t = raw.trim();
            if is_file_header(t) {
                break;
            }
            self.at += 1;
            if t == END_OF_FILE {
                let mut hunk = open.take().unwrap_or_else(|| OpenHunk::new(n, Vec::new()));
                hunk.end_of_file = true;
                hunks.push(hunk.finish(&path)?);
                continue;
            }
            // Only unpadded: a context line of a Markdown file may well be ` ***`.
            if raw.starts_with("***") {
                return Err(ParseError::BadHeader {
                    line: n,
                    found: t.to_string(),
                    hint: "",
                });
            }
            if raw.starts_with("@@") {
                let Some(anchor) = anchor_of(raw) else {
                    return Err(ParseError::BadHunkHeader {
                        line: n,
                        found: raw.to_string(),
                    });
                };
                match open.as_mut() {
                    // Consecutive `@@` lines narrow down one hunk.
                    Some(h) if h.old.is_empty() && h.new.is_empty() => h.anchors.extend(anchor),
                    _ => {
                        if let Some(h) = open.take() {
                            hunks.push(h.finish(&path)?);
                        }
                        open = Some(OpenHunk::new(n, anchor.into_iter().collect()));
                    }
                }
                continue;
            }
            let hunk = open.get_or_insert_with(|| OpenHunk::new(n, Vec::new()));
            hunk.push(n, raw, &path)?;
        }
        if let Some(h) = open.take() {
            hunks.push(h.finish(&path)?);
        }
        if hunks.is_empty() && move_to.is_none() {
            return Err(ParseError::EmptyUpdate { line, path });
        }
        Ok(FileOp::Update {
            path,
            move_to,
            hunks,
            line,
        })
    }
}

/// A hunk being read.
struct OpenHunk {
    anchors: Vec<String>,
    old: Vec<String>,
    new: Vec<String>,
    context: Vec<Option<usize>>,
    end_of_file: bool,
    line: usize,
    /// How many of the last lines were blank lines of the patch (not `' '` lines).
    trailing_blank: usize,
}

impl OpenHunk {
    fn new(line: usize, anchors: Vec<String>) -> Self {
        Self {
            anchors,
            old: Vec::new(),
            new: Vec::new(),
            context: Vec::new(),
            end_of_file: false,
            line,
            trailing_blank: 0,
        }
    }

    fn push(&mut self, n: usize, raw: &str, path: &str) -> Result<(), ParseError> {
        if raw.is_empty() {
            self.push_context(String::new());
            self.trailing_blank += 1;
            return Ok(());
        }
        self.trailing_blank = 0;
        let mut chars = raw.chars();
        let sign = chars.next();
        let rest = chars.as_str();
        match sign {
            Some(' ') => self.push_context(rest.to_string()),
            Some('-') => self.old.push(rest.to_string()),
            Some('+') => {
                self.new.push(rest.to_string());
                self.context.push(None);
            }
            _ => {
                return Err(ParseError::BadHunkLine {
                    line: n,
                    path: path.to_string(),
                    found: raw.to_string(),
                });
            }
        }
        Ok(())
    }

    fn push_context(&mut self, line: String) {
        self.context.push(Some(self.old.len()));
        self.old.push(line.clone());
        self.new.push(line);
    }

    /// Blank lines at a hunk's end are the patch's spacing, not the file's: dropping
    /// them only shortens the context.
    fn finish(mut self, path: &str) -> Result<Hunk, ParseError> {
        for _ in 0..self.trailing_blank {
            self.old.pop();
            self.new.pop();
            self.context.pop();
        }
        if self.old.is_empty() && self.new.is_empty() {
            return Err(ParseError::EmptyHunk {
                line: self.line,
                path: path.to_string(),
            });
        }
        Ok(Hunk {
            anchors: self.anchors,
            old: self.old,
            new: self.new,
            context: self.context,
            end_of_file: self.end_of_file,
            line: self.line,
        })
    }
}

#[cfg(test)]
mod tests;
