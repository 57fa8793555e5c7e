//! The tools that make a session a team: spawning workers, talking to them, collecting
//! their results, and handing the session to another persona. Each is a handler like the
//! coding tools, registered in the same [`super::toolbox::ToolBox`]; what the session shares
//! comes with each call ([`Shared`]), and what they cannot reach from here (the loop that
//! runs them, the policies' steps) through [`Host`], so this module does not depend on the
//! agent loop that runs them.

mod ad_hoc;
mod ask_user;
mod claim_task;
mod despawn;
mod get_agents;
mod get_tasks;
mod handoff;
mod message_agent;
mod message_supervisor;
mod plan_tasks;
pub mod return_results;
mod review_plan;
mod spawn;
mod spawn_batch;
mod speak;
mod submit_plan;
mod update_task;
mod wait;
pub(super) mod worker_model;

pub use claim_task::CLAIM_TASK;
pub use handoff::Handoff;
pub use message_agent::MESSAGE_AGENT;
pub use review_plan::REVIEW_PLAN;
pub use spawn::{SPAWN_AGENT, SpawnAgent};
pub use spawn_batch::SPAWN_BATCH;
pub use speak::SPEAK_TO_AGENT;
pub use submit_plan::SUBMIT_PLAN;

use super::approval::{ApprovalRequest, Denied};
use super::quote::draft::{Draft, FirstRequest};
use super::team::{NewAgent, Team};
use crate::config::Config;
use crate::model::ToolSpec;
use crate::protocol::{AgentId, AgentResult, Verdict};
use crate::roles::{Audience, Role, RoleSet};
use crate::tools::{Reach, ToolError, ToolFacts, ToolKind};
use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Every agent tool, in the order the model sees them.
pub fn all() -> Vec<Arc<dyn AgentTool>> {
    vec![
        Arc::new(spawn::SpawnAgent),
        Arc::new(spawn_batch::SpawnBatch),
        Arc::new(wait::WaitForAgents),
        Arc::new(speak::SpeakToAgent),
        Arc::new(get_agents::GetAgents),
        Arc::new(despawn::DespawnAgent),
        Arc::new(return_results::ReturnResults),
        Arc::new(message_supervisor::MessageSupervisor),
        Arc::new(message_agent::MessageAgent),
        Arc::new(claim_task::ClaimTask),
        Arc::new(submit_plan::SubmitPlan),
        Arc::new(review_plan::ReviewPlan),
        Arc::new(handoff::HandoffTo),
        Arc::new(plan_tasks::PlanTasks),
        Arc::new(update_task::UpdateTask),
        Arc::new(get_tasks::GetTasks),
        Arc::new(ask_user::AskUser),
    ]
}

/// What the session shares with every agent-tool call, as it is.
#[derive(Clone, Copy)]
pub struct Shared<'a> {
    pub config: &'a Config,
    pub roles: &'a RoleSet,
    /// The session's task board.
    pub tasks: &'a super::tasks::TaskBoard,
    /// Questions put to the user (`ask_user`).
    pub questions: &'a super::questions::Questions,
    /// Each batch's rows as the log has them (`runtime/batch`).
    pub batches: &'a std::sync::Mutex<crate::protocol::BatchLedger>,
    /// Workers' plans awaiting approval (`submit_plan`, `review_plan`).
    pub plans: &'a super::plan::Plans,
}

