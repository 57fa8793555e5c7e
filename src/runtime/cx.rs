//! One agent's context: the session it belongs to, its id, the token that stops what it is
//! doing, and its own layer stack, built when it starts the way tower makes a service per
//! inner service (each policy gives the agent a layer of its own, or none). Every loop of
//! the runtime takes `&AgentCx`, and every layer is handed it.
//!
//! The points of an agent's life where layers are asked, in the order they come (a step
//! only one policy cares about is that policy's own call, not a point):
//! - `before_task`: a message starts a task (a worker's first or a follow-up, the user's
//!   message to the persona): a layer may add to it, or withhold the user's.
//! - `turn_start`: a turn begins (per-turn state starts afresh).
//! - `before_model_call`: go, hold (pass the gates again), or stop the turn.
//! - `shape_request`: the request is built; a layer may shorten it or take tools away.
//! - `before_tool`: a call was checked and described, before the user is asked: go, or
//!   block it with a reason the model gets as its result, or change its arguments.
//! - `after_tool`: the call ran.
//! - `review`: a result the model is about to read: pass, a note, or a stop of the turn.
//! - `turn_end`: the turn ended; a layer may ask the agent to go on with a message.
//! - `settle`: a worker's turns for one message are over (not cancelled).
//!
//! One rule combines their answers: layers are asked in order until one answers something
//! other than "go on" ([`Decision`]); that answer is what the loop hears, and the layers
//! after it are not asked. Points without an answer are heard by every layer.

use super::points::{
    Admit, AfterTurn, Decision, Gate, Reviewed, Shape, ToolDone, ToolGate, ToolUse,
};
use super::policies::loop_guard::guard::Verdict;
use super::request::RequestSetup;
use super::session::Session;
use super::team::Team;
use crate::protocol::{AgentId, TurnEnd};
use crate::tools::ToolContext;
use crate::workspace::Workspace;
use async_trait::async_trait;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// One policy's part in an agent's life. Made per agent by its [`Policy`], so what it keeps
/// of that agent is plain fields.
#[async_trait]
pub trait Layer: Send + Sync {
    /// `from_user`: the user's message to the persona (a layer may withhold it).
    async fn before_task(&self, _cx: &AgentCx, _text: &mut String, _from_user: bool) -> Admit {
        Admit::Go
    }

    fn turn_start(&self, _cx: &AgentCx) {}

    async fn before_model_call(&self, _cx: &AgentCx) -> Gate {
        Gate::Go
    }

    async fn shape_request(&self, _cx: &AgentCx, _req: &mut RequestSetup) -> Shape {
        Shape::Kept
    }

    async fn before_tool(&self, _cx: &AgentCx, _tool: &ToolUse<'_>) -> ToolGate {
        ToolGate::Go
    }

    async fn after_tool(&self, _cx: &AgentCx, _tool: &ToolUse<'_>, _done: &ToolDone<'_>) {}

    fn review(&self, _cx: &AgentCx, _call: &Reviewed<'_>) -> Verdict {
        Verdict::Pass
    }

    async fn turn_end(&self, _cx: &AgentCx, _end: TurnEnd, _final_text: &str) -> AfterTurn {
        AfterTurn::Rest
    }

    async fn settle(&self, _cx: &AgentCx, _end: TurnEnd) {}
}

/// Who is starting, as a policy decides whether it gives the agent a layer.
pub struct Starting {
    /// `None`: the persona.
    pub parent: Option<AgentId>,
    /// Whether the parent is the persona.
    pub parent_is_root: bool,
}

impl Starting {
    pub fn is_worker(&self) -> bool {
        self.parent.is_some()
    }
}

/// A policy of the session: makes each starting agent's layer (or none).
pub trait Policy: Send + Sync {
    fn layer_for(&self, agent: &Starting) -> Option<Box<dyn Layer>>;
}

/// The session's policies in the order their layers run (see `policies::in_order`).
pub struct Policies(Vec<Box<dyn Policy>>);

impl Policies {
    pub fn new(list: Vec<Box<dyn Policy>>) -> Self {
        Self(list)
    }

    fn layers_for(&self, agent: &Starting) -> Layers {
        Layers(self.0.iter().filter_map(|p| p.layer_for(agent)).collect())
    }
}

/// An agent's layers, in the policies' order.
#[derive(Default)]
pub struct Layers(Vec<Box<dyn Layer>>);

/// One agent's context. Cheap to clone: a turn runs on a clone carrying the turn's token.
#[derive(Clone)]
pub struct AgentCx {
    session: Arc<Session>,
    policies: Arc<Policies>,
    id: AgentId,
    cancel: CancellationToken,
    layers: Arc<Layers>,
}

