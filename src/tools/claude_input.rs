//! A hook's `updatedInput`, written in Claude Code's argument names (`command`, an absolute
//! `file_path`, `old_string`, `new_string`, `content`…), as squad's arguments for the same
//! call. Only what the hook changed is taken: fields equal to what the hook was sent are
//! left as squad had them, so a hook that echoes `tool_input` back with one field changed
//! changes that field. A change squad's tool cannot express is an error naming the field.

use super::claude::ClaudeCall;
use serde_json::{Map, Value};
use std::path::Path;

/// How one of Claude Code's fields becomes squad's.
#[derive(Clone, Copy)]
enum Field {
    /// The same value under squad's name.
    Same(&'static str),
    /// A path: absolute under the agent's root becomes relative.
    Path(&'static str),
    /// Milliseconds to whole seconds (`timeout` → `timeout_s`).
    Seconds(&'static str),
    /// Read's `offset` (first line, 1-based) → `start_line`.
    Offset,
    /// Read's `limit` (lines) → `end_line`.
    Limit,
    /// Said to the hook for its information only: a change is ignored.
    Info,
}

/// squad's fields for each of Claude Code's, per squad tool.
fn fields(tool: &str) -> &'static [(&'static str, Field)] {
    use Field::*;
    match tool {
        "run_command" => &[
            ("command", Same("command")),
            ("description", Same("reason")),
            ("timeout", Seconds("timeout_s")),
        ],
        "run_tests" => &[("description", Info)],
        "read_file" => &[
            ("file_path", Path("path")),
            ("offset", Offset),
            ("limit", Limit),
        ],
        "write_file" => &[("file_path", Path("path")), ("content", Same("content"))],
        "edit_file" => &[
            ("file_path", Path("path")),
            ("old_string", Same("old_text")),
            ("new_string", Same("new_text")),
        ],
        "list_files" => &[("path", Path("path"))],
        "search_files" => &[("pattern", Same("pattern")), ("path", Path("path"))],
        "spawn_agent" => &[
            ("subagent_type", Same("role_name")),
            ("prompt", Same("task_prompt")),
            ("description", Info),
        ],
        _ => &[],
    }
}

/// squad's arguments for `tool` after a hook answered `updated` to the call it was sent as
/// `sent` (squad's own arguments were `args`; paths are relative to `root`).
pub fn squad_args(
    tool: &str,
    args: &Value,
    sent: &ClaudeCall,
    updated: &Value,
    root: &Path,
) -> Result<Value, String> {
    let Some(updated) = updated.as_object() else {
        return Err("`updatedInput` must be a JSON object".to_string());
    };
    let mut out: Map<String, Value> = args.as_object().cloned().unwrap_or_default();
    let table = fields(tool);
    let start_line = |out: &Map<String, Value>| out.get("start_line").and_then(Value::as_u64);
    for (key, value) in updated {
        if sent.input.get(key) == Some(value) {
            continue;
        }
        match table.iter().find(|(k, _)| k == key).map(|(_, f)| *f) {
            Some(Field::Same(to)) => {
                out.insert(to.to_string(), value.clone());
            }
            Some(Field::Path(to)) => {
                out.insert(to.to_string(), relative(value, root));
            }
            Some(Field::Seconds(to)) => {
                let ms = value
                    .as_u64()
                    .ok_or_else(|| format!("`{key}` must be a whole number of milliseconds"))?;
                out.insert(to.to_string(), Value::from(ms.div_ceil(1000).max(1)));
            }
            Some(Field::Offset) => {
                out.insert("start_line".to_string(), value.clone());
            }
            Some(Field::Limit) => {
                let lines = value
                    .as_u64()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| format!("`{key}` must be a number of lines"))?;
                let from = updated
                    .get("offset")
                    .and_then(Value::as_u64)
                    .or_else(|| start_line(&out))
                    .unwrap_or(1);
                out.insert("end_line".to_string(), Value::from(from + lines - 1));
            }
            Some(Field::Info) => {}
            // squad's own names, which the hook was sent beside Claude Code's.
            None if args.get(key).is_some() || !is_claudes(tool, sent, key) => {
                out.insert(key.clone(), value.clone());
            }
            None => {
                return Err(format!(
                    "`{key}` of Claude Code's `{}` has no counterpart in squad's `{tool}`",
                    sent.name
                ));
            }
        }
    }
    Ok(Value::Object(out))
}

/// Whether `key` is one of the Claude Code fields the hook was sent (not squad's own).
fn is_claudes(tool: &str, sent: &ClaudeCall, key: &str) -> bool {
    tool == "apply_patch" || sent.input.get(key).is_some()
}

/// An absolute path under `root` as squad's relative one; anything else as given (the
/// tool refuses a path outside the workspace, as for the model's own).
fn relative(value: &Value, root: &Path) -> Value {
    let Some(text) = value.as_str() else {
        return value.clone();
    };
    match Path::new(text).strip_prefix(root) {
        Ok(rel) if rel.as_os_str().is_empty() => Value::from("."),
        Ok(rel) => Value::from(rel.to_string_lossy().into_owned()),
        Err(_) => value.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::claude::claude_calls;
    use serde_json::json;

    fn back(tool: &str, args: Value, updated: Value) -> Result<Value, String> {
        let root = Path::new("/ws");
        let sent = &claude_calls(tool, &args, root)[0];
        squad_args(tool, &args, sent, &updated, root)
    }

    #[test]
    fn claudes_changed_fields_become_squads_arguments() {
        let edit = json!({"path": "a.rs", "old_text": "x", "new_text": "y"});
        // The hook echoes tool_input with one field changed: that field changes.
        let mut echoed = claude_calls("edit_file", &edit, Path::new("/ws"))[0]
            .input
            .clone();
        echoed["file_path"] = json!("/ws/src/b.rs");
        echoed["new_string"] = json!("z");
        let got = back("edit_file", edit.clone(), echoed).unwrap();
        assert_eq!(
            got,
            json!({"path": "src/b.rs", "old_text": "x", "new_text": "z"})
        );
        let cmd = json!({"command": "rm -rf build"});
        let got = back(
            "run_command",
            cmd,
            json!({"command": "rm -rf build --dry-run", "timeout": 1500}),
        )
        .unwrap();
        assert_eq!(
            got,
            json!({"command": "rm -rf build --dry-run", "timeout_s": 2})
        );
        let read = back(
            "read_file",
            json!({"path": "a"}),
            json!({"offset": 10, "limit": 5}),
        )
        .unwrap();
        assert_eq!(read, json!({"path": "a", "start_line": 10, "end_line": 14}));
    }

    #[test]
    fn what_squads_tool_cannot_do_is_an_error_naming_the_field() {
        let e = back(
            "edit_file",
            json!({"path": "a", "old_text": "x", "new_text": "y"}),
            json!({"replace_all": true}),
        )
        .unwrap_err();
        assert!(e.contains("`replace_all`") && e.contains("`Edit`"), "{e}");
        assert!(back("run_command", json!({"command": "ls"}), json!("ls")).is_err());
        // Outside the root stays absolute, for the tool to refuse.
        let w = back(
            "write_file",
            json!({"path": "a", "content": ""}),
            json!({"file_path": "/etc/passwd"}),
        )
        .unwrap();
        assert_eq!(w["path"], "/etc/passwd");
    }
}
