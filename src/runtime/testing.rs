//! A session for unit tests of the runtime: a real team, tools, gate and the policies' state
//! on a temp workspace, a model fake at the trait (tests that speak HTTP live in `tests/`),
//! no agent tasks unless a test starts them. Contexts for its agents are made with the
//! policies a test names, so one policy can be tested alone.

use super::approval::ApprovalGate;
use super::cx::{AgentCx, Layer, Policies, Policy, Starting};
use super::events::EventSink;
use super::policies::compaction::CompactionPolicy;
use super::policies::compaction::compactor::Compactor;
use super::policies::hooks::service::Hooks;
use super::policies::isolation::IsolationPolicy;
use super::policies::isolation::confinement::Confinement;
use super::policies::isolation::worker::WorkerIsolation;
use super::policies::verification::checks::Checks;
use super::policies::verification::layer::VerificationPolicy;
use super::session::Session;
use super::team::{AgentStats, NewAgent, Team};
use super::toolbox::ToolBox;
use crate::config::{Config, IsolationMode};
use crate::model::{ChatRequest, ChatResponse, ModelClient, ModelError, ModelProgress};
use crate::protocol::{AgentId, AgentStatus, ApprovalPolicy, Budget, Event, EventKind};
use crate::workspace::Workspace;
use async_trait::async_trait;
use std::path::Path;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// A model that must not be called: the tests using it never reach one.
pub struct NoModel;

#[async_trait]
impl ModelClient for NoModel {
    async fn stream_chat(
        &self,
        _req: &ChatRequest,
        _progress: &(dyn Fn(ModelProgress) + Send + Sync),
        _cancel: &CancellationToken,
    ) -> Result<ChatResponse, ModelError> {
        Err(ModelError::BadResponse("no model in this test".into()))
    }
}

/// A model fake at the trait that answers with its script, one reply a call (then a
/// plain "done"), and keeps every request it was sent.
pub struct Script {
    replies: std::sync::Mutex<std::collections::VecDeque<Result<ChatResponse, ModelError>>>,
    pub requests: std::sync::Mutex<Vec<ChatRequest>>,
}

impl Script {
    pub fn new(replies: Vec<Result<ChatResponse, ModelError>>) -> Arc<Self> {
        Arc::new(Self {
            replies: std::sync::Mutex::new(replies.into()),
            requests: std::sync::Mutex::new(Vec::new()),
        })
    }

    pub fn sent(&self) -> usize {
        crate::sync::lock(&self.requests).len()
    }
}

