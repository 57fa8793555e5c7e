//! File tools: `read_file`, `write_file`, `edit_file`.

use super::change;
use super::{
    Reach, Reports, ToolContext, ToolEffect, ToolError, ToolFacts, ToolHandler, ToolKind, args,
};
use crate::context::ClipHint;
use crate::model::ToolSpec;
use crate::protocol::ApprovalAction;
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use similar::TextDiff;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// How much of a file's start is checked for NUL bytes to call it binary (what git does).
const BINARY_SNIFF: usize = 8 * 1024;

pub(super) fn not_found(rel: &str) -> ToolError {
    ToolError::NotFound(format!(
        "file not found: '{rel}' (paths are relative to the workspace root; use list_files to see what exists)"
    ))
}

/// A file's text for a prompt (a worker's starting context), with the same confinement,
/// size cap and binary check as `read_file`.
pub async fn read_for_prompt(ctx: &ToolContext, path: &str) -> Result<String, ToolError> {
    ReadFile.call(ctx, json!({ "path": path })).await
}

pub(super) fn count_lines(text: &str) -> usize {
    let newlines = text.bytes().filter(|&b| b == b'\n').count();
    newlines + usize::from(!text.is_empty() && !text.ends_with('\n'))
}

pub(super) fn plural(n: usize, one: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {one}s")
    }
}

/// Unified diff for the approval prompt; a new file is diffed against `/dev/null`.
pub(crate) fn unified_diff(rel: &str, old: Option<&str>, new: &str) -> String {
    let old_name = if old.is_some() {
        format!("a/{rel}")
    } else {
        "/dev/null".to_string()
    };
    diff_between(&old_name, &format!("b/{rel}"), old.unwrap_or(""), new)
}

/// Unified diff of two texts under the names given (`a/x`, `b/y`, `/dev/null`).
pub(crate) fn diff_between(old_name: &str, new_name: &str, old: &str, new: &str) -> String {
    TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(old_name, new_name)
        .to_string()
}

// ---------------------------------------------------------------------------------------
// read_file

pub struct ReadFile;

#[derive(Deserialize)]
struct ReadArgs {
    path: String,
    start_line: Option<u64>,
    end_line: Option<u64>,
}

fn read_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "start_line": {"type": "integer", "minimum": 1},
            "end_line": {"type": "integer", "minimum": 1}
        },
        "required": ["path"]
    })
}

#[async_trait]
impl ToolHandler for ReadFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read_file".to_string(),
            description: "Read a text file: its exact text (no line numbers), ready to copy \
                into edit_file's old_text. For part of a large file give start_line and \
                end_line (1-based, inclusive)."
                .to_string(),
            parameters: read_schema(),
            freeform: None,
        }
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::ReadOnly
    }

    /// A cut output says which line of the file to read on from.
    fn facts(&self, args: &Value) -> ToolFacts {
        ToolFacts::new(ToolKind::Read, Reach::Reads).clip(ClipHint::ReadFile {
            path: args["path"].as_str().unwrap_or("").to_string(),
            first_line: args["start_line"].as_u64().unwrap_or(1).max(1),
        })
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<String, ToolError> {
        let args: ReadArgs = args::parse(&read_schema(), args)?;
        if let (Some(s), Some(e)) = (args.start_line, args.end_line)
            && e < s
        {
            return Err(ToolError::InvalidArguments(format!(
                "end_line ({e}) is before start_line ({s})"
            )));
        }
        let path = ctx.workspace.resolve(&args.path)?;
        let rel = ctx.workspace.relative(&path);
        let cap = ctx.settings.read_max_bytes.max(1);
        let ranged = args.start_line.is_some() || args.end_line.is_some();
        let start = args.start_line.unwrap_or(1);
        let end = args.end_line.unwrap_or(u64::MAX);
        if let Some(text) = super::editor::text(ctx, &path).await {
            return match read_lines(text.as_bytes(), start, end, cap) {
                Ok(out) => format_read(&rel, out, start, ranged, cap),
                Err(ReadFail::Dir) => Err(ToolError::is_dir(&rel)),
                Err(ReadFail::Binary) => Err(ToolError::not_text(&rel)),
                Err(ReadFail::Io(e)) => Err(ToolError::io("read", &rel, e)),
            };
        }
        // The check and the read in one trip to the blocking pool: each trip is two
        // thread hand-offs, more than the read of a small file.
        let out = tokio::task::spawn_blocking(move || {
            match std::fs::metadata(&path) {
                Ok(meta) if meta.is_dir() => return Err(ReadFail::Dir),
                Ok(_) => {}
                Err(e) => return Err(ReadFail::Io(e)),
            }
            read_range(&path, start, end, cap)
        })
        .await
        .map_err(|e| ToolError::Failed(format!("read task failed: {e}")))?;
        let out = match out {
            Ok(out) => out,
            Err(ReadFail::Dir) => return Err(ToolError::is_dir(&rel)),
            Err(ReadFail::Binary) => return Err(ToolError::not_text(&rel)),
            Err(ReadFail::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(not_found(&rel));
            }
            Err(ReadFail::Io(e)) => return Err(ToolError::io("read", &rel, e)),
        };
        format_read(&rel, out, start, ranged, cap)
    }
}

