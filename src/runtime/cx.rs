//! One agent's context: the session it belongs to, its id, the token that stops what it is
//! doing, and its own layer stack, built when it starts the way tower makes a service per
//! inner service (each policy gives the agent a layer of its own, or none). Every loop of
//! the runtime takes `&AgentCx`, and every layer is handed it.
//!
//! The points of an agent's life where layers come in, in the order they come:
//! - `before_task`: a message starts a task (a worker's first or a follow-up, the user's
//!   message to the persona): a layer may add to it, or withhold the user's.
//! - `model_call`: one model call (the agent's next step, or a summary of its conversation)
//!   passes down the layers to the core, which sends it.
//! - `tool_call`: one tool call passes down the layers to the core, which runs it.
//! - `review`: a result the model is about to read: pass, a note, or a stop of the turn.
//! - `turn_end`: the turn ended; a layer may ask the agent to go on with a message.
//! - `hear`: a turn starts, a worker's turns for one message are over, or the agent is
//!   gone ([`Moment`]).
//!
//! Two rules combine them. The calls nest, as tower's services do: a layer gets the call
//! and the rest of the stack (`next`), and may act before, after, around or instead of it;
//! what it does after the call runs once the layers below it are done, innermost first.
//! The other points are asked in order until one answer decides ([`Decision`]); that
//! answer is what the loop hears, and the layers after it are not asked (a point without
//! an answer, `hear`, is heard by every layer).

use super::agent_tools::Shared;
use super::points::{Admit, AfterTurn, Called, Decision, ModelCall, Moment, Reviewed, Verdict};
use super::session::Session;
use super::team::Team;
use super::tool_call::{ToolOut, ToolReq};
use super::toolbox::Invocation;
use crate::protocol::{AgentId, Op, TurnEnd};
use crate::tools::ToolContext;
use crate::workspace::Workspace;
use async_trait::async_trait;
use std::any::Any;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// One policy's part in an agent's life. Made per agent by its [`Policy`], so what it keeps
/// of that agent is plain fields (and what it keeps from before a call to after it, a
/// local of its `model_call` or `tool_call`).
#[async_trait]
pub trait Layer: Send + Sync {
    /// `from_user`: the user's message to the persona (a layer may withhold it).
    async fn before_task(&self, _cx: &AgentCx, _text: &mut String, _from_user: bool) -> Admit {
        Admit::Go
    }

    async fn model_call(&self, cx: &AgentCx, call: &mut ModelCall, next: ModelNext<'_>) -> Called {
        next.run(cx, call).await
    }

    async fn tool_call(&self, cx: &AgentCx, req: &mut ToolReq<'_>, next: ToolNext<'_>) -> ToolOut {
        next.run(cx, req).await
    }

    fn review(&self, _cx: &AgentCx, _call: &Reviewed<'_>) -> Verdict {
        Verdict::Pass
    }

    async fn turn_end(&self, _cx: &AgentCx, _end: TurnEnd, _final_text: &str) -> AfterTurn {
        AfterTurn::Rest
    }

    async fn hear(&self, _cx: &AgentCx, _moment: Moment) {}
}

/// What sends a model call once every layer passed it on (`model_call.rs`).
#[async_trait]
pub trait ModelCore: Send + Sync {
    async fn send(&self, cx: &AgentCx, call: &mut ModelCall) -> Called;
}

/// What runs a tool call once every layer passed it on (`calls.rs`).
#[async_trait]
pub trait ToolCore: Send + Sync {
    async fn run(&self, cx: &AgentCx, req: &mut ToolReq<'_>) -> ToolOut;
}

/// The rest of the stack below a layer, for a model call.
#[derive(Clone, Copy)]
pub struct ModelNext<'a> {
    layers: &'a [Box<dyn Layer>],
    core: &'a dyn ModelCore,
}

impl<'a> ModelNext<'a> {
    /// The core alone, below every layer (a test of one layer's own step).
    #[cfg(test)]
    pub fn bare(core: &'a dyn ModelCore) -> Self {
        Self { layers: &[], core }
    }

