//! A request that names a file to make gets it made, or a reason. A 1.5B architect asked
//! to "write a short design note to design.md … then hand off" wrote the note as its
//! answer, and the turn ended with no file and no handoff. When the persona's turn ends
//! with an answer while a file the user's message asked for (a path after a verb such as
//! "write" or "create", absent when the message came) is still absent, and none of its
//! workers is still at work, it is told which: make them, hand them on, or answer again.
//! Twice at most per message; the second time plainly (the same model answered the first
//! reminder with "I will create the design.md and greet.py files." and stopped).
//!
//! A model that cannot put a file into a tool call's JSON often writes it the way Aider's
//! "whole" edit format has weak models write files: the path on a line of its own, then
//! the whole content in a fenced block (the same 1.5B architect's reply to the first
//! reminder held `### design.md` and `### greet.py`, each above its full text). A persona
//! that may `write_file`, answering with no tool call, has such a block turned into a
//! `write_file` call of its own answer, for a file the user's message asked for and that
//! is still absent: never any other path, so code shown in an answer stays an answer. The
//! call then runs like any other (approval, isolation, checks). The reminder does not
//! offer the form: told of it, the same model answered "[squad] I will create the
//! `design.md` and `greet.py` files." and nothing more.

use super::{AfterTurn, Layer, Scope, ToolDone, ToolUse};
use crate::model::ChatResponse;
use crate::protocol::{EventKind, ToolCall, TurnEnd};
use async_trait::async_trait;
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Mutex;

/// Reminders per user message.
const MAX_NUDGES: u32 = 2;

/// Words that ask for something to be made.
const MAKING: &[&str] = &[
    "write", "create", "add", "make", "generate", "save", "put", "produce", "draft",
];

/// Extensions of the files a request names (a word like "Qwen2.5" or "e.g." is no file).
const EXTENSIONS: &[&str] = &[
    "md",
    "txt",
    "rst",
    "adoc",
    "py",
    "rs",
    "js",
    "mjs",
    "cjs",
    "ts",
    "tsx",
    "jsx",
    "json",
    "toml",
    "yaml",
    "yml",
    "go",
    "java",
    "kt",
    "c",
    "h",
    "cpp",
    "hpp",
    "cc",
    "cs",
    "rb",
    "php",
    "sh",
    "bash",
    "html",
    "css",
    "scss",
    "env",
    "ini",
    "cfg",
    "conf",
    "sql",
    "xml",
    "csv",
    "swift",
    "lua",
    "ex",
    "exs",
    "zig",
    "dart",
    "scala",
    "vue",
    "svelte",
    "proto",
    "graphql",
    "tf",
    "lock",
    "gradle",
    "mk",
    "r",
    "pl",
    "ipynb",
    "dockerfile",
];

#[derive(Default)]
struct Request {
    /// Named by the user's message and absent when it came.
    wanted: Vec<String>,
    /// Files the persona's tools changed since the message (by path as given).
    changed: BTreeSet<String>,
    nudges: u32,
    /// What the last reminder named.
    last: Vec<String>,
    /// The user was told the files were not made.
    reported: bool,
}

#[derive(Default)]
pub struct NamedFilesLayer {
    request: Mutex<Request>,
}

