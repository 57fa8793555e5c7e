//! `search_files`: regex search over the workspace with ripgrep's own crates.

use super::list::walk;
use super::{ToolContext, ToolEffect, ToolError, ToolHandler, args};
use crate::model::ToolSpec;
use async_trait::async_trait;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder};
use serde::Deserialize;
use serde_json::{Value, json};
use std::ops::ControlFlow;
use std::path::Path;
use tokio_util::sync::CancellationToken;

const MAX_MATCHES: usize = 200;
/// Long lines (minified code, data) are cut so one match cannot fill the output.
const MAX_LINE_CHARS: usize = 300;

pub struct SearchFiles;

#[derive(Deserialize)]
struct SearchArgs {
    pattern: String,
    path: Option<String>,
}

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "pattern": {
                "type": "string",
                "description": "Regex matched per line; (?i) for any case; escape ( [ . * to match them."
            },
            "path": {"type": "string"}
        },
        "required": ["pattern"]
    })
}

#[async_trait]
impl ToolHandler for SearchFiles {
    fn kind(&self) -> super::ToolKind {
        super::ToolKind::Search
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "search_files".to_string(),
            description: "Search file contents by regular expression, like ripgrep: \
                 'path:line: text' lines (line fits read_file's start_line); ignored and \
                 binary files skipped."
                .to_string(),
            parameters: schema(),
            freeform: None,
        }
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::ReadOnly
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<String, ToolError> {
        let args: SearchArgs = args::parse(&schema(), args)?;
        if args.pattern.is_empty() {
            return Err(ToolError::InvalidArguments(
                "pattern is empty; give a regular expression to search for".to_string(),
            ));
        }
        let matcher = RegexMatcherBuilder::new()
            .line_terminator(Some(b'\n'))
            .build(&args.pattern)
            .map_err(|e| {
                ToolError::InvalidArguments(format!("invalid regex {:?}: {e}", args.pattern))
            })?;
        let target = ctx.workspace.resolve(args.path.as_deref().unwrap_or("."))?;
        let rel = ctx.workspace.relative(&target);
        if let Err(e) = tokio::fs::metadata(&target).await {
            return Err(if e.kind() == std::io::ErrorKind::NotFound {
                ToolError::Failed(format!(
                    "not found: '{rel}' (paths are relative to the workspace root; use list_files to see what exists)"
                ))
            } else {
                ToolError::io("search", &rel, e)
            });
        }
        let root = ctx.workspace.root().to_path_buf();
        let cap = ctx.settings.max_output_bytes.max(1);
        let cancel = ctx.cancel.clone();
        let found =
            tokio::task::spawn_blocking(move || search(&root, &target, &matcher, cap, &cancel))
                .await
                .map_err(|e| ToolError::Failed(format!("search task failed: {e}")))?;
        if ctx.cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        Ok(found.render(&rel))
    }
}

struct Found {
    /// Byte cap on the match lines kept.
    cap: usize,
    lines: Vec<String>,
    bytes: usize,
    stopped: Option<Stop>,
    target_ignored: bool,
}

enum Stop {
    Matches,
    Bytes,
}

impl Found {
    /// Adds one match line; `false` once a cap is reached.
    fn push(&mut self, line: String) -> bool {
        if self.lines.len() >= MAX_MATCHES {
            self.stopped = Some(Stop::Matches);
            return false;
        }
        if self.bytes + line.len() + 1 > self.cap {
            self.stopped = Some(Stop::Bytes);
            return false;
        }
        self.bytes += line.len() + 1;
        self.lines.push(line);
        true
    }

    fn render(self, rel: &str) -> String {
        let mut out = String::new();
        if self.target_ignored {
            out.push_str(&format!(
                "[note: '{rel}' is ignored by .gitignore; searched it anyway]\n"
            ));
        }
        if self.lines.is_empty() {
            out.push_str("no matches");
            return out;
        }
        out.push_str(&self.lines.join("\n"));
        match self.stopped {
            Some(Stop::Matches) => out.push_str(&format!(
                "\n[stopped after {MAX_MATCHES} matches; use a more specific pattern or search a subdirectory]"
            )),
            Some(Stop::Bytes) => out.push_str(&format!(
                "\n[stopped at the output limit ({} bytes); use a more specific pattern or search a subdirectory]",
                self.cap
            )),
            None => {}
        }
        out
    }
}

fn search(
    root: &Path,
    target: &Path,
    matcher: &RegexMatcher,
    cap: usize,
    cancel: &CancellationToken,
) -> Found {
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(0))
        .build();
    let mut found = Found {
        cap,
        lines: Vec::new(),
        bytes: 0,
        stopped: None,
        target_ignored: false,
    };
    if target.is_file() {
        search_one(&mut searcher, matcher, root, target, &mut found);
        return found;
    }
    let info = walk(root, target, None, |entry| {
        if cancel.is_cancelled() || found.stopped.is_some() {
            return ControlFlow::Break(());
        }
        if entry.file_type().is_some_and(|t| t.is_file()) {
            search_one(&mut searcher, matcher, root, entry.path(), &mut found);
        }
        ControlFlow::Continue(())
    });
    found.target_ignored = info.target_ignored;
    found
}

fn search_one(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    root: &Path,
    path: &Path,
    found: &mut Found,
) {
    let shown = path
        .strip_prefix(root)
        .unwrap_or(path)
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/");
    // Unreadable files are skipped, as ripgrep does; the rest of the search is still useful.
    let _ = searcher.search_path(
        matcher,
        path,
        Lossy(|line_no, text| {
            let text = text.trim_end_matches(['\n', '\r']);
            let text = match text.char_indices().nth(MAX_LINE_CHARS) {
                Some((cut, _)) => format!("{}…", &text[..cut]),
                None => text.to_string(),
            };
            Ok(found.push(format!("{shown}:{line_no}: {text}")))
        }),
    );
}
