//! A request that names a file to make gets it made, or a reason. A 1.5B architect asked
//! to "write a short design note to design.md … then hand off" wrote the note as its
//! answer, and the turn ended with no file and no handoff. When the persona's turn ends
//! with an answer while a file the user's message asked for (a path after a verb such as
//! "write" or "create", absent when the message came) is still absent, and none of its
//! workers is still at work, it is told which: make them, hand them on, or answer again.
//! Twice at most per message; the second time plainly (the same model answered the first
//! reminder with "I will create the design.md and greet.py files." and stopped).

use super::{AfterTurn, Layer, Scope, ToolDone, ToolUse};
use crate::protocol::TurnEnd;
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
        if state.wanted.is_empty() || state.nudges >= MAX_NUDGES {
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