impl NamedFilesLayer {
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, Request> {
        self.request
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[async_trait]
impl Layer for NamedFilesLayer {
    async fn before_task(&self, cx: &Scope<'_>, text: &mut String) {
        if cx.is_worker() {
            return;
        }
        let wanted = asked_for(text)
            .into_iter()
            .filter(|p| !cx.root().join(p).exists())
            .collect();
        *self.state() = Request {
            wanted,
            ..Request::default()
        };
    }

    fn shape_answer(&self, cx: &Scope<'_>, answer: &mut ChatResponse) {
        if cx.is_worker() || !answer.tool_calls.is_empty() {
            return;
        }
        let missing: Vec<String> = self
            .state()
            .wanted
            .iter()
            .filter(|p| !cx.root().join(p).exists())
            .cloned()
            .collect();
        if missing.is_empty() {
            return;
        }
        let may_write = cx
            .team
            .tools(cx.agent)
            .is_some_and(|tools| tools.iter().any(|t| t == "write_file"));
        if !may_write {
            return;
        }
        let mut seen = BTreeSet::new();
        for (path, content) in whole_file_blocks(&answer.text) {
            if missing.contains(&path) && seen.insert(path.clone()) {
                answer.tool_calls.push(ToolCall {
                    id: format!("squad_{}", uuid::Uuid::new_v4().simple()),
                    name: "write_file".to_string(),
                    arguments: serde_json::json!({"path": path, "content": content}).to_string(),
                });
            }
        }
    }

    async fn after_tool(&self, cx: &Scope<'_>, tool: &ToolUse<'_>, done: &ToolDone<'_>) {
        if cx.is_worker() || !tool.changes_files() || done.is_error {
            return;
        }
        if let Some(path) = tool.args.get("path").and_then(|p| p.as_str()) {
            self.state().changed.insert(path.to_string());
        }
    }

    async fn turn_end(&self, cx: &Scope<'_>, end: TurnEnd, _final_text: &str) -> AfterTurn {
        if cx.is_worker() || end != TurnEnd::Completed {
            return AfterTurn::Rest;
        }
        let mut state = self.state();
        if state.wanted.is_empty() || state.reported {
            return AfterTurn::Rest;
        }
        // Workers still at work may yet make them.
        let team = cx.team;
        if !team
            .children(cx.agent)
            .into_iter()
            .all(|c| team.is_settled(c))
        {
            return AfterTurn::Rest;
        }
        let missing: Vec<String> = state
            .wanted
            .iter()
            .filter(|p| !cx.root().join(p).exists() && !made_elsewhere(p, &state.changed))
            .cloned()
            .collect();
        if missing.is_empty() {
            return AfterTurn::Rest;
        }
        // Reminded twice, still not made: the answer stands, and the user reads why the
        // request is not done (a run that ended well with no file made looked finished).
        if state.nudges >= MAX_NUDGES {
            state.reported = true;
            let (names, was) = match missing.as_slice() {
                [one] => (one.clone(), "it was"),
                many => (many.join(", "), "they were"),
            };
            cx.team.emit(
                cx.agent,
                EventKind::Error {
                    message: format!(
                        "the request asked for {names}; after two reminders {was} still not \
                         written, so the request is not done"
                    ),
                },
            );
            return AfterTurn::Rest;
        }
        // The same files again: the reply was words ("I will create design.md"), not
        // the files; the second reminder says so.
        let again = missing == state.last;
        state.nudges += 1;
        state.last = missing.clone();
        AfterTurn::Continue(if again {
            still_missing(&missing)
        } else {
            reminder(&missing)
        })
    }
}

/// The persona wrote it under another directory (`docs/design.md` for `design.md`).
fn made_elsewhere(wanted: &str, changed: &BTreeSet<String>) -> bool {
    !wanted.contains('/')
        && changed
            .iter()
            .any(|c| Path::new(c).file_name().is_some_and(|n| n == wanted))
}

fn reminder(missing: &[String]) -> String {
    let names = missing.join(", ");
    let (it, does) = if missing.len() == 1 {
        ("it", "does")
    } else {
        ("them", "do")
    };
    format!(
        "[squad] Your turn ended, but {names} named in the request {does} not exist yet. If \
         the request asks you to make {it}, do it now with your tools (write_file for a file \
         you write; an answer in text writes no file), or hand {it} to whom the request \
         names. If not, give your answer again."
    )
}

fn still_missing(missing: &[String]) -> String {
    let names = missing.join(", ");
    let does = if missing.len() == 1 { "does" } else { "do" };
    format!(
        "[squad] Still nothing written: {names} {does} not exist. Saying you will is not \
         doing it: call write_file now with path \"{}\" and its content, or hand the work on \
         with handoff_to. If you will not, tell the user why.",
        missing[0]
    )
}

/// The files an answer writes out whole: a fenced block whose nearest non-empty line above
/// names a path (`### design.md`, `design.md:`, `**File: design.md**`), with its content.
/// Fences nest the way models write them: a fence with an info string inside a block opens
/// an inner one (a design note's python example), a bare fence closes the innermost. A
/// block still open at the end (an answer cut off) writes nothing.
fn whole_file_blocks(text: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if !lines[i].trim_start().starts_with("```") {
            i += 1;
            continue;
        }
        let label = lines[..i]
            .iter()
            .rev()
            .map(|l| l.trim())
            .find(|l| !l.is_empty())
            .and_then(label_path);
        let mut depth = 1;
        let mut end = None;
        for (j, line) in lines.iter().enumerate().skip(i + 1) {
            let t = line.trim();
            if let Some(info) = t.strip_prefix("```") {
                if info.trim_start_matches('`').trim().is_empty() {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(j);
                        break;
                    }
                } else {
                    depth += 1;
                }
            }
        }
        let Some(end) = end else {
            break;
        };
        if let Some(path) = label {
            let mut content = lines[i + 1..end].join("\n");
            content.push('\n');
            out.push((path, content));
        }
        i = end + 1;
    }
    out
}

