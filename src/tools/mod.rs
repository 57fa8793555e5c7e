//! The tools an agent can call: a handler trait and a registry that looks them up by name.

mod args;
mod change;
pub mod claude;
pub mod claude_input;
mod edit_file;
mod editor;
mod files;
mod list;
mod patch;
mod process;
mod read_only;
mod search;
mod settings;
mod shell;
pub use shell::{RUN_COMMAND, TESTS_FAILED, TESTS_PASSED};
#[cfg(test)]
mod names_check;
mod test_command;
mod use_skill;

pub(crate) use args::parse as parse_args;
pub use args::{check_args, check_value};
pub use edit_file::EditFile;
pub use editor::EditorFiles;
pub use files::{ReadFile, WriteFile, read_for_prompt};
pub use list::ListFiles;
pub use patch::ApplyPatch;
pub(crate) use process::{Status as RunStatus, run_shell};
pub use search::SearchFiles;
pub use settings::ToolSettings;
pub use shell::{RunCommand, RunTests};
pub use use_skill::{USE_SKILL, UseSkill};

use crate::model::ToolSpec;
use crate::protocol::{AgentId, ApprovalAction};
use crate::workspace::Workspace;
use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// What a tool call does, as front ends show it (ACP's tool kinds): each handler says its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolKind {
    Read,
    Edit,
    Search,
    Execute,
    /// Planning, or asking the user.
    Think,
    Fetch,
    Other,
}

/// What a call may act on, as the runtime needs to know it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// Reads only: the same call with nothing changed gives the same answer.
    Reads,
    /// May change files (writes, edits, commands not known to only read, tests, MCP tools
    /// not marked read-only): the agent gets its worktree first and its changes are
    /// recorded.
    ChangesFiles,
    /// Acts on the team or the user (spawn, wait, speak, ask…).
    Team,
}

/// What a call's output reports, beyond being its answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reports {
    Nothing,
    /// A test run: the output starts with `TESTS_PASSED` or `TESTS_FAILED`.
    TestRun,
    /// A change to the files the user asked for (a write, an edit, a patch).
    Change,
    /// Workers' results.
    Results,
}

/// One call's facts, from its handler and its arguments: what kind of call it is, whether
/// it changes files, what its output reports and how a cut output says to read the rest.
/// Everything outside a tool asks these (`CallHandler::facts`), never the tool's name.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolFacts {
    pub kind: ToolKind,
    pub reach: Reach,
    pub reports: Reports,
    pub clip: crate::context::ClipHint,
}

impl ToolFacts {
    /// A call of `kind` reaching `reach` that reports nothing in particular.
    pub fn new(kind: ToolKind, reach: Reach) -> Self {
        Self {
            kind,
            reach,
            reports: Reports::Nothing,
            clip: crate::context::ClipHint::Other,
        }
    }

    pub fn reports(self, reports: Reports) -> Self {
        Self { reports, ..self }
    }

    pub fn clip(self, clip: crate::context::ClipHint) -> Self {
        Self { clip, ..self }
    }

    pub fn changes_files(&self) -> bool {
        self.reach == Reach::ChangesFiles
    }
}

/// Whether a tool changes the world; mutating tools pass the approval gate first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolEffect {
    ReadOnly,
    Mutating,
}

/// What a tool call may use.
#[derive(Clone)]
pub struct ToolContext {
    pub agent_id: AgentId,
    pub workspace: Arc<Workspace>,
    pub settings: Arc<ToolSettings>,
    pub cancel: CancellationToken,
    /// The OS sandbox commands run in; `None`: unconfined (`off`, or none can be had).
    pub sandbox: Option<Arc<crate::sandbox::Confined>>,
    /// The user's editor, where the file tools read and write through it (ACP); only for
    /// agents working in the session's own workspace.
    pub editor: Option<Arc<dyn EditorFiles>>,
}

/// Errors the model can act on: they go back to it as the tool result.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    #[error(transparent)]
    Path(#[from] crate::workspace::PathError),
    #[error("{0}")]
    Failed(String),
    /// The file does not exist (the text says so and what to do).
    #[error("{0}")]
    NotFound(String),
    #[error("denied: {0}")]
    Denied(String),
    #[error("cancelled")]
    Cancelled,
}

