//! `run_command` and `run_tests`.

use super::process::{RunOutcome, Status, format_elapsed, run_shell, run_shell_in};
use super::{
    Reach, Reports, ToolContext, ToolEffect, ToolError, ToolFacts, ToolHandler, ToolKind, args,
};
use crate::context::ClipHint;
use crate::model::ToolSpec;
use crate::protocol::ApprovalAction;
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use std::time::Duration;

/// How a `run_tests` result starts: the model reads it, and the answer layer tells a pass
/// from a failure by it.
/// The command tool's name, for the far side's checks that run a command as a worker would.
pub const RUN_COMMAND: &str = "run_command";
pub const TESTS_PASSED: &str = "tests passed";
pub const TESTS_FAILED: &str = "tests FAILED";

/// Upper bound on a per-call timeout, so one call cannot hold an agent for hours.
const MAX_TIMEOUT_S: u64 = 600;

pub struct RunCommand;

#[derive(Deserialize)]
struct CommandArgs {
    command: String,
    timeout_s: Option<u64>,
    /// Run outside the sandbox, once the user approves (`reason` says why).
    #[serde(default)]
    escalate: bool,
    reason: Option<String>,
}

fn command_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "command": {"type": "string"},
            "timeout_s": {"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_S},
            "escalate": {"type": "boolean"},
            "reason": {"type": "string"}
        },
        "required": ["command"]
    })
}

fn status_line(outcome: &RunOutcome) -> String {
    let took = format_elapsed(outcome.elapsed);
    match outcome.status {
        Status::Exited(code) => format!("exit code: {code} ({took})"),
        Status::Signalled(sig) => format!("killed by signal {sig} ({took})"),
        Status::TimedOut(limit) => format!(
            "timed out after {}; the command and everything it started were killed",
            format_elapsed(limit)
        ),
    }
}

#[async_trait]
impl ToolHandler for RunCommand {
    fn kind(&self) -> super::ToolKind {
        super::ToolKind::Execute
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: RUN_COMMAND.to_string(),
            description: "Run a shell command (bash -c) in the workspace root, sandboxed; stdin \
                is closed (pass --yes). Returns the exit code and output (long output keeps \
                both ends). Read files with read_file."
                .to_string(),
            parameters: command_schema(),
            freeform: None,
        }
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::Mutating
    }

    /// A command known to only read (`ls`, `git diff`, `rg`…, see `read_only`) changes no
    /// file; anything else may.
    fn facts(&self, args: &Value) -> ToolFacts {
        let reads = args["command"]
            .as_str()
            .is_some_and(super::read_only::is_read_only);
        let reach = if reads {
            Reach::Reads
        } else {
            Reach::ChangesFiles
        };
        ToolFacts::new(ToolKind::Execute, reach).clip(ClipHint::Command)
    }

    async fn describe(
        &self,
        ctx: &ToolContext,
        args: &Value,
    ) -> Result<Option<ApprovalAction>, ToolError> {
        let args: CommandArgs = args::parse(&command_schema(), args.clone())?;
        check_command(&args)?;
        Ok(Some(command_action(ctx, args)))
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<String, ToolError> {
        let args: CommandArgs = args::parse(&command_schema(), args)?;
        check_command(&args)?;
        let timeout = args
            .timeout_s
            .map_or(ctx.settings.command_timeout, Duration::from_secs);
        // Only an approved call gets here: an escalation runs unconfined.
        let sandbox = ctx.sandbox.as_deref().filter(|_| !args.escalate);
        let outcome = run_shell_in(ctx, &args.command, timeout, sandbox).await?;
        let mut out = format!("{}\n{}", status_line(&outcome), outcome.output_block());
        if let Some(note) = blocked(&outcome, sandbox) {
            out.push_str("\n\n");
            out.push_str(&note);
        }
        Ok(out)
    }
}

/// What the gate is shown for `command`: inside the sandbox (no prompt under `ask`), an
/// escalation out of it (always asked), or a plain command where there is no sandbox.
fn command_action(ctx: &ToolContext, args: CommandArgs) -> ApprovalAction {
    let command = args.command;
    match &ctx.sandbox {
        Some(_) if args.escalate => ApprovalAction::Escalation {
            command,
            reason: args.reason.unwrap_or_default(),
        },
        Some(sandbox) => ApprovalAction::SandboxedCommand {
            command,
            sandbox: sandbox.level.label(),
        },
        None => ApprovalAction::Command { command },
    }
}