/// The path a label line names, if it is one: heading marks, emphasis, quotes and a
/// `File:` prefix taken off, the one path among its words ("I will create the
/// `design.md` file with the following content:", the 1.5B architect's label).
fn label_path(line: &str) -> Option<String> {
    let strip = |s: &str| {
        s.trim()
            .trim_start_matches(['#', '*', '-', '>', ' '])
            .trim_matches(['*', '`', '"', '\'', ' '])
            .trim_end_matches([':', '.', ','])
            .trim_matches(['*', '`', '"', '\''])
            .to_string()
    };
    let mut paths: Vec<String> = strip(line)
        .split_whitespace()
        .map(strip)
        .filter(|w| is_path(w))
        .collect();
    paths.dedup();
    match paths.as_slice() {
        [one] => Some(one.clone()),
        _ => None,
    }
}

/// The workspace-relative paths a message asks to be made: the file names after the
/// first word that asks for something to be made.
fn asked_for(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    if !words.iter().any(|w| MAKING.contains(w)) {
        return Vec::new();
    }
    let mut out: Vec<String> = Vec::new();
    for raw in text.split(|c: char| c.is_whitespace() || "`'\"(),;<>[]{}".contains(c)) {
        let word = raw.trim_end_matches(['.', ':', '!', '?']);
        if is_path(word) && !out.iter().any(|w| w == word) {
            out.push(word.to_string());
        }
    }
    out
}

fn is_path(word: &str) -> bool {
    if word.contains("://") || word.starts_with('/') || word.split('/').any(|p| p == "..") {
        return false;
    }
    let Some((stem, ext)) = word.rsplit_once('.') else {
        return false;
    };
    let name = stem.rsplit('/').next().unwrap_or(stem);
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || "_-.".contains(c))
        && EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_labelled_fenced_block_is_a_whole_file_and_inner_fences_nest() {
        let text = "I will create the files.\n\n### design.md\n```markdown\n# Design\n\n\
                    ## Signature\n```python\ndef greet(name): ...\n```\n\nDone.\n```\n\n\
                    ### greet.py\n```python\ndef greet(name):\n    return 'Hello, ' + name + '!'\n```\n\n\
                    ## Example\n```python\ngreet('Ann')\n```\n";
        let blocks = whole_file_blocks(text);
        assert_eq!(
            blocks,
            [
                (
                    "design.md".to_string(),
                    "# Design\n\n## Signature\n```python\ndef greet(name): ...\n```\n\nDone.\n"
                        .to_string()
                ),
                (
                    "greet.py".to_string(),
                    "def greet(name):\n    return 'Hello, ' + name + '!'\n".to_string()
                ),
            ]
        );
        for label in [
            "**File: notes.md**",
            "`notes.md`:",
            "notes.md",
            "Here is notes.md:",
        ] {
            assert_eq!(label_path(label).as_deref(), Some("notes.md"), "{label}");
        }
        assert_eq!(label_path("## Function Signature"), None);
        assert_eq!(label_path("I will write a.md and b.md:"), None);
        // Cut off inside a block: nothing.
        assert!(whole_file_blocks("notes.md\n```\nhalf").is_empty());
    }

    #[test]
    fn the_files_a_request_asks_for_are_its_paths_after_a_making_word() {
        assert_eq!(
            asked_for(
                "Write a short design note to design.md for a Python function greet(name) \
                 in greet.py that returns 'Hello, ' + name + '!'. Then hand off."
            ),
            ["design.md", "greet.py"]
        );
        assert_eq!(
            asked_for("create the file `src/notes.md`, e.g. with Qwen2.5 notes."),
            ["src/notes.md"]
        );
        assert!(asked_for("What does design.md say?").is_empty());
        assert!(asked_for("write to /etc/passwd and ../x.md and http://a.io/b.md").is_empty());
    }

    #[test]
    fn a_file_made_in_another_directory_counts() {
        let changed: BTreeSet<String> = ["docs/design.md".to_string()].into();
        assert!(made_elsewhere("design.md", &changed));
        assert!(!made_elsewhere("src/design.md", &changed));
        assert!(!made_elsewhere("greet.py", &changed));
    }

    #[test]
    fn the_reminder_names_the_files() {
        let one = reminder(&["design.md".into()]);
        assert!(one.contains("design.md named in the request does not exist yet"));
        assert!(reminder(&["a.md".into(), "b.py".into()]).contains("a.md, b.py"));
    }
}
