//! One handler trait for every tool an agent calls: the coding tools, the agent tools and
//! MCP servers' tools. Each handler tells its own facts, per call (its kind, whether it
//! changes files, what its output reports, how a cut output says to read on), may it run
//! beside its neighbours, what does the user approve; so nothing outside a tool keeps a
//! list of tool names, and the runtime treats every call that changes files the same way:
//! a worktree first, the approval gate, its changes recorded.

use super::super::agent_tools::{AgentTool, Call, Effect, Failure, Host, Shared};
use super::super::team::Team;
use crate::mcp::{McpHub, McpTool};
use crate::protocol::{AgentId, ApprovalAction};
use crate::text::clip;
pub use crate::tools::Reach;
use crate::tools::{ToolEffect, ToolError, ToolFacts, ToolHandler, ToolKind};
use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// What a call may act on: who calls, and the runtime around it.
pub struct Invocation<'a> {
    pub agent: AgentId,
    pub team: &'a Team,
    pub shared: Shared<'a>,
    pub host: &'a dyn Host,
    pub cancel: &'a CancellationToken,
}

impl<'a> Invocation<'a> {
    /// The same call as an agent tool sees it.
    pub fn as_call(&self) -> Call<'a> {
        Call {
            caller: self.agent,
            team: self.team,
            shared: self.shared,
            host: self.host,
            cancel: self.cancel,
        }
    }
}

/// How one call ended.
pub enum Ran {
    Ok(String, Effect),
    /// An error the model can fix: its result.
    Error(String),
    /// The turn cannot go on.
    Fatal(String),
}

#[async_trait]
pub trait CallHandler: Send + Sync {
    /// The most any call of it may do (a `run_command` may change files); what one call
    /// does is in its `facts`.
    fn reach(&self) -> Reach;

    /// What this call is: its kind, whether it changes files (a `run_command` that only
    /// lists does not), what its output reports, how a cut output says to read on.
    fn facts(&self, args: &Value) -> ToolFacts;

    /// Whether neighbouring calls may run at the same time (when nobody has to be asked).
    fn concurrent(&self) -> bool;

    /// Tools that together do what this one does (see `ToolHandler::same_as`).
    fn same_as(&self) -> &'static [&'static str] {
        &[]
    }

    /// See `ToolHandler::comes_with`.
    fn comes_with(&self) -> Option<&'static str> {
        None
    }

    /// Whether `model` was trained on this tool (see `ToolHandler::preferred_by`).
    fn preferred_by(&self, _model: &str) -> bool {
        false
    }

    /// The paths a call writes when that is all it does (see `ToolHandler::writes_only`).
    fn writes_only(&self, _args: &Value) -> Option<Vec<String>> {
        None
    }

    /// What the user approves before the call runs; `None`: it needs no approval here.
    /// Argument errors found here are returned before anyone is asked.
    async fn describe(
        &self,
        _call: &Invocation<'_>,
        _args: &Value,
    ) -> Result<Option<ApprovalAction>, String> {
        Ok(None)
    }

    async fn run(&self, call: &Invocation<'_>, args: Value) -> Ran;
}

/// A coding tool (files, search, commands, tests) on the agent's root.
pub struct Coding(pub Arc<dyn ToolHandler>);

#[async_trait]
impl CallHandler for Coding {
    fn same_as(&self) -> &'static [&'static str] {
        self.0.same_as()
    }

    fn preferred_by(&self, model: &str) -> bool {
        self.0.preferred_by(model)
    }

    fn comes_with(&self) -> Option<&'static str> {
        self.0.comes_with()
    }

    fn reach(&self) -> Reach {
        match self.0.effect() {
            ToolEffect::ReadOnly => Reach::Reads,
            ToolEffect::Mutating => Reach::ChangesFiles,
        }
    }

    fn concurrent(&self) -> bool {
        self.0.effect() == ToolEffect::ReadOnly
    }

    fn facts(&self, args: &Value) -> ToolFacts {
        self.0.facts(args)
    }

    fn writes_only(&self, args: &Value) -> Option<Vec<String>> {
        self.0.writes_only(args)
    }

    async fn describe(
        &self,
        call: &Invocation<'_>,
        args: &Value,
    ) -> Result<Option<ApprovalAction>, String> {
        if self.0.effect() == ToolEffect::ReadOnly {
            return Ok(None);
        }
        let ctx = call.host.tool_context();
        self.0.describe(&ctx, args).await.map_err(|e| e.to_string())
    }

    async fn run(&self, call: &Invocation<'_>, args: Value) -> Ran {
        let ctx = call.host.tool_context();
        match self.0.call(&ctx, args).await {
            Ok(output) => Ran::Ok(output, Effect::None),
            Err(ToolError::Cancelled) => Ran::Error("cancelled by the user".to_string()),
            Err(e) => Ran::Error(e.to_string()),
        }
    }
}

/// An agent tool: acts on the team; any approval it needs (a spawn) it asks itself.
pub struct Agent(pub Arc<dyn AgentTool>);

#[async_trait]
impl CallHandler for Agent {
    fn reach(&self) -> Reach {
        Reach::Team
    }

    fn concurrent(&self) -> bool {
        self.0.concurrent()
    }

    fn facts(&self, args: &Value) -> ToolFacts {
        self.0.facts(args)
    }

    async fn run(&self, call: &Invocation<'_>, args: Value) -> Ran {
        match self.0.call(&call.as_call(), args).await {
            Ok(done) => Ran::Ok(done.output, done.effect),
            Err(Failure::Fixable(message)) => Ran::Error(message),
            Err(Failure::Fatal(message)) => Ran::Fatal(message),
        }
    }
}

/// A tool of an MCP server. Only the server's own word (`readOnlyHint: true`) spares it
/// the gate and the worktree.
pub struct Mcp {
    pub tool: Arc<McpTool>,
    pub hub: Arc<McpHub>,
}

#[async_trait]
impl CallHandler for Mcp {
    fn reach(&self) -> Reach {
        if self.tool.read_only {
            Reach::Reads
        } else {
            Reach::ChangesFiles
        }
    }

    fn concurrent(&self) -> bool {
        self.tool.read_only
    }

    /// What the server says of it (`readOnlyHint`), nothing more.
    fn facts(&self, _args: &Value) -> ToolFacts {
        match self.reach() {
            Reach::Reads => ToolFacts::new(ToolKind::Read, Reach::Reads),
            reach => ToolFacts::new(ToolKind::Other, reach),
        }
    }

    async fn describe(
        &self,
        _call: &Invocation<'_>,
        args: &Value,
    ) -> Result<Option<ApprovalAction>, String> {
        if self.tool.read_only {
            return Ok(None);
        }
        let arguments = serde_json::to_string_pretty(args).unwrap_or_default();
        Ok(Some(ApprovalAction::McpTool {
            server: self.tool.server.clone(),
            tool: self.tool.tool.clone(),
            arguments: clip(&arguments, 4000),
        }))
    }

    async fn run(&self, call: &Invocation<'_>, args: Value) -> Ran {
        let max_bytes = call.shared.config.tools.max_output_bytes;
        match self
            .hub
            .call(&self.tool.name, args, max_bytes, call.cancel)
            .await
        {
            Ok(output) => Ran::Ok(output, Effect::None),
            Err(message) => Ran::Error(message),
        }
    }
}