#[async_trait]
impl ModelClient for Script {
    async fn stream_chat(
        &self,
        req: &ChatRequest,
        _progress: &(dyn Fn(ModelProgress) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<ChatResponse, ModelError> {
        crate::sync::lock(&self.requests).push(req.clone());
        if cancel.is_cancelled() {
            return Err(ModelError::Cancelled);
        }
        let next = crate::sync::lock(&self.replies).pop_front();
        next.unwrap_or_else(|| Ok(said("done")))
    }
}

/// A reply in words.
pub fn said(text: &str) -> ChatResponse {
    ChatResponse {
        text: text.into(),
        ..Default::default()
    }
}

/// A reply that calls `name` with `arguments`.
pub fn calls(name: &str, arguments: &str) -> ChatResponse {
    ChatResponse {
        tool_calls: vec![crate::protocol::ToolCall {
            id: format!("call-{name}-{}", AgentId::new().short()),
            name: name.into(),
            arguments: arguments.into(),
        }],
        ..Default::default()
    }
}

/// What a test session is made of; anything not set is the default.
pub struct Parts {
    pub config: Config,
    pub model: Arc<dyn ModelClient>,
    pub isolation: Option<WorkerIsolation>,
    pub checks: Option<Arc<Checks>>,
}

impl Default for Parts {
    fn default() -> Self {
        Self {
            config: Config::default(),
            model: Arc::new(NoModel),
            isolation: None,
            checks: None,
        }
    }
}

/// A test's session, its persona's id and the events it emits, and the policies' state a
/// test makes its policies from (a session's own policies get theirs in `start/build.rs`).
pub struct TestSession {
    pub session: Arc<Session>,
    pub root: AgentId,
    pub events: mpsc::UnboundedReceiver<Event>,
    pub hooks: Arc<Hooks>,
    pub compactor: Arc<Compactor>,
    pub checks: Arc<Checks>,
    pub isolation: Arc<WorkerIsolation>,
}

impl TestSession {
    /// A session on `dir` with the persona added.
    pub fn new(dir: &Path, parts: Parts) -> Self {
        let (tx, events) = mpsc::unbounded_channel();
        let root = AgentId::new();
        let team = Team::new(EventSink::new(None, 0, tx), root);
        // The built-in roles, so agents of `copilot` or `coder` get requests.
        let roles = crate::roles::load_roles_from(None, dir).unwrap_or_default();
        let workspace = Arc::new(Workspace::new(dir).expect("a test workspace"));
        let isolation = Arc::new(parts.isolation.unwrap_or_else(|| {
            WorkerIsolation::open(IsolationMode::Shared, &roles, dir, None, "test").0
        }));
        let config = Arc::new(parts.config);
        let support = crate::sandbox::Support::none("tests");
        let sandbox = Arc::new(crate::sandbox::Sandbox::new(&config.sandbox, None, support));
        let confinement = Arc::new(Confinement::new(sandbox.clone(), &roles, isolation.clone()));
        let gate = Arc::new(ApprovalGate::new(false));
        let slots = crate::model::limiter::Limiter::fixed(4);
        let hooks = Hooks::new(
            Vec::new(),
            crate::hooks::SessionFacts {
                session_id: "test".into(),
                transcript_path: None,
                permission_mode: "default",
            },
            dir.to_path_buf(),
            None,
            confinement.clone(),
            gate.clone(),
        );
        let compactor = Arc::new(Compactor {
            config: config.clone(),
            scales: Default::default(),
        });
        let checks = (parts.checks).unwrap_or_else(|| Arc::new(Checks::new(false, &roles)));
        let session = Session {
            windows: crate::context::ContextWindows::new(&config),
            instructions: None,
            agent_tasks: Default::default(),
            model_slots: slots,
            config,
            model: parts.model,
            tools: ToolBox::new(&coding(), Arc::new(crate::mcp::McpHub::empty())),
            workspace,
            gate,
            questions: super::questions::Questions::new(false),
            plans: Default::default(),
            team,
            tasks: Default::default(),
            places: confinement.clone(),
            sandbox,
            editor: None,
            prompts: None,
            roles,
            batches: Default::default(),
        };
        let persona = NewAgent {
            role: crate::roles::DEFAULT_ROLE.into(),
            ..agent(root, None, Budget::default())
        };
        let _ = session.team.add(persona);
        Self {
            session: Arc::new(session),
            root,
            events,
            hooks: Arc::new(hooks),
            compactor,
            checks,
            isolation,
        }
    }

    /// The isolation policy on this session's worktrees and checks (no checkpoints).
    pub fn isolation_policy(&self) -> IsolationPolicy {
        IsolationPolicy {
            isolation: self.isolation.clone(),
            checks: self.checks.clone(),
            checkpoints: None,
        }
    }

    /// The verification policy on this session's checks and worktrees.
    pub fn verification_policy(&self) -> VerificationPolicy {
        VerificationPolicy {
            checks: self.checks.clone(),
            isolation: self.isolation.clone(),
        }
    }

    /// The compaction policy on this session's compactor and hooks.
    pub fn compaction_policy(&self) -> CompactionPolicy {
        CompactionPolicy {
            compactor: self.compactor.clone(),
            hooks: self.hooks.clone(),
        }
    }

    /// Adds a worker of `parent` (running, role `r`).
    pub fn add(&self, parent: AgentId, budget: Budget) -> AgentId {
        let id = AgentId::new();
        let _ = self.session.team.add(agent(id, Some(parent), budget));
        id
    }

    /// Adds `new` to the team.
    pub fn add_with(&self, new: NewAgent) -> AgentId {
        let id = new.id;
        let _ = self.session.team.add(new);
        id
    }

    /// `agent`'s context with the layers of `policies` only.
    pub fn cx(&self, policies: Vec<Box<dyn Policy>>, agent: AgentId) -> AgentCx {
        self.cx_with(&Arc::new(Policies::new(policies)), agent)
    }

    /// `agent`'s context with the layers of `policies` (shared with other agents' contexts,
    /// as in a session).
    pub fn cx_with(&self, policies: &Arc<Policies>, agent: AgentId) -> AgentCx {
        AgentCx::new(
            self.session.clone(),
            policies.clone(),
            agent,
            CancellationToken::new(),
        )
    }

    /// The events emitted since the last look.
    pub fn kinds(&mut self) -> Vec<EventKind> {
        let mut out = Vec::new();
        while let Ok(ev) = self.events.try_recv() {
            out.push(ev.kind);
        }
        out
    }
}

/// The session's tool registry, with no MCP server.
pub fn toolbox() -> ToolBox {
    ToolBox::new(&coding(), Arc::new(crate::mcp::McpHub::empty()))
}

/// The coding tools a session gets.
fn coding() -> crate::tools::ToolRegistry {
    let mut tools = crate::tools::ToolRegistry::new();
    for tool in crate::tools::coding_tools() {
        tools.register(tool);
    }
    tools
}

pub fn agent(id: AgentId, parent: Option<AgentId>, budget: Budget) -> NewAgent {
    NewAgent {
        id,
        parent,
        role: "r".into(),
        model: "m".into(),
        depth: u32::from(parent.is_some()),
        task: "t".into(),
        policy: ApprovalPolicy::Auto,
        tools: vec![],
        history: Vec::new(),
        status: AgentStatus::Running,
        stats: AgentStats::default(),
        budget,
        result: None,
        first_message: None,
        announce: true,
        options: Default::default(),
        released: false,
    }
}

/// A policy from a closure: the layer it gives each starting agent.
pub struct FnPolicy<F>(pub F);

impl<F> Policy for FnPolicy<F>
where
    F: Fn(&Starting) -> Option<Box<dyn Layer>> + Send + Sync + 'static,
{
    fn layer_for(&self, agent: &Starting) -> Option<Box<dyn Layer>> {
        (self.0)(agent)
    }
}

/// A policy that gives every agent a layer made by `make`.
pub fn every<L: Layer + 'static>(make: impl Fn() -> L + Send + Sync + 'static) -> Box<dyn Policy> {
    Box::new(FnPolicy(move |_: &Starting| -> Option<Box<dyn Layer>> {
        Some(Box::new(make()))
    }))
}

/// A `run_command` call as layers see it, with `reach` and `action` as a test needs.
pub fn tool<'a>(
    reach: crate::tools::Reach,
    args: &'a serde_json::Value,
    action: Option<&'a crate::protocol::ApprovalAction>,
) -> super::points::ToolUse<'a> {
    super::points::ToolUse {
        call_id: "c1",
        name: "run_command",
        args,
        reach,
        reports: crate::tools::Reports::Nothing,
        writes: None,
        action,
    }
}

