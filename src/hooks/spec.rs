//! What a hook is: `[[hooks]]` entries of a config file, each with the event it runs on,
//! what it matches, its command and its time limit, and the file it came from.

use globset::{Glob, GlobMatcher};
use serde::Deserialize;
use std::path::PathBuf;

/// When a hook runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookEvent {
    /// Before a tool call runs (after its arguments were checked, before approval).
    PreToolUse,
    /// After a tool call ran, with its output.
    PostToolUse,
    /// A worker takes up a task.
    AgentStart,
    /// A worker returned its result.
    AgentStop,
    /// A task of the board is done.
    TaskCompleted,
    /// The persona's turn ends.
    Stop,
}

impl HookEvent {
    /// Claude Code's name for it, which scripts written for its hooks read.
    pub fn claude_name(self) -> &'static str {
        match self {
            Self::PreToolUse => "PreToolUse",
            Self::PostToolUse => "PostToolUse",
            Self::AgentStart => "SubagentStart",
            Self::AgentStop => "SubagentStop",
            Self::TaskCompleted => "TaskCompleted",
            Self::Stop => "Stop",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::PreToolUse => "pre_tool_use",
            Self::PostToolUse => "post_tool_use",
            Self::AgentStart => "agent_start",
            Self::AgentStop => "agent_stop",
            Self::TaskCompleted => "task_completed",
            Self::Stop => "stop",
        }
    }
}

/// Where a hook was written: the user's own files run as they are; a workspace's
/// `.squad/config.toml` came with the repository and runs only once the user approved
/// that file's content.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookSource {
    pub file: PathBuf,
    pub workspace: bool,
    /// The file's content digest (what an approval is for).
    pub digest: String,
}

#[derive(Clone, Debug)]
pub struct HookSpec {
    pub event: HookEvent,
    /// Tool name or glob (`run_*`, `*`); `None` matches every tool.
    matcher: Option<GlobMatcher>,
    pub matcher_text: Option<String>,
    /// Only agents of this role.
    pub role: Option<String>,
    pub command: String,
    pub timeout_s: u64,
    pub source: HookSource,
}

/// A hook that hangs is killed after this long unless it says otherwise.
pub const DEFAULT_TIMEOUT_S: u64 = 60;

impl HookSpec {
    /// Whether the hook runs for this event, tool (if any) and role.
    pub fn matches(&self, event: HookEvent, tool: Option<&str>, role: &str) -> bool {
        self.event == event
            && self.role.as_deref().is_none_or(|r| r == role)
            && match (&self.matcher, tool) {
                (None, _) => true,
                (Some(m), Some(tool)) => m.is_match(tool),
                (Some(_), None) => false,
            }
    }

    /// How the hook is named to the user: its command, cut short.
    pub fn label(&self) -> String {
        crate::text::clip(self.command.trim(), 60)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    event: HookEvent,
    #[serde(default)]
    matcher: Option<String>,
    #[serde(default)]
    role: Option<String>,
    command: String,
    #[serde(default)]
    timeout_s: Option<u64>,
}

/// The hooks of one config file's `hooks` array; a broken entry is left out with a problem
/// that names the file and the entry, so the session still starts and says what is wrong.
pub fn parse_hooks(value: toml::Value, source: &HookSource) -> (Vec<HookSpec>, Vec<String>) {
    let where_ = source.file.display();
    let toml::Value::Array(entries) = value else {
        return (
            Vec::new(),
            vec![format!(
                "{where_}: `hooks` must be an array of tables ([[hooks]]); no hook of this file runs"
            )],
        );
    };
    let mut hooks = Vec::new();
    let mut problems = Vec::new();
    for (i, entry) in entries.into_iter().enumerate() {
        let n = i + 1;
        match parse_entry(entry, source) {
            Ok(h) => hooks.push(h),
            Err(e) => problems.push(format!("{where_}: [[hooks]] entry {n} is left out: {e}")),
        }
    }
    (hooks, problems)
}

fn parse_entry(value: toml::Value, source: &HookSource) -> Result<HookSpec, String> {
    let entry: Entry = value.try_into().map_err(|e: toml::de::Error| {
        format!(
            "{} (fields: event = pre_tool_use | post_tool_use | agent_start | agent_stop | \
             task_completed | stop, matcher, role, command, timeout_s)",
            e.message()
        )
    })?;
    if entry.command.trim().is_empty() {
        return Err("`command` is empty".to_string());
    }
    let matcher = match entry.matcher.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(m) => Some(
            Glob::new(m)
                .map_err(|e| format!("matcher `{m}` is not a valid glob: {e}"))?
                .compile_matcher(),
        ),
    };
    let timeout_s = entry.timeout_s.unwrap_or(DEFAULT_TIMEOUT_S);
    if timeout_s == 0 {
        return Err("`timeout_s` must be at least 1".to_string());
    }
    Ok(HookSpec {
        event: entry.event,
        matcher,
        matcher_text: entry.matcher,
        role: entry.role.filter(|r| !r.trim().is_empty()),
        command: entry.command,
        timeout_s,
        source: source.clone(),
    })
}

