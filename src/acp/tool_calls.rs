//! A squad tool call as ACP shows it: its kind, a short title, the file it acts on as
//! its location, and for edits the change as a diff the editor can draw.

use crate::text::one_line;
use crate::tools::ToolFacts;
use agent_client_protocol::v1::schema::{
    Content, ContentBlock, Diff, ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus,
    ToolKind,
};
use serde_json::Value;
use std::path::Path;

/// The `tool_call` announcing a call the model made (`pending` until it runs).
pub fn announce(workspace: &Path, id: &str, tool: &str, arguments: &str) -> ToolCall {
    // Arguments that are not JSON still show: as the raw text.
    let args: Value =
        serde_json::from_str(arguments).unwrap_or_else(|_| Value::String(arguments.to_string()));
    let facts = crate::runtime::tool_facts(tool, &args);
    let mut call = ToolCall::new(id.to_string(), title(tool, &args))
        .kind(acp_kind(facts.kind))
        .status(ToolCallStatus::Pending);
    if let Some(path) = args.get("path").and_then(Value::as_str) {
        let path = workspace.join(path);
        if let Some(diff) = diff(&path, &facts, &args) {
            call = call.content(vec![ToolCallContent::Diff(diff)]);
        }
        call = call.locations(vec![ToolCallLocation::new(path)]);
    }
    call.raw_input(args)
}

/// An edit's change, from the arguments of a call its handler calls an edit: the old and
/// new text of a replacement, or a whole new content.
fn diff(path: &Path, facts: &ToolFacts, args: &Value) -> Option<Diff> {
    if facts.kind != crate::tools::ToolKind::Edit {
        return None;
    }
    let text = |k: &str| args.get(k).and_then(Value::as_str);
    if let Some(content) = text("content") {
        return Some(Diff::new(path, content));
    }
    Some(Diff::new(path, text("new_text")?).old_text(text("old_text")?))
}

/// ACP's tool kind for a call of `tool`, as its handler says it.
pub fn kind(tool: &str, args: &Value) -> ToolKind {
    acp_kind(crate::runtime::tool_facts(tool, args).kind)
}

/// ACP's name for a squad tool kind.
fn acp_kind(kind: crate::tools::ToolKind) -> ToolKind {
    match kind {
        crate::tools::ToolKind::Read => ToolKind::Read,
        crate::tools::ToolKind::Edit => ToolKind::Edit,
        crate::tools::ToolKind::Search => ToolKind::Search,
        crate::tools::ToolKind::Execute => ToolKind::Execute,
        crate::tools::ToolKind::Think => ToolKind::Think,
        crate::tools::ToolKind::Fetch => ToolKind::Fetch,
        crate::tools::ToolKind::Other => ToolKind::Other,
    }
}

/// A short title: the tool and what it acts on.
pub fn title(tool: &str, args: &Value) -> String {
    let subject = ["path", "command", "pattern", "role_name", "query"]
        .iter()
        .find_map(|k| args.get(*k).and_then(Value::as_str));
    match subject {
        Some(s) => format!("{tool} {}", one_line(s)),
        None => tool.to_string(),
    }
}

/// Text as a tool call's content.
pub fn text_content(text: impl Into<String>) -> ToolCallContent {
    ToolCallContent::Content(Content::new(ContentBlock::from(text.into())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_edit_carries_its_location_and_diff() {
        let args = json!({"path": "src/a.rs", "old_text": "x", "new_text": "y"}).to_string();
        let call = announce(Path::new("/ws"), "c1", "edit_file", &args);
        let wire = serde_json::to_value(&call).unwrap();
        assert_eq!(wire["kind"], "edit");
        // Pending is the schema's default: the crate leaves it out.
        assert!(wire.get("status").is_none_or(|s| s == "pending"), "{wire}");
        assert_eq!(wire["title"], "edit_file src/a.rs");
        assert_eq!(wire["locations"][0]["path"], "/ws/src/a.rs");
        assert_eq!(
            wire["content"][0],
            json!({"type": "diff", "path": "/ws/src/a.rs", "oldText": "x", "newText": "y"})
        );
    }

    #[test]
    fn a_new_file_has_no_old_text_and_arguments_that_are_not_json_still_show() {
        let args = json!({"path": "n.txt", "content": "hi"}).to_string();
        let wire =
            serde_json::to_value(announce(Path::new("/ws"), "c", "write_file", &args)).unwrap();
        assert_eq!(wire["content"][0]["newText"], "hi");
        assert!(wire["content"][0].get("oldText").is_none_or(Value::is_null));
        let wire =
            serde_json::to_value(announce(Path::new("/ws"), "c", "search_files", "{oops")).unwrap();
        assert_eq!(wire["rawInput"], "{oops");
        assert_eq!(wire["kind"], "search");
    }
}