/// What a point of the old walk answered, read off the stack: tests of one layer ask the
/// stack as the loops do, with a core that sends nothing of the turn's own (a summary is
/// sent) and runs no tool, and read what came back.
#[derive(Debug, PartialEq, Eq)]
pub enum Gate {
    /// The call reached the core.
    Go,
    /// A layer held it: the request is built again and passes the layers again.
    Hold,
    Stop(String),
    Interrupted,
}

/// What became of a request the layers may shape.
#[derive(Debug, PartialEq, Eq)]
pub enum Shape {
    Kept,
    /// Its history was shortened by a model call of its own.
    Changed,
    Stop(String),
    Interrupted,
}

/// What the layers said of a tool call before it would run.
#[derive(Debug, PartialEq)]
pub enum ToolGate {
    Go,
    Block(String),
    Approval(super::approval::HookApproval),
    Amend(serde_json::Value, Option<super::approval::HookApproval>),
}

/// A core that lets a turn's model call through unsent (a summary is sent).
struct ModelProbe;

#[async_trait]
impl super::cx::ModelCore for ModelProbe {
    async fn send(
        &self,
        cx: &AgentCx,
        call: &mut super::points::ModelCall,
    ) -> super::points::Called {
        match call.purpose {
            super::points::Purpose::Summary => super::model_call::Core.send(cx, call).await,
            super::points::Purpose::Turn => super::points::Called::Answer(ChatResponse::default()),
        }
    }
}

