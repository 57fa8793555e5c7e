//! `apply_patch`: edits in OpenAI's V4A patch format, the one GPT-4.1 and the GPT-5 family
//! are trained to write. One call adds, deletes, updates and moves several files, each
//! update in context-anchored hunks; all of it is applied or none.

mod apply;
mod parse;
mod plan;

use super::files::diff_between;
use super::{
    Reach, Reports, ToolContext, ToolEffect, ToolError, ToolFacts, ToolHandler, ToolKind, args,
};
use crate::model::ToolSpec;
use crate::protocol::ApprovalAction;
use async_trait::async_trait;
use plan::{Change, ChangeKind, Plan};
use serde::Deserialize;
use serde_json::{Value, json};

pub struct ApplyPatch;

/// Whether `model` is of a family OpenAI trained on V4A patches, the ones Codex gives
/// `apply_patch` (its `-codex` models, GPT-5 and gpt-oss): they get it in place of
/// `write_file` and `edit_file`, whatever the persona's own list says about it.
pub fn trained_on(model: &str) -> bool {
    let model = model.to_ascii_lowercase();
    // A provider's prefix (`openai/gpt-5-codex`) does not change the model.
    let name = model.rsplit('/').next().unwrap_or(&model);
    name.contains("codex") || name.starts_with("gpt-5") || name.starts_with("gpt-oss")
}

#[derive(Deserialize)]
struct PatchArgs {
    patch: String,
}

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {"patch": {"type": "string"}},
        "required": ["patch"]
    })
}

/// A patch as Claude Code's calls, one per file: an added file is a `Write` of its
/// content, an update an `Edit` of its hunks' lines (a move's target named as
/// `new_file_path`), a deletion an `Edit` to nothing. A patch that does not parse is none.
pub(crate) fn claude_calls(patch: &str, root: &std::path::Path) -> Vec<(&'static str, Value)> {
    let Ok(patch) = parse::parse(patch) else {
        return Vec::new();
    };
    let abs = |p: &str| root.join(p).to_string_lossy().into_owned();
    let lines = |hunks: &[parse::Hunk], old: bool| {
        let all: Vec<&str> = hunks
            .iter()
            .flat_map(|h| if old { &h.old } else { &h.new })
            .map(String::as_str)
            .collect();
        all.join("\n")
    };
    patch
        .ops
        .iter()
        .map(|op| match op {
            parse::FileOp::Add { path, contents, .. } => (
                "Write",
                json!({"file_path": abs(path), "content": contents}),
            ),
            parse::FileOp::Delete { path, .. } => (
                "Edit",
                json!({"file_path": abs(path), "old_string": "", "new_string": "", "delete": true}),
            ),
            parse::FileOp::Update {
                path,
                move_to,
                hunks,
                ..
            } => {
                let mut v = json!({
                    "file_path": abs(path),
                    "old_string": lines(hunks, true),
                    "new_string": lines(hunks, false),
                    "replace_all": false,
                });
                if let Some(to) = move_to {
                    v["new_file_path"] = json!(abs(to));
                }
                ("Edit", v)
            }
        })
        .collect()
}

/// Parses the patch and works it out against the agent's root, reading the files off the
/// async threads. Any error means nothing will be written.
async fn plan(ctx: &ToolContext, args: Value) -> Result<Plan, ToolError> {
    let args: PatchArgs = args::parse(&schema(), args)?;
    let refused = |e: String| ToolError::Failed(format!("{e}\nNothing of the patch was written."));
    let patch = parse::parse(&args.patch).map_err(|e| refused(e.to_string()))?;
    Plan::new(ctx, &patch)
        .await
        .map_err(|e| refused(e.to_string()))
}

/// One unified diff of every operation, in the patch's order.
fn diff(changes: &[Change]) -> String {
    let mut out = String::new();
    for c in changes {
        let old_name = match c.kind {
            ChangeKind::Added => "/dev/null".to_string(),
            _ => format!("a/{}", c.path),
        };
        let new_name = match (c.kind, &c.to) {
            (ChangeKind::Deleted, _) => "/dev/null".to_string(),
            (_, Some(to)) => format!("b/{to}"),
            (_, None) => format!("b/{}", c.path),
        };
        if let Some(to) = &c.to {
            out.push_str(&format!("rename {} → {to}\n", c.path));
        }
        let before = c.before.as_deref().unwrap_or("");
        let after = c.after.as_deref().unwrap_or("");
        let section = diff_between(&old_name, &new_name, before, after);
        if section.is_empty() && c.kind != ChangeKind::Moved {
            out.push_str(&format!("--- {old_name}\n+++ {new_name}\n(empty file)\n"));
        }
        out.push_str(&section);
    }
    out
}

