//! What a hook is: `[[hooks]]` entries of a config file, each with the event it runs on,
//! what it matches, its command and its time limit, and the file it came from.

use globset::{Glob, GlobMatcher};
use serde::Deserialize;
use std::path::PathBuf;

/// When a hook runs. In a config file, squad's snake_case name or Claude Code's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookEvent {
    /// Before a tool call runs (after its arguments were checked, before approval).
    #[serde(alias = "PreToolUse")]
    PreToolUse,
    /// After a tool call ran, with its output.
    #[serde(alias = "PostToolUse")]
    PostToolUse,
    /// A worker takes up a task.
    #[serde(alias = "SubagentStart")]
    AgentStart,
    /// A worker returned its result.
    #[serde(alias = "SubagentStop")]
    AgentStop,
    /// A task of the board is about to be done (its worker returned its result): may
    /// keep it open, the reason going back to the worker.
    #[serde(alias = "TaskCompleted")]
    TaskCompleted,
    /// A task is about to be put on the board (`plan_tasks`): may refuse the plan.
    #[serde(alias = "TaskCreated")]
    TaskCreated,
    /// A kept worker is about to rest between tasks: may keep it working, the reason
    /// going to it.
    #[serde(alias = "TeammateIdle")]
    TeammateIdle,
    /// The persona's turn ends.
    #[serde(alias = "Stop")]
    Stop,
    /// The persona's first message of the session (matcher: `startup`): may add context.
    #[serde(alias = "SessionStart")]
    SessionStart,
    /// The user's message, before the persona reads it: may block it or add context.
    #[serde(alias = "UserPromptSubmit")]
    UserPromptSubmit,
    /// The session ends (`reason`: `prompt_input_exit` when the user quit, else `other`).
    #[serde(alias = "SessionEnd")]
    SessionEnd,
    /// Before a conversation is compacted (matcher: `manual` for `/compact`, else `auto`).
    #[serde(alias = "PreCompact")]
    PreCompact,
    /// The user is waited on (matcher: `permission_prompt` for an approval,
    /// `elicitation_dialog` for an agent's question).
    #[serde(alias = "Notification")]
    Notification,
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
            Self::TaskCreated => "TaskCreated",
            Self::TeammateIdle => "TeammateIdle",
            Self::Stop => "Stop",
            Self::SessionStart => "SessionStart",
            Self::UserPromptSubmit => "UserPromptSubmit",
            Self::SessionEnd => "SessionEnd",
            Self::PreCompact => "PreCompact",
            Self::Notification => "Notification",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::PreToolUse => "pre_tool_use",
            Self::PostToolUse => "post_tool_use",
            Self::AgentStart => "agent_start",
            Self::AgentStop => "agent_stop",
            Self::TaskCompleted => "task_completed",
            Self::TaskCreated => "task_created",
            Self::TeammateIdle => "teammate_idle",
            Self::Stop => "stop",
            Self::SessionStart => "session_start",
            Self::UserPromptSubmit => "user_prompt_submit",
            Self::SessionEnd => "session_end",
            Self::PreCompact => "pre_compact",
            Self::Notification => "notification",
        }
    }

    /// Whether its matcher names tools (else it names what the event is about).
    pub fn is_about_tools(self) -> bool {
        matches!(self, Self::PreToolUse | Self::PostToolUse)
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
    /// Alternatives (`Edit|Write`), each a name or glob (`run_*`, `mcp__.*`); `None`
    /// matches everything.
    matcher: Option<Vec<GlobMatcher>>,
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
    /// Whether the hook runs for this event and role, and its matcher takes one of `names`
    /// (a tool's squad and Claude Code names, or what the event is about).
    pub fn matches(&self, event: HookEvent, names: &[&str], role: &str) -> bool {
        self.event == event && self.role.as_deref().is_none_or(|r| r == role) && self.takes(names)
    }

    /// Whether the matcher takes one of `names` (no matcher takes all).
    pub fn takes(&self, names: &[&str]) -> bool {
        match &self.matcher {
            None => true,
            Some(alts) => names.iter().any(|n| alts.iter().any(|m| m.is_match(n))),
        }
    }

    /// How the hook is named to the user: its command, cut short.
    pub fn label(&self) -> String {
        crate::text::cut(self.command.trim(), 60)
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
             task_created | task_completed | teammate_idle | stop | session_start | user_prompt_submit | session_end | \
             pre_compact | notification, or Claude Code's names; matcher, role, command, timeout_s)",
            e.message()
        )
    })?;
    if entry.command.trim().is_empty() {
        return Err("`command` is empty".to_string());
    }
    let mut hook = HookSpec::new(
        entry.event,
        entry.matcher,
        entry.command,
        entry.timeout_s,
        source,
    )?;
    hook.role = entry.role.filter(|r| !r.trim().is_empty());
    Ok(hook)
}

