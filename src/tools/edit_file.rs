//! `edit_file`: one exact replacement in a file, refused unless the old text occurs once.

use super::change::{self, Target};
use super::files::{count_lines, not_found, plural, unified_diff};
use super::{
    Reach, Reports, ToolContext, ToolEffect, ToolError, ToolFacts, ToolHandler, ToolKind, args,
};
use crate::model::ToolSpec;
use crate::protocol::ApprovalAction;
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

pub struct EditFile;

#[derive(Deserialize)]
struct EditArgs {
    path: String,
    old_text: String,
    new_text: String,
}

fn edit_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "old_text": {"type": "string", "description": "Exact text to replace."},
            "new_text": {"type": "string", "description": "Replacement; may be empty."}
        },
        "required": ["path", "old_text", "new_text"]
    })
}

/// A checked edit, ready to write.
struct Edit {
    target: Target,
    rel: String,
    before: String,
    after: String,
    line: usize,
    old_lines: usize,
    new_lines: usize,
}

/// Start offsets of `needle` in `hay`, overlapping ones included (so "aa" in "aaa" is two:
/// replacing "once" must not depend on which one a left-to-right scan happens to pick).
fn occurrences(hay: &str, needle: &str) -> Vec<usize> {
    let mut found = Vec::new();
    let step = needle.chars().next().map_or(1, char::len_utf8);
    let mut from = 0;
    while let Some(i) = hay[from..].find(needle) {
        found.push(from + i);
        from += i + step;
    }
    found
}

async fn plan_edit(ctx: &ToolContext, args: EditArgs) -> Result<Edit, ToolError> {
    if args.old_text.is_empty() {
        return Err(ToolError::InvalidArguments(
            "old_text is empty; give the exact text to replace (to create or overwrite a whole file, use write_file)".to_string(),
        ));
    }
    if args.old_text == args.new_text {
        return Err(ToolError::InvalidArguments(
            "old_text and new_text are identical; nothing would change".to_string(),
        ));
    }
    let target = change::open(ctx, &args.path).await?;
    let before = match target.text() {
        Some(text) => text?.to_string(),
        None => {
            return Err(ToolError::NotFound(format!(
                "{}; to create a new file use write_file",
                not_found(&target.rel)
            )));
        }
    };
    let rel = target.rel.clone();

    let (mut old_text, mut new_text) = (args.old_text, args.new_text);
    let mut found = occurrences(&before, &old_text);
    // Files with CRLF line ends: the model almost always sends LF. Retry in the file's style.
    if found.is_empty()
        && before.contains("\r\n")
        && old_text.contains('\n')
        && !old_text.contains("\r\n")
    {
        let crlf_old = old_text.replace('\n', "\r\n");
        let crlf_found = occurrences(&before, &crlf_old);
        if !crlf_found.is_empty() {
            old_text = crlf_old;
            new_text = new_text.replace("\r\n", "\n").replace('\n', "\r\n");
            found = crlf_found;
        }
    }
    match found.len() {
        0 => Err(ToolError::Failed(format!(
            "old_text was not found in '{rel}'. It must match the file exactly, including \
             whitespace, indentation and line breaks. Read the file again with read_file and \
             copy the text exactly."
        ))),
        1 => {
            let at = found[0];
            let mut after = String::with_capacity(before.len() + new_text.len());
            after.push_str(&before[..at]);
            after.push_str(&new_text);
            after.push_str(&before[at + old_text.len()..]);
            Ok(Edit {
                line: before[..at].matches('\n').count() + 1,
                old_lines: count_lines(&old_text),
                new_lines: count_lines(&new_text),
                target,
                rel,
                before,
                after,
            })
        }
        n => {
            let lines: Vec<String> = found
                .iter()
                .take(10)
                .map(|&at| (before[..at].matches('\n').count() + 1).to_string())
                .collect();
            Err(ToolError::Failed(format!(
                "old_text matches {n} times in '{rel}' (at lines {}); it must match exactly once. \
                 Include more surrounding lines in old_text to make it unique.",
                lines.join(", ")
            )))
        }
    }
}

#[async_trait]
impl ToolHandler for EditFile {
    /// `apply_patch` adds, replaces and edits files too: a worker under a persona that has
    /// it instead of this tool (a Codex model's) still gets this one.
    fn same_as(&self) -> &'static [&'static str] {
        &["apply_patch"]
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "edit_file".to_string(),
            description: "Replace text in a file. old_text must occur exactly once and match \
                exactly, whitespace included: copy it from read_file with enough lines to be \
                unique. One call per change."
                .to_string(),
            parameters: edit_schema(),
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
        let args: EditArgs = args::parse(&edit_schema(), args.clone())?;
        let edit = plan_edit(ctx, args).await?;
        let diff = unified_diff(&edit.rel, Some(&edit.before), &edit.after);
        Ok(Some(ApprovalAction::FileChange {
            path: edit.rel,
            diff,
        }))
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<String, ToolError> {
        let args: EditArgs = args::parse(&edit_schema(), args)?;
        let edit = plan_edit(ctx, args).await?;
        change::store(ctx, &edit.target, Some(edit.after.as_bytes()), None).await?;
        Ok(format!(
            "edited '{}': replaced {} at line {} with {}",
            edit.rel,
            plural(edit.old_lines, "line"),
            edit.line,
            plural(edit.new_lines, "line")
        ))
    }
}