/// A request of `model` with an empty history and room to spare.
pub fn roomy_request() -> super::request::RequestSetup {
    super::request::RequestSetup {
        request: ChatRequest {
            model: "m".into(),
            system_prompt: String::new(),
            history: Arc::new(Vec::new()),
            tools: Arc::from(Vec::new()),
        },
        max_iterations: 1,
        fixed_tokens: 0,
        window: 1_000_000,
    }
}

/// A tool call as a test describes it: its facts and action as given.
struct FakeHandler {
    reach: crate::tools::Reach,
    reports: crate::tools::Reports,
    writes: Option<Vec<String>>,
    action: Option<crate::protocol::ApprovalAction>,
}

#[async_trait]
impl super::toolbox::CallHandler for FakeHandler {
    fn reach(&self) -> crate::tools::Reach {
        self.reach
    }

    fn facts(&self, _args: &serde_json::Value) -> crate::tools::ToolFacts {
        let mut facts = crate::tools::ToolFacts::new(crate::tools::ToolKind::Other, self.reach);
        facts.reports = self.reports;
        facts
    }

    fn concurrent(&self) -> bool {
        false
    }

    fn writes_only(&self, _args: &serde_json::Value) -> Option<Vec<String>> {
        self.writes.clone()
    }

    async fn describe(
        &self,
        _call: &super::toolbox::Invocation<'_>,
        _args: &serde_json::Value,
    ) -> Result<Option<crate::protocol::ApprovalAction>, String> {
        Ok(self.action.clone())
    }

    async fn run(
        &self,
        _call: &super::toolbox::Invocation<'_>,
        _args: serde_json::Value,
    ) -> super::toolbox::Ran {
        super::toolbox::Ran::Error("a fake handler never runs".into())
    }
}

type Effect = Box<dyn FnOnce() + Send>;

/// A core that does `effect` as the call, and answers `output`.
struct ToolProbe {
    effect: std::sync::Mutex<Option<Effect>>,
    output: String,
    is_error: bool,
}

#[async_trait]
impl super::cx::ToolCore for ToolProbe {
    async fn run(
        &self,
        _cx: &AgentCx,
        req: &mut super::tool_call::ToolReq<'_>,
    ) -> super::tool_call::ToolOut {
        if let Some(effect) = crate::sync::lock(&self.effect).take() {
            effect();
        }
        let ran = match self.is_error {
            false => super::toolbox::Ran::Ok(self.output.clone(), super::agent_tools::Effect::None),
            true => super::toolbox::Ran::Error(self.output.clone()),
        };
        let mut out = super::tool_call::ToolOut::ran(ran);
        out.facts = Some(req.facts.clone());
        out
    }
}

