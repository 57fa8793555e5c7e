//! Where a worker's tools run: the seam between a tool's facts (its spec, what it reaches,
//! what it reports: always this side's) and its execution. A worker on this machine keeps
//! the plain handlers, so the in-process path is untouched and costs nothing more; a
//! worker in an environment gets the same tools wrapped in [`Placed`], whose calls go to
//! its [`ToolPlace`].

use super::client::Remote;
use crate::model::ToolSpec;
use crate::protocol::ApprovalAction;
use crate::tools::{ToolContext, ToolEffect, ToolError, ToolFacts, ToolHandler, ToolKind};
use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Somewhere a worker's tool calls run other than in this process.
#[async_trait]
pub trait ToolPlace: Send + Sync {
    async fn call(
        &self,
        tool: &str,
        args: Value,
        cancel: &CancellationToken,
    ) -> Result<String, ToolError>;

    async fn describe(&self, tool: &str, args: &Value)
    -> Result<Option<ApprovalAction>, ToolError>;
}

#[async_trait]
impl ToolPlace for Remote {
    async fn call(
        &self,
        tool: &str,
        args: Value,
        cancel: &CancellationToken,
    ) -> Result<String, ToolError> {
        Remote::call(self, tool, args, cancel).await
    }

    async fn describe(
        &self,
        tool: &str,
        args: &Value,
    ) -> Result<Option<ApprovalAction>, ToolError> {
        Remote::describe(self, tool, args).await
    }
}

/// A coding tool whose calls run at `place`; everything else is the tool's own.
pub struct Placed {
    inner: Arc<dyn ToolHandler>,
    name: String,
    place: Arc<dyn ToolPlace>,
}

impl Placed {
    pub fn new(inner: Arc<dyn ToolHandler>, place: Arc<dyn ToolPlace>) -> Self {
        let name = inner.spec().name;
        Self { inner, name, place }
    }
}

/// The coding tools (`crate::tools::coding_tools`), each running at `place`.
pub fn placed_tools(place: Arc<dyn ToolPlace>) -> Vec<Arc<dyn ToolHandler>> {
    crate::tools::coding_tools()
        .into_iter()
        .map(|t| Arc::new(Placed::new(t, place.clone())) as Arc<dyn ToolHandler>)
        .collect()
}

#[async_trait]
impl ToolHandler for Placed {
    fn spec(&self) -> ToolSpec {
        self.inner.spec()
    }

    fn effect(&self) -> ToolEffect {
        self.inner.effect()
    }

    fn kind(&self) -> ToolKind {
        self.inner.kind()
    }

    fn facts(&self, args: &Value) -> ToolFacts {
        self.inner.facts(args)
    }

    fn same_as(&self) -> &'static [&'static str] {
        self.inner.same_as()
    }

    fn comes_with(&self) -> Option<&'static str> {
        self.inner.comes_with()
    }

    fn preferred_by(&self, model: &str) -> bool {
        self.inner.preferred_by(model)
    }

    // `writes_only` stays `None`: there is no local worktree to fill behind the call.

    async fn describe(
        &self,
        _ctx: &ToolContext,
        args: &Value,
    ) -> Result<Option<ApprovalAction>, ToolError> {
        self.place.describe(&self.name, args).await
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<String, ToolError> {
        self.place.call(&self.name, args, &ctx.cancel).await
    }
}