impl ToolError {
    /// A file the text tools cannot read: it is not UTF-8.
    pub fn not_text(rel: &str) -> Self {
        Self::Failed(format!(
            "'{rel}' is not a UTF-8 text file (it looks binary); these tools only read and edit text"
        ))
    }

    /// A path that names a directory where a file is wanted.
    pub fn is_dir(rel: &str) -> Self {
        Self::Failed(format!(
            "'{rel}' is a directory, not a file; use list_files to see its contents"
        ))
    }

    pub fn io(what: &str, path: &str, err: std::io::Error) -> Self {
        Self::Failed(format!("cannot {what} {path}: {err}"))
    }
}

#[async_trait]
pub trait ToolHandler: Send + Sync {
    fn spec(&self) -> ToolSpec;

    fn effect(&self) -> ToolEffect;

    /// What it does, as front ends show it; by default, reading or editing by its effect.
    fn kind(&self) -> ToolKind {
        match self.effect() {
            ToolEffect::ReadOnly => ToolKind::Read,
            ToolEffect::Mutating => ToolKind::Edit,
        }
    }

    /// This call's facts (see `ToolFacts`); by default the tool's kind and effect, for
    /// every call alike.
    fn facts(&self, _args: &Value) -> ToolFacts {
        let reach = match self.effect() {
            ToolEffect::ReadOnly => Reach::Reads,
            ToolEffect::Mutating => Reach::ChangesFiles,
        };
        ToolFacts::new(self.kind(), reach)
    }

    /// Tools that together do what this one does: a worker may have it when its parent has
    /// all of them (`apply_patch` is `write_file` and `edit_file` in another format, so a
    /// persona that leaves it out to keep its first request small still passes it on).
    fn same_as(&self) -> &'static [&'static str] {
        &[]
    }

    /// A tool whose agents get this one too, whatever their role's list says (`use_skill`
    /// comes with `read_file`: every agent that reads may read the session's skills).
    fn comes_with(&self) -> Option<&'static str> {
        None
    }

    /// Whether `model` was trained on this tool, so it is offered instead of its `same_as`
    /// tools wherever the agent has all of them (Codex's models and `apply_patch`).
    fn preferred_by(&self, _model: &str) -> bool {
        false
    }

    /// For mutating tools: what the user is asked to approve (a diff, a command). Argument
    /// errors found here are returned before anyone is asked.
    async fn describe(
        &self,
        _ctx: &ToolContext,
        _args: &Value,
    ) -> Result<Option<ApprovalAction>, ToolError> {
        Ok(None)
    }

    /// For a call that only creates or changes files its arguments name (no deletion, no
    /// move, no command): those paths, as given. A worker's worktree made for such a first
    /// call is filled behind it (`isolation::Worktree::create_lazy_at`). `None`: anything
    /// else, or arguments it cannot read.
    fn writes_only(&self, _args: &Value) -> Option<Vec<String>> {
        None
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<String, ToolError>;
}

/// Tools by name, in a stable order for the model. Each tool's spec is built once, at
/// registration: lookups happen on every call and must not rebuild JSON schemas.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: Vec<(ToolSpec, Arc<dyn ToolHandler>)>,
}

impl ToolRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn register(&mut self, tool: Arc<dyn ToolHandler>) {
        let spec = tool.spec();
        self.tools.retain(|(s, _)| s.name != spec.name);
        self.tools.push((spec, tool));
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn ToolHandler>> {
        self.tools
            .iter()
            .find(|(s, _)| s.name == name)
            .map(|(_, t)| t.clone())
    }

    pub fn spec(&self, name: &str) -> Option<&ToolSpec> {
        self.tools
            .iter()
            .find(|(s, _)| s.name == name)
            .map(|(s, _)| s)
    }

    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|(s, _)| s.name.clone()).collect()
    }

    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|(s, _)| s.clone()).collect()
    }
}

/// The coding tools (files, search, shell, tests), in the order the model sees them.
pub fn coding_tools() -> Vec<Arc<dyn ToolHandler>> {
    vec![
        Arc::new(ReadFile),
        Arc::new(ListFiles),
        Arc::new(SearchFiles),
        Arc::new(WriteFile),
        Arc::new(EditFile),
        Arc::new(ApplyPatch),
        Arc::new(RunCommand),
        Arc::new(RunTests),
    ]
}