/// Passes `tool` down `cx`'s layers to a core that does `effect` and answers `done`; what
/// the layers said before it, and what came back.
pub async fn call_tool(
    cx: &AgentCx,
    tool: &super::points::ToolUse<'_>,
    done: &super::points::ToolDone<'_>,
    effect: impl FnOnce() + Send + 'static,
) -> (ToolGate, super::tool_call::ToolOut) {
    let call = crate::protocol::ToolCall {
        id: tool.call_id.into(),
        name: tool.name.into(),
        arguments: tool.args.to_string(),
    };
    let handler = Arc::new(FakeHandler {
        reach: tool.reach,
        reports: tool.reports,
        writes: tool.writes.map(<[String]>::to_vec),
        action: tool.action.cloned(),
    });
    let policy = (String::from("r"), ApprovalPolicy::Auto);
    let mut req = super::tool_call::ToolReq::new(&call, policy, handler, tool.args.clone());
    let core = ToolProbe {
        effect: std::sync::Mutex::new(Some(Box::new(effect))),
        output: done.output.into(),
        is_error: done.is_error,
    };
    let out = cx.tool_call(&mut req, &core).await;
    let gate = match (out.reached, req.amended, req.hook_approval) {
        (super::tool_call::Reached::Ran, true, a) => ToolGate::Amend(req.args.clone(), a),
        (super::tool_call::Reached::Ran, false, Some(a)) => ToolGate::Approval(a),
        (super::tool_call::Reached::Ran, false, None) => ToolGate::Go,
        _ => ToolGate::Block(out.output.clone()),
    };
    (gate, out)
}

/// The points of an agent's life as tests of one layer ask them.
#[async_trait]
pub trait Points {
    async fn turn_start(&self);
    async fn settle(&self, end: crate::protocol::TurnEnd);
    async fn before_model_call(&self) -> Gate;
    async fn shape_request(&self, req: &mut super::request::RequestSetup) -> Shape;
    /// What the layers said of `tool` (it runs nothing; `from` is not used).
    async fn before_tool(
        &self,
        tool: &super::points::ToolUse<'_>,
        from: usize,
    ) -> (ToolGate, usize);
    /// `tool` passed down the layers, answered `done`.
    async fn after_tool(
        &self,
        tool: &super::points::ToolUse<'_>,
        done: &super::points::ToolDone<'_>,
    );
}

#[async_trait]
impl Points for AgentCx {
    async fn turn_start(&self) {
        self.hear(super::points::Moment::TurnStart).await;
    }

    async fn settle(&self, end: crate::protocol::TurnEnd) {
        self.hear(super::points::Moment::Settled(end)).await;
    }

    async fn before_model_call(&self) -> Gate {
        let mut call = super::points::ModelCall::new(roomy_request(), super::points::Purpose::Turn);
        match self.model_call(&mut call, &ModelProbe).await {
            super::points::Called::Answer(_) => Gate::Go,
            super::points::Called::Again => Gate::Hold,
            super::points::Called::Interrupted => Gate::Interrupted,
            super::points::Called::Stopped(why) | super::points::Called::Failed(why) => {
                Gate::Stop(why)
            }
            super::points::Called::Overflow { message, .. } => Gate::Stop(message),
        }
    }

    async fn shape_request(&self, req: &mut super::request::RequestSetup) -> Shape {
        let setup = std::mem::replace(req, roomy_request());
        let before = setup.request.history.clone();
        let mut call = super::points::ModelCall::new(setup, super::points::Purpose::Turn);
        let called = self.model_call(&mut call, &ModelProbe).await;
        *req = call.setup;
        match called {
            super::points::Called::Answer(_) if Arc::ptr_eq(&before, &req.request.history) => {
                Shape::Kept
            }
            super::points::Called::Answer(_) => Shape::Changed,
            super::points::Called::Interrupted => Shape::Interrupted,
            super::points::Called::Again => Shape::Stop("held".into()),
            super::points::Called::Stopped(why) | super::points::Called::Failed(why) => {
                Shape::Stop(why)
            }
            super::points::Called::Overflow { message, .. } => Shape::Stop(message),
        }
    }

    async fn before_tool(
        &self,
        tool: &super::points::ToolUse<'_>,
        _from: usize,
    ) -> (ToolGate, usize) {
        let done = super::points::ToolDone {
            output: "",
            is_error: false,
        };
        (call_tool(self, tool, &done, || {}).await.0, 0)
    }

    async fn after_tool(
        &self,
        tool: &super::points::ToolUse<'_>,
        done: &super::points::ToolDone<'_>,
    ) {
        call_tool(self, tool, done, || {}).await;
    }
}
