//! squad's tools as Claude Code names them, for what users wrote for Claude Code: hook
//! scripts read `tool_name == "Bash"` and `tool_input.file_path`, matchers say
//! `"Edit|Write"`, agent files list `tools: Read, Grep`. One table, beside the handlers,
//! so hooks and agent files ask here instead of keeping their own lists.

use serde_json::{Map, Value, json};
use std::path::Path;

/// squad's tool → Claude Code's nearest tool. Several of squad's may share one name
/// (`run_command` and `run_tests` are both `Bash`); the first of a name is the one an
/// agent file's `tools:` entry gives.
pub const CLAUDE_NAMES: &[(&str, &str)] = &[
    ("run_command", "Bash"),
    ("run_tests", "Bash"),
    ("read_file", "Read"),
    ("write_file", "Write"),
    ("edit_file", "Edit"),
    ("apply_patch", "Edit"),
    ("list_files", "Glob"),
    ("search_files", "Grep"),
    ("spawn_agent", "Task"),
    ("wait_for_agents", "TaskOutput"),
    ("despawn_agent", "KillShell"),
    ("plan_tasks", "TodoWrite"),
    ("update_task", "TodoWrite"),
    ("ask_user", "AskUserQuestion"),
    ("handoff_to", "ExitPlanMode"),
];

/// Claude Code's name for a squad tool (an MCP tool `server__tool` is `mcp__server__tool`;
/// a tool without a counterpart keeps its own name).
pub fn claude_name(tool: &str) -> String {
    if let Some((_, c)) = CLAUDE_NAMES.iter().find(|(s, _)| *s == tool) {
        return (*c).to_string();
    }
    if tool.contains(crate::mcp::SEPARATOR) {
        return format!("mcp__{tool}");
    }
    tool.to_string()
}

/// squad's tools for a Claude Code tool name (an agent file's `tools:` entry). `Edit`,
/// `MultiEdit` and `Write` each give the file tools and `apply_patch`, since a role that may
/// edit may do it either way.
pub fn squad_names(claude: &str) -> Vec<&'static str> {
    match claude {
        "Edit" | "MultiEdit" | "Write" | "NotebookEdit" => {
            vec!["edit_file", "write_file", "apply_patch"]
        }
        "LS" => vec!["list_files"],
        _ => CLAUDE_NAMES
            .iter()
            .filter(|(_, c)| *c == claude)
            .map(|(s, _)| *s)
            .collect(),
    }
}

/// One call as a Claude Code hook sees it: its tool name and `tool_input`.
#[derive(Clone, Debug, PartialEq)]
pub struct ClaudeCall {
    pub name: String,
    pub input: Value,
}

/// A squad call as Claude Code's calls (paths absolute under `root`, Claude's argument
/// names), with squad's own arguments kept beside them. A patch is one call per file it
/// touches, so a hook guarding a file sees every file.
pub fn claude_calls(tool: &str, args: &Value, root: &Path) -> Vec<ClaudeCall> {
    let s = |k: &str| args.get(k).and_then(Value::as_str).unwrap_or_default();
    let abs = |p: &str| root.join(p).to_string_lossy().into_owned();
    let input = match tool {
        "run_command" => {
            let mut v = json!({"command": s("command"), "description": s("reason")});
            if let Some(t) = args.get("timeout_s").and_then(Value::as_u64) {
                v["timeout"] = json!(t * 1000);
            }
            v
        }
        "run_tests" => json!({"command": "", "description": "run the project's tests"}),
        "read_file" => json!({"file_path": abs(s("path"))}),
        "write_file" => json!({"file_path": abs(s("path")), "content": s("content")}),
        "edit_file" => json!({
            "file_path": abs(s("path")),
            "old_string": s("old_text"),
            "new_string": s("new_text"),
            "replace_all": false,
        }),
        "list_files" => json!({"pattern": "**/*", "path": abs(s("path"))}),
        "search_files" => json!({"pattern": s("pattern"), "path": abs(s("path"))}),
        "spawn_agent" => json!({
            "subagent_type": s("role_name"),
            "prompt": s("task_prompt"),
            "description": crate::text::clip(s("task_prompt"), 60),
        }),
        "apply_patch" => {
            return super::patch::claude_calls(s("patch"), root)
                .into_iter()
                .map(|(name, input)| ClaudeCall {
                    name: name.to_string(),
                    input: with_squads(input, args),
                })
                .collect();
        }
        _ => Value::Object(Map::new()),
    };
    vec![ClaudeCall {
        name: claude_name(tool),
        input: with_squads(input, args),
    }]
}

/// Claude's arguments first; squad's own where Claude has none of that name.
fn with_squads(mut claude: Value, squad: &Value) -> Value {
    if let (Some(c), Some(s)) = (claude.as_object_mut(), squad.as_object()) {
        for (k, v) in s {
            c.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    claude
}

/// A call's result as Claude Code's `tool_response`, with squad's `output` and `is_error`.
pub fn claude_response(call: &ClaudeCall, output: &str, is_error: bool) -> Value {
    let mut v = json!({"output": output, "is_error": is_error, "success": !is_error});
    if call.name == "Bash" {
        v["stdout"] = json!(output);
        v["stderr"] = json!("");
        v["interrupted"] = json!(false);
        v["isImage"] = json!(false);
    }
    if let Some(path) = call.input.get("file_path") {
        v["filePath"] = path.clone();
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_is_bash_and_file_tools_name_absolute_paths_in_claudes_fields() {
        let root = Path::new("/ws");
        let bash = &claude_calls("run_command", &json!({"command": "rm -rf /"}), root)[0];
        assert_eq!(bash.name, "Bash");
        assert_eq!(bash.input["command"], "rm -rf /");
        let edit = &claude_calls(
            "edit_file",
            &json!({"path": "src/a.rs", "old_text": "a", "new_text": "b"}),
            root,
        )[0];
        assert_eq!(edit.name, "Edit");
        assert_eq!(edit.input["file_path"], "/ws/src/a.rs");
        assert_eq!(edit.input["old_string"], "a");
        assert_eq!(edit.input["path"], "src/a.rs", "squad's own kept");
        let r = claude_response(edit, "ok", false);
        assert_eq!(r["filePath"], "/ws/src/a.rs");
        assert_eq!(
            claude_name("github__create_issue"),
            "mcp__github__create_issue"
        );
    }

    #[test]
    fn a_patch_is_one_call_per_file() {
        let patch = "*** Begin Patch\n*** Add File: .env\n+K=1\n*** Update File: a.txt\n@@\n-x\n+y\n*** End Patch";
        let calls = claude_calls("apply_patch", &json!({ "patch": patch }), Path::new("/ws"));
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].name, "Write");
        assert_eq!(calls[0].input["file_path"], "/ws/.env");
        assert_eq!(calls[0].input["content"], "K=1\n");
        assert_eq!(calls[1].name, "Edit");
        assert_eq!(calls[1].input["old_string"], "x");
        assert_eq!(calls[1].input["new_string"], "y");
    }

    #[test]
    fn claude_tool_names_give_squads_tools() {
        assert_eq!(squad_names("Bash"), ["run_command", "run_tests"]);
        assert!(squad_names("Write").contains(&"apply_patch"));
        assert_eq!(squad_names("Grep"), ["search_files"]);
        assert!(squad_names("WebFetch").is_empty());
    }
}