impl HookSpec {
    /// A hook for every role; `timeout_s` `None` is the default.
    pub(crate) fn new(
        event: HookEvent,
        matcher: Option<String>,
        command: String,
        timeout_s: Option<u64>,
        source: &HookSource,
    ) -> Result<Self, String> {
        let timeout_s = timeout_s.unwrap_or(DEFAULT_TIMEOUT_S);
        if timeout_s == 0 {
            return Err("`timeout_s` must be at least 1".to_string());
        }
        Ok(HookSpec {
            event,
            matcher: compile_matcher(matcher.as_deref())?,
            matcher_text: matcher,
            role: None,
            command,
            timeout_s,
            source: source.clone(),
        })
    }
}

/// A matcher as Claude Code writes them (`Bash`, `Edit|Write`, `mcp__.*`, `*`) or as
/// squad did (`run_*`): alternatives split at `|`, each a glob, `.*` read as `*`.
pub(crate) fn compile_matcher(text: Option<&str>) -> Result<Option<Vec<GlobMatcher>>, String> {
    let m = match text.map(str::trim) {
        None | Some("") | Some("*") | Some(".*") => return Ok(None),
        Some(m) => m,
    };
    m.split('|')
        .map(|alt| {
            let glob = alt.trim().replace(".*", "*");
            Glob::new(&glob)
                .map(|g| g.compile_matcher())
                .map_err(|e| format!("matcher `{m}` is not a valid pattern: {e}"))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
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
        assert!(h.matches(HookEvent::PreToolUse, &["run_command"], "implementer"));
        assert!(h.matches(HookEvent::PreToolUse, &["run_tests"], "implementer"));
        assert!(!h.matches(HookEvent::PreToolUse, &["write_file"], "implementer"));
        assert!(!h.matches(HookEvent::PreToolUse, &["run_command"], "copilot"));
        assert!(!h.matches(HookEvent::PostToolUse, &["run_command"], "implementer"));
        assert!(
            !h.matches(HookEvent::Stop, &[], "implementer"),
            "a matcher needs a name"
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
        assert!(hooks[0].matches(HookEvent::Stop, &[], "copilot"));
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
        assert!(problems[0].contains("entry 1") && problems[0].contains("pre_tool_use"));
        assert!(problems[1].contains("entry 2") && problems[1].contains("empty"));
        assert!(problems[2].contains("entry 3") && problems[2].contains("[oops"));
        let (none, problems) = parse("hooks = 3");
        assert!(none.is_empty() && problems[0].contains("array of tables"));
    }

    #[test]
    fn claude_codes_matchers_and_event_names_are_read() {
        let (hooks, problems) = parse(
            r#"
            [[hooks]]
            event = "PreToolUse"
            matcher = "Edit|Write"
            command = "x"

            [[hooks]]
            event = "post_tool_use"
            matcher = "mcp__.*"
            command = "x"
            "#,
        );
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(hooks[0].event, HookEvent::PreToolUse);
        assert!(hooks[0].takes(&["write_file", "Write"]));
        assert!(hooks[0].takes(&["edit_file", "Edit"]));
        assert!(!hooks[0].takes(&["run_command", "Bash"]));
        assert!(hooks[1].takes(&["mcp__github__create_issue"]));
    }

    #[test]
    fn event_names_map_to_claude_codes() {
        assert_eq!(HookEvent::PreToolUse.claude_name(), "PreToolUse");
        assert_eq!(HookEvent::AgentStop.claude_name(), "SubagentStop");
        assert_eq!(HookEvent::Stop.name(), "stop");
        for (claude, squad) in [
            ("SessionEnd", HookEvent::SessionEnd),
            ("PreCompact", HookEvent::PreCompact),
            ("Notification", HookEvent::Notification),
        ] {
            let read: HookEvent = serde_json::from_value(claude.into()).unwrap();
            assert_eq!(read, squad);
            assert_eq!(squad.claude_name(), claude);
            let snake: HookEvent = serde_json::from_value(squad.name().into()).unwrap();
            assert_eq!(snake, squad);
        }
    }
}