/// The note for a sandboxed command that failed the way a refusal of the sandbox looks.
fn blocked(outcome: &RunOutcome, sandbox: Option<&crate::sandbox::Confined>) -> Option<String> {
    let failed = !matches!(outcome.status, Status::Exited(0));
    sandbox
        .filter(|_| failed)
        .and_then(|c| crate::sandbox::blocked_note(&outcome.output, c))
}

fn check_command(args: &CommandArgs) -> Result<(), ToolError> {
    if args.command.trim().is_empty() {
        return Err(ToolError::InvalidArguments(
            "command is empty; give a shell command line to run".to_string(),
        ));
    }
    if args.escalate && args.reason.as_deref().is_none_or(|r| r.trim().is_empty()) {
        return Err(ToolError::InvalidArguments(
            "escalate needs a reason: say what the sandbox blocked and why the command needs it"
                .to_string(),
        ));
    }
    Ok(())
}

pub struct RunTests;

fn tests_schema() -> Value {
    json!({
        "type": "object",
        "properties": {}
    })
}

/// The configured test command, else the one the project's files name (`detected`), or
/// an error saying how to configure one.
fn test_command(ctx: &ToolContext) -> Result<(String, bool), ToolError> {
    if let Some(c) = ctx
        .settings
        .test_command
        .clone()
        .filter(|c| !c.trim().is_empty())
    {
        return Ok((c, false));
    }
    if let Some(c) = super::test_command::detect(ctx.workspace.root()) {
        return Ok((c.to_string(), true));
    }
    Err(ToolError::Failed(
        "no test command is configured, and the project's files name none (no Cargo.toml, \
         go.mod, package.json test script, pytest files or Makefile test target). The user \
         can set one with `test_command = \"cargo test\"` under [tools] in \
         .squad/config.toml, or `test_command` in the role file. Until then, run the \
         project's tests with run_command."
            .to_string(),
    ))
}

#[async_trait]
impl ToolHandler for RunTests {
    fn kind(&self) -> super::ToolKind {
        super::ToolKind::Execute
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "run_tests".to_string(),
            description: "Run the project's tests (its test_command, or the runner its files \
                name). Its output starts with 'tests passed' or 'tests FAILED'."
                .to_string(),
            parameters: tests_schema(),
            freeform: None,
        }
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::Mutating
    }

    /// A test run: its output says pass or fail, which the answer layer reads.
    fn facts(&self, _args: &Value) -> ToolFacts {
        ToolFacts::new(ToolKind::Execute, Reach::ChangesFiles)
            .reports(Reports::TestRun)
            .clip(ClipHint::Command)
    }

    async fn describe(
        &self,
        ctx: &ToolContext,
        args: &Value,
    ) -> Result<Option<ApprovalAction>, ToolError> {
        args::parse::<Value>(&tests_schema(), args.clone())?;
        let (command, _) = test_command(ctx)?;
        Ok(Some(match &ctx.sandbox {
            Some(sandbox) => ApprovalAction::SandboxedCommand {
                command,
                sandbox: sandbox.level.label(),
            },
            None => ApprovalAction::Command { command },
        }))
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<String, ToolError> {
        args::parse::<Value>(&tests_schema(), args)?;
        let (command, detected) = test_command(ctx)?;
        let outcome = run_shell(ctx, &command, ctx.settings.command_timeout).await?;
        let took = format_elapsed(outcome.elapsed);
        let head = match outcome.status {
            Status::Exited(0) => format!("{TESTS_PASSED} ({took})"),
            Status::Exited(code) => format!("{TESTS_FAILED} (exit code {code}, {took})"),
            Status::Signalled(sig) => format!("{TESTS_FAILED} (killed by signal {sig}, {took})"),
            Status::TimedOut(limit) => format!(
                "{TESTS_FAILED} (timed out after {}; killed)",
                format_elapsed(limit)
            ),
        };
        let found = if detected {
            " (from the project's files; no test_command is configured)"
        } else {
            ""
        };
        let mut out = format!("{head}\n$ {command}{found}\n{}", outcome.output_block());
        if let Some(note) = blocked(&outcome, ctx.sandbox.as_deref()) {
            out.push_str("\n\n");
            out.push_str(&note);
        }
        Ok(out)
    }
}
