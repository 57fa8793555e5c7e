//! Hooks written for Claude Code (`.claude/settings.json`, `~/.claude/settings.json`) and
//! Codex (`.codex/hooks.json`), read as they are when a config's `[hooks] import` names
//! the file: `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
//! "command": "…", "timeout": 30}]}]}}`. A file in the workspace is the workspace's, so its
//! hooks wait for an approval like `.squad/config.toml`'s.

use super::{HookEvent, HookSource, HookSpec, digest};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Where an `import` entry points: `~/` is the home folder, a relative path the workspace's.
pub fn resolve(entry: &str, workspace: &Path, home: Option<&Path>) -> PathBuf {
    match (entry.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => workspace.join(entry),
    }
}

/// The hooks of one settings file, with the problems met (unknown events, non-command
/// hooks); a missing file is a problem too, since the config named it. `from_workspace`:
/// the workspace's own config named it, so its hooks wait for an approval wherever it is.
pub fn import(path: &Path, workspace: &Path, from_workspace: bool) -> (Vec<HookSpec>, Vec<String>) {
    let at = path.display();
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return (Vec::new(), vec![format!("{at}: cannot import hooks: {e}")]),
    };
    let json: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            return (
                Vec::new(),
                vec![format!("{at}: not JSON ({e}); no hook imported")],
            );
        }
    };
    let source = HookSource {
        file: path.to_path_buf(),
        workspace: from_workspace || path.starts_with(workspace),
        digest: digest(&text),
    };
    let mut hooks = Vec::new();
    let mut problems = Vec::new();
    let Some(events) = json.get("hooks").and_then(Value::as_object) else {
        return (hooks, problems);
    };
    for (name, groups) in events {
        let Ok(event) = serde_json::from_value::<HookEvent>(Value::String(name.clone())) else {
            problems.push(format!(
                "{at}: squad has no `{name}` event yet; its hooks are left out"
            ));
            continue;
        };
        for group in groups.as_array().into_iter().flatten() {
            let matcher = group["matcher"].as_str().map(str::to_string);
            for h in group["hooks"].as_array().into_iter().flatten() {
                let kind = h["type"].as_str().unwrap_or("command");
                let Some(command) = h["command"].as_str().filter(|_| kind == "command") else {
                    problems.push(format!(
                        "{at}: a `{name}` hook of type `{kind}` is left out (squad runs commands)"
                    ));
                    continue;
                };
                let timeout = h["timeout"].as_u64();
                match HookSpec::new(
                    event,
                    matcher.clone(),
                    command.to_string(),
                    timeout,
                    &source,
                ) {
                    Ok(hook) => hooks.push(hook),
                    Err(e) => problems.push(format!("{at}: a `{name}` hook is left out: {e}")),
                }
            }
        }
    }
    (hooks, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_settings_hooks_are_read_and_unknown_events_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".claude/settings.json");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(
            &path,
            r#"{"permissions": {}, "hooks": {
                "PreToolUse": [{"matcher": "Bash", "hooks": [
                    {"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/x.sh", "timeout": 30}]}],
                "Stop": [{"hooks": [{"type": "prompt", "prompt": "done?"}]}],
                "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}],
                "PermissionRequest": [{"hooks": [{"type": "command", "command": "x"}]}]
            }}"#,
        )
        .unwrap();
        let (hooks, problems) = import(&path, dir.path(), false);
        assert_eq!(hooks.len(), 2);
        assert_eq!(hooks[1].event, HookEvent::Notification);
        assert_eq!(hooks[0].event, HookEvent::PreToolUse);
        assert_eq!(hooks[0].timeout_s, 30);
        assert!(hooks[0].takes(&["run_command", "Bash"]));
        assert!(hooks[0].source.workspace);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert_eq!(
            resolve("~/.claude/settings.json", dir.path(), Some(Path::new("/h"))),
            Path::new("/h/.claude/settings.json")
        );
    }
}