/// Every hook of the session's config files, with the problems found reading them.
#[derive(Clone, Debug, Default)]
pub struct Hooks {
    pub list: Vec<HookSpec>,
    pub problems: Vec<String>,
}

impl PartialEq for Hooks {
    fn eq(&self, other: &Self) -> bool {
        let key = |h: &HookSpec| {
            (
                h.event,
                h.matcher_text.clone(),
                h.role.clone(),
                h.command.clone(),
                h.timeout_s,
                h.source.clone(),
            )
        };
        self.problems == other.problems && self.list.iter().map(key).eq(other.list.iter().map(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(workspace: bool) -> HookSource {
        HookSource {
            file: PathBuf::from(".squad/config.toml"),
            workspace,
            digest: "d".into(),
        }
    }

    fn parse(text: &str) -> (Vec<HookSpec>, Vec<String>) {
        let table: toml::Table = text.parse().unwrap();
        parse_hooks(table["hooks"].clone(), &source(false))
    }

    #[test]
    fn a_glob_matcher_and_a_role_narrow_a_hook() {
        let (hooks, problems) = parse(
            r#"
            [[hooks]]
            event = "pre_tool_use"
            matcher = "run_*"
            role = "implementer"
            command = "check.sh"
            "#,
        );
        assert!(problems.is_empty(), "{problems:?}");
        let h = &hooks[0];
        assert_eq!(h.timeout_s, DEFAULT_TIMEOUT_S);
        assert!(h.matches(HookEvent::PreToolUse, Some("run_command"), "implementer"));
        assert!(h.matches(HookEvent::PreToolUse, Some("run_tests"), "implementer"));
        assert!(!h.matches(HookEvent::PreToolUse, Some("write_file"), "implementer"));
        assert!(!h.matches(HookEvent::PreToolUse, Some("run_command"), "copilot"));
        assert!(!h.matches(HookEvent::PostToolUse, Some("run_command"), "implementer"));
        assert!(
            !h.matches(HookEvent::Stop, None, "implementer"),
            "a matcher needs a tool"
        );
    }

    #[test]
    fn without_a_matcher_a_hook_runs_for_every_tool_and_on_events_without_one() {
        let (hooks, _) = parse(
            r#"
            [[hooks]]
            event = "stop"
            command = "x"
            timeout_s = 5
            "#,
        );
        assert!(hooks[0].matches(HookEvent::Stop, None, "copilot"));
        assert_eq!(hooks[0].timeout_s, 5);
    }

    #[test]
    fn broken_entries_are_left_out_each_with_a_problem_naming_it_and_the_rest_load() {
        let (hooks, problems) = parse(
            r#"
            [[hooks]]
            event = "before_everything"
            command = "x"

            [[hooks]]
            event = "stop"
            command = "  "

            [[hooks]]
            event = "pre_tool_use"
            matcher = "[oops"
            command = "x"

            [[hooks]]
            event = "post_tool_use"
            command = "ok.sh"
            "#,
        );
        assert_eq!(hooks.len(), 1);
        assert_eq!(hooks[0].command, "ok.sh");
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].contains("entry 1") && problems[0].contains("pre_tool_use |"));
        assert!(problems[1].contains("entry 2") && problems[1].contains("empty"));
        assert!(problems[2].contains("entry 3") && problems[2].contains("[oops"));
        let (none, problems) = parse("hooks = 3");
        assert!(none.is_empty() && problems[0].contains("array of tables"));
    }

    #[test]
    fn event_names_map_to_claude_codes() {
        assert_eq!(HookEvent::PreToolUse.claude_name(), "PreToolUse");
        assert_eq!(HookEvent::AgentStop.claude_name(), "SubagentStop");
        assert_eq!(HookEvent::Stop.name(), "stop");
    }
}
