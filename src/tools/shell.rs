//! `run_command` and `run_tests`.

use super::process::{RunOutcome, Status, format_elapsed, run_shell};
use super::{ToolContext, ToolEffect, ToolError, ToolHandler, args};
use crate::model::ToolSpec;
use crate::protocol::ApprovalAction;
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use std::time::Duration;

/// Upper bound on a per-call timeout, so one call cannot hold an agent for hours.
const MAX_TIMEOUT_S: u64 = 600;

pub struct RunCommand;

#[derive(Deserialize)]
struct CommandArgs {
    command: String,
    timeout_s: Option<u64>,
}

fn command_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "command": {"type": "string"},
            "timeout_s": {"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_S}
        },
        "required": ["command"],
        "additionalProperties": false
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
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "run_command".to_string(),
            description: "Run a shell command (bash -c) in the workspace root: build, run a \
                script, use git. stdin is closed: pass flags such as --yes. Returns the exit \
                code, then stdout and stderr (long output keeps its start and end). To look at \
                files, use read_file and search_files."
                .to_string(),
            parameters: command_schema(),
        }
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::Mutating
    }

    async fn describe(
        &self,
        _ctx: &ToolContext,
        args: &Value,
    ) -> Result<Option<ApprovalAction>, ToolError> {
        let args: CommandArgs = args::parse(&command_schema(), args.clone())?;
        check_command(&args.command)?;
        Ok(Some(ApprovalAction::Command {
            command: args.command,
        }))
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<String, ToolError> {
        let args: CommandArgs = args::parse(&command_schema(), args)?;
        check_command(&args.command)?;
        let timeout = args
            .timeout_s
            .map_or(ctx.settings.command_timeout, Duration::from_secs);
        let outcome = run_shell(ctx, &args.command, timeout).await?;
        Ok(format!(
            "{}\n{}",
            status_line(&outcome),
            outcome.output_block()
        ))
    }
}

fn check_command(command: &str) -> Result<(), ToolError> {
    if command.trim().is_empty() {
        return Err(ToolError::InvalidArguments(
            "command is empty; give a shell command line to run".to_string(),
        ));
    }
    Ok(())
}

pub struct RunTests;

fn tests_schema() -> Value {
    json!({
        "type": "object",
        "properties": {},
        "additionalProperties": false
    })
}

/// The configured test command, or an error saying how to configure one.
fn test_command(ctx: &ToolContext) -> Result<String, ToolError> {
    ctx.settings
        .test_command
        .clone()
        .filter(|c| !c.trim().is_empty())
        .ok_or_else(|| {
            ToolError::Failed(
        "no test command is configured. The user can set one with `test_command = \"cargo test\"` \
         under [tools] in .squad/config.toml, or `test_command` in the role file. Until then, \
         run the project's tests with run_command."
            .to_string(),
        )
        })
}

#[async_trait]
impl ToolHandler for RunTests {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "run_tests".to_string(),
            description: "Run the project's configured test command. The result starts with \
                'tests passed' or 'tests FAILED', then the output."
                .to_string(),
            parameters: tests_schema(),
        }
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::Mutating
    }

    async fn describe(
        &self,
        ctx: &ToolContext,
        args: &Value,
    ) -> Result<Option<ApprovalAction>, ToolError> {
        args::parse::<Value>(&tests_schema(), args.clone())?;
        let command = test_command(ctx)?;
        Ok(Some(ApprovalAction::Command { command }))
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<String, ToolError> {
        args::parse::<Value>(&tests_schema(), args)?;
        let command = test_command(ctx)?;
        let outcome = run_shell(ctx, &command, ctx.settings.command_timeout).await?;
        let took = format_elapsed(outcome.elapsed);
        let head = match outcome.status {
            Status::Exited(0) => format!("tests passed ({took})"),
            Status::Exited(code) => format!("tests FAILED (exit code {code}, {took})"),
            Status::Signalled(sig) => format!("tests FAILED (killed by signal {sig}, {took})"),
            Status::TimedOut(limit) => format!(
                "tests FAILED (timed out after {}; killed)",
                format_elapsed(limit)
            ),
        };
        Ok(format!("{head}\n$ {command}\n{}", outcome.output_block()))
    }
}