    /// Passes `call` on; a layer may call it more than once (a retry, a summary of its own).
    pub async fn run(&self, cx: &AgentCx, call: &mut ModelCall) -> Called {
        match self.layers.split_first() {
            Some((layer, rest)) => {
                let next = ModelNext {
                    layers: rest,
                    core: self.core,
                };
                layer.model_call(cx, call, next).await
            }
            None => self.core.send(cx, call).await,
        }
    }
}

/// The rest of the stack below a layer, for a tool call.
#[derive(Clone, Copy)]
pub struct ToolNext<'a> {
    layers: &'a [Box<dyn Layer>],
    core: &'a dyn ToolCore,
}

impl ToolNext<'_> {
    pub async fn run(&self, cx: &AgentCx, req: &mut ToolReq<'_>) -> ToolOut {
        match self.layers.split_first() {
            Some((layer, rest)) => {
                let next = ToolNext {
                    layers: rest,
                    core: self.core,
                };
                layer.tool_call(cx, req, next).await
            }
            None => self.core.run(cx, req).await,
        }
    }
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

/// A policy of the session: makes each starting agent's layer (or none), and serves the
/// front end's ops it owns. Its state (a gate, a store, a service) is its own: the session
/// does not carry it, and what the rest of the runtime needs of it, it asks the policy
/// for ([`Policies::get`]).
pub trait Policy: Any + Send + Sync {
    fn layer_for(&self, agent: &Starting) -> Option<Box<dyn Layer>>;

    /// Every op the ops loop does not serve itself is heard by every policy, in order;
    /// the one that owns it serves it. `Err`: why it refused (the policy's own error),
    /// told the user as an error on the persona.
    fn on_op(&self, _session: &Arc<Session>, _op: &Op) -> Result<(), OpRefused> {
        Ok(())
    }
}

/// Why a policy refused an op: its own error type, whose text the user reads.
pub type OpRefused = Box<dyn std::error::Error + Send + Sync>;

/// The session's policies in the order their layers run (see `policies::in_order`).
pub struct Policies(Vec<Box<dyn Policy>>);

impl Policies {
    pub fn new(list: Vec<Box<dyn Policy>>) -> Self {
        Self(list)
    }

    /// The policy of type `P`, for what the loops and the ops need of its state; `None`
    /// where the session (or a test) runs without it.
    pub fn get<P: Policy>(&self) -> Option<&P> {
        self.0
            .iter()
            .find_map(|p| (p.as_ref() as &dyn Any).downcast_ref::<P>())
    }

    /// Every policy hears `op`; the errors of those that refused it.
    pub fn on_op(&self, session: &Arc<Session>, op: &Op) -> Vec<OpRefused> {
        self.0
            .iter()
            .filter_map(|p| p.on_op(session, op).err())
            .collect()
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

    /// How the agent's tools are called by the core: who calls, on what team.
    pub fn invocation(&self) -> Invocation<'_> {
        let session = &self.session;
        Invocation {
            agent: self.id,
            team: self.team(),
            shared: Shared {
                config: &session.config,
                roles: &session.roles,
                tasks: &session.tasks,
                questions: &session.questions,
                batches: &session.batches,
                plans: &session.plans,
            },
            host: self,
            cancel: &self.cancel,
        }
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

    /// Passes `call` down the agent's layers to `core`.
    pub async fn model_call(&self, call: &mut ModelCall, core: &dyn ModelCore) -> Called {
        let stack = ModelNext {
            layers: &self.layers.0,
            core,
        };
        stack.run(self, call).await
    }

    /// Passes `req` down the agent's layers to `core`.
    pub async fn tool_call(&self, req: &mut ToolReq<'_>, core: &dyn ToolCore) -> ToolOut {
        let stack = ToolNext {
            layers: &self.layers.0,
            core,
        };
        stack.run(self, req).await
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
    /// `Continue` does not decide, and the layers after it still do: a `stop` hook that
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

    pub async fn hear(&self, moment: Moment) {
        for layer in self.layers.0.iter() {
            layer.hear(self, moment).await;
        }
    }
}