#[derive(Debug)]
enum ReadFail {
    /// The path is a directory.
    Dir,
    Binary,
    Io(std::io::Error),
}

/// What `read_range` collected: the text and where it stopped.
#[derive(Debug)]
struct ReadOut {
    text: String,
    /// Last line included in full (0 if none).
    last_shown: u64,
    /// Lines in the whole file.
    total: u64,
    /// First line left out because of the cap, if any.
    cut_at: Option<u64>,
    /// That line was itself longer than the cap, and its start is in `text`.
    cut_inside_line: bool,
}

/// Streams the file line by line, so a range near the end of a large file does not need
/// the whole file in memory; keeps counting after the cap to report the total.
fn read_range(path: &Path, start: u64, end: u64, cap: usize) -> Result<ReadOut, ReadFail> {
    let file = std::fs::File::open(path).map_err(ReadFail::Io)?;
    read_lines(file, start, end, cap)
}

/// `read_range` of any reader (a file, or the editor's text of it).
fn read_lines(
    source: impl std::io::Read,
    start: u64,
    end: u64,
    cap: usize,
) -> Result<ReadOut, ReadFail> {
    let mut reader = BufReader::with_capacity(BINARY_SNIFF, source);
    if reader.fill_buf().map_err(ReadFail::Io)?.contains(&0) {
        return Err(ReadFail::Binary);
    }
    let mut out = ReadOut {
        text: String::new(),
        last_shown: 0,
        total: 0,
        cut_at: None,
        cut_inside_line: false,
    };
    let mut buf = Vec::new();
    loop {
        if out.cut_at.is_some() || out.total >= end {
            // Past what is shown: only count the remaining lines.
            let mut chunk = [0u8; 64 * 1024];
            let mut last = b'\n';
            let mut any = false;
            loop {
                let n = reader.read(&mut chunk).map_err(ReadFail::Io)?;
                if n == 0 {
                    break;
                }
                any = true;
                out.total += chunk[..n].iter().filter(|&&b| b == b'\n').count() as u64;
                last = chunk[n - 1];
            }
            if any && last != b'\n' {
                out.total += 1;
            }
            break;
        }
        buf.clear();
        if reader.read_until(b'\n', &mut buf).map_err(ReadFail::Io)? == 0 {
            break;
        }
        out.total += 1;
        if out.total < start {
            continue;
        }
        let line = std::str::from_utf8(&buf).map_err(|_| ReadFail::Binary)?;
        if line.contains('\0') {
            return Err(ReadFail::Binary);
        }
        if out.text.len() + line.len() > cap {
            out.cut_at = Some(out.total);
            if out.text.is_empty() {
                let mut cut = cap.min(line.len());
                while !line.is_char_boundary(cut) {
                    cut -= 1;
                }
                out.text.push_str(&line[..cut]);
                out.cut_inside_line = true;
            }
            continue;
        }
        out.text.push_str(line);
        out.last_shown = out.total;
    }
    Ok(out)
}