/// The result: one `A`/`M`/`D`/`R` line per operation.
fn summary(changes: &[Change]) -> String {
    let mut out = format!(
        "applied the patch ({} {}):",
        changes.len(),
        if changes.len() == 1 {
            "operation"
        } else {
            "operations"
        }
    );
    for c in changes {
        out.push_str(&format!("\n{} {}", c.kind.letter(), c.path));
        if let Some(to) = &c.to {
            out.push_str(&format!(" -> {to}"));
        }
    }
    out
}

#[async_trait]
impl ToolHandler for ApplyPatch {
    fn same_as(&self) -> &'static [&'static str] {
        &["write_file", "edit_file"]
    }

    fn preferred_by(&self, model: &str) -> bool {
        trained_on(model)
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "apply_patch".to_string(),
            // Terse: copilot's first request stays under 8 KB; models trained on V4A know it.
            description: "Edit files with a V4A patch: *** Begin Patch; per file *** Add File: \
                P (+ lines), *** Delete File: P or *** Update File: P (opt. *** Move to: Q) \
                with @@ hunks of ' '/-/+ lines; *** End Patch. All or nothing."
                .to_string(),
            parameters: schema(),
            // On the Responses wire, where the server takes it: the patch as plain text in
            // the format's grammar, as Codex offers it to the models trained on it.
            freeform: Some(crate::model::Freeform {
                argument: "patch".to_string(),
                grammar: include_str!("grammar.lark").to_string(),
            }),
        }
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::Mutating
    }

    /// The change the user asked for, which the answer reports.
    fn facts(&self, _args: &Value) -> ToolFacts {
        ToolFacts::new(ToolKind::Edit, Reach::ChangesFiles).reports(Reports::Change)
    }

    /// A patch that only adds and updates files in place; one that deletes or moves
    /// changes what is there in other ways.
    fn writes_only(&self, args: &Value) -> Option<Vec<String>> {
        let patch = parse::parse(args["patch"].as_str()?).ok()?;
        patch
            .ops
            .into_iter()
            .map(|op| match op {
                parse::FileOp::Add { path, .. } => Some(path),
                parse::FileOp::Update {
                    path,
                    move_to: None,
                    ..
                } => Some(path),
                _ => None,
            })
            .collect()
    }

    async fn describe(
        &self,
        ctx: &ToolContext,
        args: &Value,
    ) -> Result<Option<ApprovalAction>, ToolError> {
        let plan = plan(ctx, args.clone()).await?;
        Ok(Some(ApprovalAction::Patch {
            paths: plan.paths(),
            diff: diff(&plan.changes),
        }))
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<String, ToolError> {
        let plan = plan(ctx, args).await?;
        if plan.paths().is_empty() {
            return Ok("the patch applies but changes nothing: no file was written".to_string());
        }
        if ctx.cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        plan.write(ctx)
            .await
            .map_err(|e| ToolError::Failed(e.to_string()))?;
        Ok(summary(&plan.changes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::{EditFile, WriteFile};

    fn writes(body: &str) -> Option<Vec<String>> {
        let patch = format!("*** Begin Patch\n{body}*** End Patch\n");
        ApplyPatch.writes_only(&json!({ "patch": patch }))
    }

    #[test]
    fn only_calls_that_add_or_change_files_in_place_name_what_they_write() {
        assert_eq!(
            writes("*** Add File: a.txt\n+x\n*** Update File: b.txt\n@@\n-y\n+z\n"),
            Some(vec!["a.txt".to_string(), "b.txt".to_string()])
        );
        assert_eq!(writes("*** Delete File: a.txt\n"), None);
        assert_eq!(
            writes("*** Update File: b.txt\n*** Move to: c.txt\n@@\n-y\n+z\n"),
            None
        );
        assert_eq!(ApplyPatch.writes_only(&json!({"patch": "no patch"})), None);
        let file = json!({"path": "src/x.rs", "content": "", "old_text": "a", "new_text": "b"});
        assert_eq!(WriteFile.writes_only(&file), Some(vec!["src/x.rs".into()]));
        assert_eq!(EditFile.writes_only(&file), Some(vec!["src/x.rs".into()]));
        assert_eq!(WriteFile.writes_only(&json!({})), None);
    }
}