impl AgentCx {
    /// The context of an agent the team already knows, with its layers made now.
    pub fn new(
        session: Arc<Session>,
        policies: Arc<Policies>,
        id: AgentId,
        cancel: CancellationToken,
    ) -> Self {
        let parent = session.team.parent(id);
        let starting = Starting {
            parent,
            parent_is_root: parent == Some(session.team.root()),
        };
        let layers = Arc::new(policies.layers_for(&starting));
        Self {
            session,
            policies,
            id,
            cancel,
            layers,
        }
    }

    /// The same agent, its work stopped by `cancel` (a turn's token).
    pub fn with_cancel(&self, cancel: CancellationToken) -> Self {
        Self {
            cancel,
            ..self.clone()
        }
    }

    /// The policies its workers' layers are made by.
    pub fn policies(&self) -> &Arc<Policies> {
        &self.policies
    }

    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    pub fn id(&self) -> AgentId {
        self.id
    }

    pub fn cancel(&self) -> &CancellationToken {
        &self.cancel
    }

    pub fn team(&self) -> &Team {
        &self.session.team
    }

    /// Its role now (a handoff changes the persona's).
    pub fn role(&self) -> String {
        self.session.team.role(self.id).unwrap_or_default()
    }

    pub fn is_worker(&self) -> bool {
        self.id != self.session.team.root()
    }

    /// Where its tools work now: its worktree (or its supervisor's), else the workspace.
    pub fn root(&self) -> Arc<Workspace> {
        self.session.workspace_for(self.id)
    }

    /// What a coding tool it calls may use.
    pub fn tool_context(&self) -> ToolContext {
        self.session
            .tool_context(self.id, &self.role(), &self.cancel)
    }

    pub async fn before_task(&self, text: &mut String, from_user: bool) -> Admit {
        for layer in self.layers.0.iter() {
            let said = layer.before_task(self, text, from_user).await;
            if !said.goes_on() {
                return said;
            }
        }
        Admit::Go
    }

    pub fn turn_start(&self) {
        for layer in self.layers.0.iter() {
            layer.turn_start(self);
        }
    }

    pub async fn before_model_call(&self) -> Gate {
        for layer in self.layers.0.iter() {
            let said = layer.before_model_call(self).await;
            if !said.goes_on() {
                return said;
            }
        }
        Gate::Go
    }

    /// Later layers see the request as the earlier ones left it.
    pub async fn shape_request(&self, req: &mut RequestSetup) -> Shape {
        for layer in self.layers.0.iter() {
            let said = layer.shape_request(self, req).await;
            if !said.goes_on() {
                return said;
            }
        }
        Shape::Kept
    }

    /// Asks the layers from the `from`th on. The first approval said stands; a layer that
    /// amends the call ends the walk, with where to go on once the caller checked the
    /// changed call.
    pub async fn before_tool(&self, tool: &ToolUse<'_>, from: usize) -> (ToolGate, usize) {
        let mut approval = None;
        for (i, layer) in self.layers.0.iter().enumerate().skip(from) {
            match layer.before_tool(self, tool).await {
                ToolGate::Go => {}
                ToolGate::Approval(a) => approval = approval.or(Some(a)),
                ToolGate::Block(why) => return (ToolGate::Block(why), i + 1),
                ToolGate::Amend(args, a) => return (ToolGate::Amend(args, approval.or(a)), i + 1),
            }
        }
        let gate = approval.map_or(ToolGate::Go, ToolGate::Approval);
        (gate, self.layers.0.len())
    }

    pub async fn after_tool(&self, tool: &ToolUse<'_>, done: &ToolDone<'_>) {
        for layer in self.layers.0.iter() {
            layer.after_tool(self, tool, done).await;
        }
    }

    pub fn review(&self, call: &Reviewed<'_>) -> Verdict {
        for layer in self.layers.0.iter() {
            let said = layer.review(self, call);
            if !said.goes_on() {
                return said;
            }
        }
        Verdict::Pass
    }

    /// With `may_continue` false (the turns in a row the layers may add are spent) a layer's
    /// `Continue` is passed over, and the layers after it still decide: a `stop` hook that
    /// kept the turn going must not keep the goal's check from running.
    pub async fn turn_end(&self, end: TurnEnd, final_text: &str, may_continue: bool) -> AfterTurn {
        for layer in self.layers.0.iter() {
            let said = layer.turn_end(self, end, final_text).await;
            if !may_continue && matches!(said, AfterTurn::Continue(_)) {
                continue;
            }
            if !said.goes_on() {
                return said;
            }
        }
        AfterTurn::Rest
    }

    pub async fn settle(&self, end: TurnEnd) {
        for layer in self.layers.0.iter() {
            layer.settle(self, end).await;
        }
    }
}