fn format_read(
    rel: &str,
    out: ReadOut,
    start: u64,
    ranged: bool,
    cap: usize,
) -> Result<String, ToolError> {
    if out.total == 0 {
        return Ok(format!("[{rel} is empty]"));
    }
    if start > out.total {
        return Err(ToolError::Failed(format!(
            "start_line {start} is past the end of '{rel}', which has {}",
            plural(out.total as usize, "line")
        )));
    }
    let mut text = out.text;
    let note = match out.cut_at {
        Some(line) if out.cut_inside_line => format!(
            "[cut: line {line} alone is longer than the read limit ({cap} bytes); only its start \
             is shown. Use search_files or run_command to look at parts of it]"
        ),
        Some(line) => format!(
            "[cut at the read limit ({cap} bytes): showed lines {start}-{} of {}. Read the rest \
             with start_line={line}]",
            out.last_shown, out.total
        ),
        None if ranged => format!("[lines {start}-{} of {}]", out.last_shown, out.total),
        None => return Ok(text),
    };
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&note);
    Ok(text)
}

// ---------------------------------------------------------------------------------------
// write_file

pub struct WriteFile;

#[derive(Deserialize)]
struct WriteArgs {
    path: String,
    content: String,
}

fn write_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "content": {"type": "string"}
        },
        "required": ["path", "content"]
    })
}

#[async_trait]
impl ToolHandler for WriteFile {
    /// `apply_patch` adds, replaces and edits files too: a worker under a persona that has
    /// it instead of this tool (a Codex model's) still gets this one.
    fn same_as(&self) -> &'static [&'static str] {
        &["apply_patch"]
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "write_file".to_string(),
            description: "Create a file or replace all of its content (parent directories are \
                created). To change part of an existing file, use edit_file."
                .to_string(),
            parameters: write_schema(),
            freeform: None,
        }
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::Mutating
    }

    /// The change the user asked for, which the answer reports.
    fn facts(&self, _args: &Value) -> ToolFacts {
        ToolFacts::new(ToolKind::Edit, Reach::ChangesFiles).reports(Reports::Change)
    }

    fn writes_only(&self, args: &Value) -> Option<Vec<String>> {
        Some(vec![args["path"].as_str()?.to_string()])
    }

    async fn describe(
        &self,
        ctx: &ToolContext,
        args: &Value,
    ) -> Result<Option<ApprovalAction>, ToolError> {
        let args: WriteArgs = args::parse(&write_schema(), args.clone())?;
        let target = change::open(ctx, &args.path).await?;
        let diff = unified_diff(&target.rel, target.shown().as_deref(), &args.content);
        Ok(Some(ApprovalAction::FileChange {
            path: target.rel,
            diff,
        }))
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<String, ToolError> {
        let args: WriteArgs = args::parse(&write_schema(), args)?;
        let target = change::open(ctx, &args.path).await?;
        let rel = &target.rel;
        // Said plainly, so a model that writes the same thing again learns it changed nothing.
        if target.before.as_deref() == Some(args.content.as_bytes()) {
            return Ok(format!(
                "'{rel}' already has exactly this content: nothing was written"
            ));
        }
        change::store(ctx, &target, Some(args.content.as_bytes()), None).await?;
        let size = format!(
            "{}, {}",
            plural(count_lines(&args.content), "line"),
            plural(args.content.len(), "byte")
        );
        Ok(match target.before {
            None => format!("created '{rel}' ({size})"),
            Some(_) => format!("overwrote '{rel}' ({size})"),
        })
    }
}
