//! What a hook's run decides, read the way Claude Code documents it: exit 2 with stderr as
//! the reason, or exit 0 with a JSON object on stdout (`continue`, `stopReason`,
//! `systemMessage`, `suppressOutput`, `decision: "block"` with `reason`, and
//! `hookSpecificOutput` with `permissionDecision` allow/deny/ask, its reason,
//! `updatedInput` and `additionalContext`). Plain stdout of a prompt or session-start hook
//! is context for the model, as there.

use super::{HookEvent, HookRun};
use serde::Deserialize;
use serde_json::Value;

/// A hook's answer; the default lets things go on.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Decision {
    /// The call, prompt or stop is refused (for `stop`: the agent goes on), with this reason.
    pub block: Option<String>,
    /// `continue: false`: the agent stops, with this reason for the user.
    pub stop: Option<String>,
    /// `permissionDecision: "allow"` / `"ask"` (squad's approval gate still decides).
    pub permission: Option<String>,
    /// Replaces the tool's arguments.
    pub updated_input: Option<Value>,
    /// Text for the model.
    pub context: Option<String>,
    /// Shown to the user.
    pub system_message: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Output {
    #[serde(rename = "continue")]
    go_on: Option<bool>,
    stop_reason: Option<String>,
    system_message: Option<String>,
    decision: Option<String>,
    reason: Option<String>,
    hook_specific_output: Option<Specific>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Specific {
    permission_decision: Option<String>,
    permission_decision_reason: Option<String>,
    updated_input: Option<Value>,
    additional_context: Option<String>,
}

/// Whether a hook of `event` may refuse what it runs before.
pub fn can_block(event: HookEvent) -> bool {
    matches!(
        event,
        HookEvent::PreToolUse
            | HookEvent::Stop
            | HookEvent::UserPromptSubmit
            | HookEvent::TaskCreated
            | HookEvent::TaskCompleted
            | HookEvent::TeammateIdle
    )
}

/// The decision of a run that exited by itself with 0 or 2 (other exits are warnings and
/// decide nothing). `label` names the hook in a reason it did not give.
pub fn decide(event: HookEvent, ran: &HookRun, label: &str) -> Decision {
    let said_no = || format!("the hook `{label}` said no");
    match ran.exit {
        Some(2) if can_block(event) => {
            let stderr = ran.stderr.trim();
            Decision {
                block: Some(if stderr.is_empty() {
                    said_no()
                } else {
                    stderr.to_string()
                }),
                ..Decision::default()
            }
        }
        Some(0) => from_stdout(event, ran.stdout.trim(), said_no),
        _ => Decision::default(),
    }
}

fn from_stdout(event: HookEvent, stdout: &str, said_no: impl Fn() -> String) -> Decision {
    let plain_is_context = matches!(event, HookEvent::UserPromptSubmit | HookEvent::SessionStart);
    let mut out: Output = match serde_json::from_str(stdout) {
        Ok(out) => out,
        Err(_) if plain_is_context && !stdout.is_empty() => {
            return Decision {
                context: Some(stdout.to_string()),
                ..Decision::default()
            };
        }
        Err(_) => return Decision::default(),
    };
    // An empty reason says nothing: the hook's name stands in for it.
    out.reason = out.reason.filter(|r| !r.trim().is_empty());
    out.stop_reason = out.stop_reason.filter(|r| !r.trim().is_empty());
    let specific = out.hook_specific_output.take().unwrap_or_default();
    let mut d = Decision {
        system_message: out.system_message,
        context: specific.additional_context,
        updated_input: specific.updated_input,
        ..Decision::default()
    };
    if out.go_on == Some(false) {
        d.stop = Some(out.stop_reason.unwrap_or_else(&said_no));
    }
    let reason = specific
        .permission_decision_reason
        .clone()
        .filter(|r| !r.trim().is_empty())
        .or(out.reason.clone());
    match specific.permission_decision.as_deref() {
        Some("deny") => d.block = Some(reason.unwrap_or_else(&said_no)),
        Some(p @ ("allow" | "ask")) => d.permission = Some(p.to_string()),
        _ => {}
    }
    // The older top-level form (`decision: "block"`, PreToolUse's `"approve"`).
    if d.block.is_none() && out.decision.as_deref() == Some("block") {
        let reason = out.reason.unwrap_or_else(&said_no);
        if can_block(event) {
            d.block = Some(reason);
        } else {
            // After a call: the reason is for the model.
            d.context = Some(match d.context {
                Some(c) => format!("{reason}\n{c}"),
                None => reason,
            });
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ran(exit: i32, stdout: &str, stderr: &str) -> HookRun {
        HookRun {
            exit: Some(exit),
            timed_out: false,
            stderr: stderr.into(),
            stdout: stdout.into(),
            ms: 1,
            failed_to_start: None,
        }
    }

    #[test]
    fn a_json_deny_on_stdout_blocks_with_its_reason() {
        let out = r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "permissionDecision": "deny", "permissionDecisionReason": "no .env"}}"#;
        let d = decide(HookEvent::PreToolUse, &ran(0, out, ""), "x");
        assert_eq!(d.block.as_deref(), Some("no .env"));
    }

    #[test]
    fn exit_2_blocks_with_stderr_and_other_exits_decide_nothing() {
        let d = decide(HookEvent::PreToolUse, &ran(2, "", "rm -rf\n"), "x");
        assert_eq!(d.block.as_deref(), Some("rm -rf"));
        assert_eq!(
            decide(HookEvent::PreToolUse, &ran(1, "", "oops"), "x"),
            Decision::default()
        );
        // After a call nothing is refused.
        assert_eq!(
            decide(HookEvent::PostToolUse, &ran(2, "", "x"), "x").block,
            None
        );
    }

    #[test]
    fn continue_false_stops_and_block_after_a_call_tells_the_model() {
        let d = decide(
            HookEvent::PostToolUse,
            &ran(
                0,
                r#"{"continue": false, "stopReason": "enough", "decision": "block", "reason": "lint failed", "systemMessage": "hi"}"#,
                "",
            ),
            "x",
        );
        assert_eq!(d.stop.as_deref(), Some("enough"));
        assert_eq!(d.block, None);
        assert_eq!(d.context.as_deref(), Some("lint failed"));
        assert_eq!(d.system_message.as_deref(), Some("hi"));
    }

    /// Claude Code's team hooks: exit 2 or `decision: "block"` keeps the task open (or
    /// the teammate working, or the task off the board) with the reason.
    #[test]
    fn the_team_hooks_block_by_exit_2_or_a_json_decision() {
        for event in [
            HookEvent::TaskCreated,
            HookEvent::TaskCompleted,
            HookEvent::TeammateIdle,
        ] {
            let d = decide(event, &ran(2, "", "tests still fail\n"), "x");
            assert_eq!(d.block.as_deref(), Some("tests still fail"));
            let json = r#"{"decision": "block", "reason": "no changelog entry"}"#;
            let d = decide(event, &ran(0, json, ""), "x");
            assert_eq!(d.block.as_deref(), Some("no changelog entry"));
            let d = decide(
                event,
                &ran(0, r#"{"continue": false, "stopReason": "enough"}"#, ""),
                "x",
            );
            assert_eq!((d.block, d.stop.as_deref()), (None, Some("enough")));
            assert_eq!(decide(event, &ran(1, "", "oops"), "x"), Decision::default());
        }
    }

    #[test]
    fn a_prompt_hooks_plain_stdout_is_context_and_other_plain_stdout_is_nothing() {
        let d = decide(
            HookEvent::UserPromptSubmit,
            &ran(0, "today is Monday\n", ""),
            "x",
        );
        assert_eq!(d.context.as_deref(), Some("today is Monday"));
        assert_eq!(
            decide(HookEvent::PreToolUse, &ran(0, "ok", ""), "x"),
            Decision::default()
        );
    }
}