/// What the agent tools need of the runtime that they cannot reach from here, as the
/// calling agent sees it (the runtime implements it for the agent's context): the loop
/// that starts an agent, the tools an agent may get, and the policies' steps a tool takes
/// part in (the approval ask, the user's hooks, a worker's worktree, a result's check).
#[async_trait]
pub trait Host: Send + Sync {
    /// The tools an agent of `role` running `model` gets, never more than `ceiling` (its
    /// parent's).
    fn tools_for(
        &self,
        role: &Role,
        is_worker: bool,
        ceiling: Option<&[String]>,
        model: &str,
    ) -> Vec<String>;
    /// Passes an action through the approval gate (the caller waits while the user is asked).
    async fn approve(&self, req: ApprovalRequest<'_>) -> Result<(), Denied>;
    /// The user is waited on (`kind`: `permission_prompt`, `elicitation_dialog`): the
    /// user's `notification` hooks run.
    async fn notify(&self, kind: &'static str, message: &str);
    /// The base of a worker of `role` the caller spawns now: its view of the workspace,
    /// which the worker reads until it writes and merges from
    /// (`policies/isolation/base.rs`).
    async fn base_for_spawn(
        &self,
        role: &str,
        mode: Option<crate::config::IsolationMode>,
    ) -> Option<std::sync::Arc<crate::isolation::Base>>;
    /// A worker about to start: `spawn_agent`'s `isolation` for it, and the base it starts
    /// from.
    fn isolate(
        &self,
        agent: AgentId,
        mode: Option<crate::config::IsolationMode>,
        base: Option<std::sync::Arc<crate::isolation::Base>>,
    );
    /// Registers a new agent and starts its task.
    fn start_agent(&self, new: NewAgent) -> AgentId;
    /// What a coding tool the caller calls may use: its root (worktree or workspace) and
    /// the tools' settings.
    fn tool_context(&self) -> crate::tools::ToolContext;
    /// Checks the caller's result against the workspace (`policies/verification`).
    async fn check_result(&self, result: &AgentResult) -> Checked;
    /// Why the user's `task_created` hooks refuse a plan, if one does.
    async fn refuses_plan(&self, _tasks: &[super::board::PlannedTask]) -> Option<String> {
        None
    }
    /// The session's workers placed in environments (`policies/placement`); `None`
    /// where the session runs without placement.
    fn placements(
        &self,
    ) -> Option<std::sync::Arc<super::policies::placement::registry::Placements>> {
        None
    }
    /// A worker's first request as the session will build it, sized, for its quote
    /// (`runtime/quote`); by default only its first message.
    fn first_request(&self, draft: &Draft<'_>) -> FirstRequest {
        FirstRequest::message_only(draft.first_message)
    }
}

/// What became of a returned result, as `policies/verification` checked it.
pub enum Checked {
    /// Not checked (verification off, an honest failure, or no task on record).
    Unchecked,
    /// Passed, or out of corrections: deliver with this verdict attached.
    Deliver(Verdict),
    /// Not passed: the worker gets this correction and the result waits.
    Correct { verdict: Verdict, message: String },
    /// A `task_completed` hook keeps its board task open: the worker gets this (the
    /// hook's reason) and the result waits (`policies/hooks/team.rs`).
    Kept(String),
}

/// One agent-tool call: who calls, and what it may act on.
pub struct Call<'a> {
    pub caller: AgentId,
    pub team: &'a Team,
    pub shared: Shared<'a>,
    pub host: &'a dyn Host,
    pub cancel: &'a CancellationToken,
}

/// A call that worked: its output for the model, and what it means for the turn.
pub struct Done {
    pub output: String,
    pub effect: Effect,
}

impl Done {
    pub fn output(output: impl Into<String>) -> Self {
        Self {
            output: output.into(),
            effect: Effect::None,
        }
    }
}

/// What a call asks of the turn beyond its result.
pub enum Effect {
    None,
    /// `return_results` succeeded: the turn ends after this batch.
    Returned,
    /// The session is handed to another persona after this batch's results.
    Handoff(Handoff),
    /// The result did not pass its checks: this correction follows the batch's results
    /// and the turn goes on.
    Correct(String),
}

/// Why a call did not work.
#[derive(Debug)]
pub enum Failure {
    /// The model can fix it: goes back as the tool result.
    Fixable(String),
    /// The turn cannot go on (the calling agent is gone).
    Fatal(String),
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Self::Fixable(message)
    }
}

impl From<ToolError> for Failure {
    fn from(e: ToolError) -> Self {
        Self::Fixable(e.to_string())
    }
}

#[async_trait]
pub trait AgentTool: Send + Sync {
    fn spec(&self) -> ToolSpec;

    /// Which agents are offered it (the role's lists decide within that).
    fn audience(&self) -> Audience;

    /// Whether neighbouring calls of this tool in one response may run at once when nobody
    /// has to be asked (spawning a thousand workers should not take a thousand steps).
    fn concurrent(&self) -> bool {
        false
    }

    /// This call's facts: by default it acts on the team and reports nothing a front end
    /// or a layer reads.
    fn facts(&self, _args: &Value) -> ToolFacts {
        ToolFacts::new(ToolKind::Other, Reach::Team)
    }

    async fn call(&self, cx: &Call<'_>, args: Value) -> Result<Done, Failure>;
}

/// Parses arguments by the tool's own schema (the path the coding tools use too).
fn parse<T: DeserializeOwned>(spec: &ToolSpec, args: Value) -> Result<T, Failure> {
    crate::tools::parse_args(&spec.parameters, args).map_err(Failure::from)
}

/// The caller as the team knows it; a caller that is gone ends the turn.
fn card(cx: &Call<'_>) -> Result<super::team::AgentCard, Failure> {
    cx.team
        .card(cx.caller)
        .ok_or_else(|| Failure::Fatal("agent no longer exists".to_string()))
}

/// A worker id (full or its 8-digit short form) that must belong to the caller.
fn resolve_child(team: &Team, caller: AgentId, raw: &str) -> Result<AgentId, Failure> {
    let children = team.children(caller);
    let raw = raw.trim();
    let found = AgentId::parse(raw)
        .filter(|id| children.contains(id))
        .or_else(|| children.iter().copied().find(|c| c.short() == raw));
    found.ok_or_else(|| {
        Failure::Fixable(format!(
            "`{raw}` is not one of your workers (yours: {}); call get_agents to list them",
            if children.is_empty() {
                "none".to_string()
            } else {
                children
                    .iter()
                    .map(|c| c.short())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ))
    })
}

/// Rejects empty strings the schema cannot (it only says "string").
fn non_empty(name: &str, value: &str) -> Result<(), Failure> {
    if value.trim().is_empty() {
        return Err(Failure::Fixable(format!("`{name}` must not be empty")));
    }
    Ok(())
}
