//! An agent's life as a pipeline of layers, the way tower wraps a service: each policy
//! (pause, budget, user hooks, …) is one file implementing [`Layer`], and the loops only
//! walk the list in the order `Layers::new` builds it. A new policy is one file and one
//! line there (see docs/adding-a-policy.md).
//!
//! The points of an agent's life, in the order they come:
//! - `before_prompt`: the user's message to the persona: a layer may add to it, or
//!   withhold it from the model.
//! - `before_task`: a message starts a task (a worker's first, or a follow-up); a layer
//!   may add a note to the message.
//! - `turn_start`: a turn begins (per-turn state starts afresh).
//! - `before_model_call`: before each model call of a turn: go, hold (pass the gates
//!   again), or stop the turn with a reason.
//! - `shape_request`: the request is built; a layer may shorten its history.
//! - `watch`: runs beside a model call or a tool call until it ends (`done`).
//! - `overflow`: the server said the request does not fit: a layer may make it fit
//!   (the same call is then sent again; a few times at most), or say why it cannot.
//! - `after_usage`: the call's usage has been counted on the agent.
//! - `prepare_tool`: a call's arguments were checked; before it is described for the
//!   user (a first call that may change files gets the worker's worktree here; any other
//!   call in a worktree still being filled waits here).
//! - `before_tool`: a call is about to run, before the user is asked: go, or block it
//!   with a reason the model gets as its result.
//! - `before_run`: the call was approved and runs next.
//! - `after_tool`: the call ran; its output is what the model will read.
//! - `review`: the result of a call that ran, before the model reads it: pass, a note to
//!   append, or a stop of the turn (the loop guard).
//! - `turn_end`: the turn ended; a layer may ask the agent to go on with a message, as if
//!   the user had sent it (the caller bounds how often in a row).
//! - `settle`: a worker's turns for one message are over (not cancelled): its outcome is
//!   settled before its supervisor hears of it.
//! - `result_returned`: a worker's result went up to its supervisor.
//! - `task_completed`: a task of the board is done.
//! - `gone`: a worker is gone for good (despawned, cancelled, released).
//! - `before_compact`: an agent's conversation is about to be compacted.
//! - `notification`: the user is waited on (an approval, an agent's question).
//! - `session_end`: the session ends.
//!
//! A layer sees a [`Scope`], not the engine: the team, the agent, its role and workspace.

pub(super) mod answer;
mod budget;
mod compaction;
mod hooks;
mod isolation;
mod loop_guard;
mod pause;
mod progress;
mod stall;
mod verification;

pub use answer::AnswerLayer;
pub use budget::BudgetLayer;
pub use compaction::CompactionLayer;
pub use hooks::HookLayer;
pub use isolation::IsolationLayer;
pub use loop_guard::{LoopGuardLayer, Reviewed};
pub use pause::PauseLayer;
pub use progress::ProgressLayer;
pub use stall::{Pulse, StallLayer};
pub use verification::VerificationLayer;

use super::approval::HookApproval;
use super::guard::Verdict;
use super::request::RequestSetup;
use super::team::Team;
use super::toolbox::Reach;
use crate::model::Overflow;
use crate::protocol::{AgentId, AgentResult, ApprovalAction, Task, TurnEnd};
use crate::tools::Reports;
use crate::workspace::Workspace;
use async_trait::async_trait;
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// What a layer may look at: one agent in its team.
pub struct Scope<'a> {
    pub team: &'a Team,
    pub agent: AgentId,
    pub role: &'a str,
    /// Where the agent's tools work: its worktree, or the workspace.
    pub workspace: &'a Workspace,
    pub cancel: &'a CancellationToken,
}

impl Scope<'_> {
    pub fn root(&self) -> &Path {
        self.workspace.root()
    }

    pub fn is_worker(&self) -> bool {
        self.agent != self.team.root()
    }
}

/// Before a model call.
#[derive(Debug, PartialEq, Eq)]
pub enum Gate {
    Go,
    /// Pass the gates again (the team was paused meanwhile).
    Hold,
    /// The turn ends with this reason.
    Stop(String),
    /// The turn was cancelled while held.
    Interrupted,
}

/// Before a tool call.
#[derive(Debug, PartialEq)]
pub enum ToolGate {
    Go,
    /// The call does not run; the model reads this as its result.
    Block(String),
    /// Go, with the approval as a user's hook said (`permissionDecision`).
    Approval(HookApproval),
    /// Go with these arguments instead (a hook's `updatedInput`, in squad's names), and the
    /// approval as the hook said, if it did. The caller checks them and asks the layers
    /// after this one about the changed call.
    Amend(Value, Option<HookApproval>),
}

/// A request after the layers shaped it.
#[derive(Debug, PartialEq, Eq)]
pub enum Shape {
    Kept,
    /// Its history was shortened by a model call of its own (whose usage is counted).
    Changed,
    /// The turn ends with this reason.
    Stop(String),
    Interrupted,
}

/// After the server refused a request as too long.
#[derive(Debug, PartialEq, Eq)]
pub enum Recovery {
    /// The request was made to fit: send it again.
    Retry,
    /// Why it could not be (empty: no layer tried).
    GiveUp(String),
    Interrupted,
}

/// What an agent is waiting on.
pub enum Waiting<'a> {
    ModelCall,
    Tool(&'a ToolUse<'a>),
}

/// At the end of a turn.
#[derive(Debug, PartialEq, Eq)]
pub enum AfterTurn {
    Rest,
    /// Go on with this as the user's next message.
    Continue(String),
}

/// One tool call as layers see it.
pub struct ToolUse<'a> {
    pub call_id: &'a str,
    pub name: &'a str,
    pub args: &'a Value,
    /// What its handler says this call reaches (from its arguments).
    pub reach: Reach,
    /// What its output reports (a test run's pass or fail…).
    pub reports: Reports,
    /// The paths it writes, when its handler can tell that is all it does.
    pub writes: Option<&'a [String]>,
    /// What the user approves (a file change names its path); `None` before the call is
    /// described, and for calls nobody approves.
    pub action: Option<&'a ApprovalAction>,
}

impl ToolUse<'_> {
    pub fn changes_files(&self) -> bool {
        self.reach == Reach::ChangesFiles
    }
}

/// A finished tool call.
pub struct ToolDone<'a> {
    pub output: &'a str,
    pub is_error: bool,
}

#[async_trait]
pub trait Layer: Send + Sync {
    fn turn_start(&self, _cx: &Scope<'_>) {}

    fn review(&self, _cx: &Scope<'_>, _call: &Reviewed<'_>) -> Verdict {
        Verdict::Pass
    }

    /// The user's message to the persona, before its task begins: a layer may add to it,
    /// or withhold it (`Some(why)`: it never reaches the model).
    async fn before_prompt(&self, _cx: &Scope<'_>, _text: &mut String) -> Option<String> {
        None
    }

    async fn before_task(&self, _cx: &Scope<'_>, _text: &mut String) {}

    async fn before_model_call(&self, _cx: &Scope<'_>) -> Gate {
        Gate::Go
    }

    async fn shape_request(&self, _cx: &Scope<'_>, _req: &mut RequestSetup) -> Shape {
        Shape::Kept
    }

    /// Returns when `done` is cancelled (at once, for a layer that does not watch).
    async fn watch(
        &self,
        _cx: &Scope<'_>,
        _what: &Waiting<'_>,
        _pulse: &Pulse,
        _done: &CancellationToken,
    ) {
    }

    /// `said`: what the server said of the window and of the request's size.
    async fn overflow(
        &self,
        _cx: &Scope<'_>,
        _req: &mut RequestSetup,
        _said: &Overflow,
    ) -> Recovery {
        Recovery::GiveUp(String::new())
    }

    fn after_usage(&self, _cx: &Scope<'_>) {}

    async fn prepare_tool(&self, _cx: &Scope<'_>, _tool: &ToolUse<'_>) {}

    async fn before_tool(&self, _cx: &Scope<'_>, _tool: &ToolUse<'_>) -> ToolGate {
        ToolGate::Go
    }

    async fn before_run(&self, _cx: &Scope<'_>, _tool: &ToolUse<'_>) {}

    async fn after_tool(&self, _cx: &Scope<'_>, _tool: &ToolUse<'_>, _done: &ToolDone<'_>) {}

    async fn result_returned(&self, _cx: &Scope<'_>, _result: &AgentResult) {}

    async fn task_completed(&self, _cx: &Scope<'_>, _task: &Task) {}

    async fn turn_end(&self, _cx: &Scope<'_>, _end: TurnEnd, _final_text: &str) -> AfterTurn {
        AfterTurn::Rest
    }

    async fn settle(&self, _cx: &Scope<'_>, _end: TurnEnd) {}

    async fn gone(&self, _cx: &Scope<'_>) {}

    /// The agent's conversation is about to be compacted (`manual`: the user's `/compact`).
    async fn before_compact(&self, _cx: &Scope<'_>, _manual: bool) {}

    /// The user is waited on: `kind` is `permission_prompt` (an approval) or
    /// `elicitation_dialog` (an agent's question); `message` says what for.
    async fn notification(&self, _cx: &Scope<'_>, _kind: &'static str, _message: &str) {}

    /// The session ends (the persona's scope).
    async fn session_end(&self, _cx: &Scope<'_>) {}
}

/// What the session's layers share with the rest of the session, made once at start.
pub struct SessionParts {
    pub pause: Arc<super::pause::PauseGate>,
    pub session: super::budget::SessionLimits,
    pub compactor: Arc<super::compaction::Compactor>,
    pub guards: crate::config::GuardsConfig,
    /// `[limits] max_turn_calls`.
    pub max_turn_calls: u32,
    pub hooks: HookLayer,
    pub isolation: Arc<super::isolation::WorkerIsolation>,
    pub checks: Arc<super::checks::Checks>,
    pub board: Arc<super::tasks::TaskBoard>,
    /// Whether a model gets squad's help for weak models.
    pub assist: answer::AssistFor,
}

/// The session's layers, in the order they run at every point: the pause gate first (a
/// paused team holds before anything is decided), then the budgets, the team's progress,
/// the persona's answer once it repeats itself with all done, compaction (a request
/// is made to fit once it may be sent), stall marks, the loop guard, the user's hooks (a
/// hook sees only calls squad itself would let through), then isolation (the worktree and
/// the leases, once no hook blocked the call; the merge once a worker's turns are over)
/// and verification last (it measures the call in the root isolation gave it, and begins
/// a task on the worktree as isolation left it).
pub fn session_layers(p: SessionParts) -> Layers {
    // Told before a compaction, which the compaction layer starts.
    let hooks: Arc<dyn Layer> = Arc::new(p.hooks);
    Layers::new(vec![
        Arc::new(PauseLayer::new(p.pause)),
        Arc::new(BudgetLayer::new(p.session)),
        Arc::new(ProgressLayer::new(p.max_turn_calls)),
        Arc::new(AnswerLayer::new(p.board, p.assist)),
        Arc::new(CompactionLayer::new(p.compactor, hooks.clone())),
        Arc::new(StallLayer::new(p.guards.stall_after())),
        Arc::new(LoopGuardLayer::new(p.guards)),
        hooks,
        Arc::new(IsolationLayer::new(p.isolation)),
        Arc::new(VerificationLayer::new(p.checks)),
    ])
}

/// The session's layers, in the order they run at every point.
#[derive(Clone, Default)]
pub struct Layers {
    list: Arc<[Arc<dyn Layer>]>,
}

impl Layers {
    pub fn new(list: Vec<Arc<dyn Layer>>) -> Self {
        Self { list: list.into() }
    }

    pub fn turn_start(&self, cx: &Scope<'_>) {
        for layer in self.list.iter() {
            layer.turn_start(cx);
        }
    }

    /// The first layer that does not pass decides.
    pub fn review(&self, cx: &Scope<'_>, call: &Reviewed<'_>) -> Verdict {
        for layer in self.list.iter() {
            match layer.review(cx, call) {
                Verdict::Pass => {}
                other => return other,
            }
        }
        Verdict::Pass
    }

    /// The first layer that withholds the message decides; the layers after it are not asked.
    pub async fn before_prompt(&self, cx: &Scope<'_>, text: &mut String) -> Option<String> {
        for layer in self.list.iter() {
            if let Some(why) = layer.before_prompt(cx, text).await {
                return Some(why);
            }
        }
        None
    }

    pub async fn before_task(&self, cx: &Scope<'_>, text: &mut String) {
        for layer in self.list.iter() {
            layer.before_task(cx, text).await;
        }
    }

    /// The first layer that does not say go decides.
    pub async fn before_model_call(&self, cx: &Scope<'_>) -> Gate {
        for layer in self.list.iter() {
            match layer.before_model_call(cx).await {
                Gate::Go => {}
                other => return other,
            }
        }
        Gate::Go
    }

    /// The first layer that changes the request or ends the turn decides what the loop
    /// hears; later layers still see the changed request.
    pub async fn shape_request(&self, cx: &Scope<'_>, req: &mut RequestSetup) -> Shape {
        let mut shape = Shape::Kept;
        for layer in self.list.iter() {
            match layer.shape_request(cx, req).await {
                Shape::Kept => {}
                Shape::Changed => shape = Shape::Changed,
                stop => return stop,
            }
        }
        shape
    }

    /// Runs `work` with every layer watching beside it; they end with it.
    pub async fn watch<F: Future>(
        &self,
        cx: &Scope<'_>,
        what: &Waiting<'_>,
        pulse: &Pulse,
        work: F,
    ) -> F::Output {
        let done = CancellationToken::new();
        let watchers =
            futures::future::join_all(self.list.iter().map(|l| l.watch(cx, what, pulse, &done)));
        let work = async {
            let out = work.await;
            done.cancel();
            out
        };
        futures::future::join(work, watchers).await.0
    }

    /// The first layer that makes the request fit decides; else every reason is told.
    pub async fn overflow(
        &self,
        cx: &Scope<'_>,
        req: &mut RequestSetup,
        said: &Overflow,
    ) -> Recovery {
        let mut why = Vec::new();
        for layer in self.list.iter() {
            match layer.overflow(cx, req, said).await {
                Recovery::GiveUp(w) if w.is_empty() => {}
                Recovery::GiveUp(w) => why.push(w),
                other => return other,
            }
        }
        Recovery::GiveUp(why.join("; "))
    }

    pub fn after_usage(&self, cx: &Scope<'_>) {
        for layer in self.list.iter() {
            layer.after_usage(cx);
        }
    }

    /// The first layer that blocks decides; the layers after it are not asked.
    #[cfg(test)]
    pub async fn before_tool(&self, cx: &Scope<'_>, tool: &ToolUse<'_>) -> ToolGate {
        self.before_tool_from(cx, tool, 0).await.0
    }

    /// Asks the layers from the `from`th on: the first that blocks decides, the first
    /// approval said stands. A layer that amends the call ends the walk: with it comes
    /// where to go on once the caller has checked the changed call.
    pub async fn before_tool_from(
        &self,
        cx: &Scope<'_>,
        tool: &ToolUse<'_>,
        from: usize,
    ) -> (ToolGate, usize) {
        let mut approval = None;
        for (i, layer) in self.list.iter().enumerate().skip(from) {
            match layer.before_tool(cx, tool).await {
                ToolGate::Go => {}
                ToolGate::Approval(a) => approval = approval.or(Some(a)),
                ToolGate::Block(why) => return (ToolGate::Block(why), i + 1),
                ToolGate::Amend(args, a) => {
                    return (ToolGate::Amend(args, approval.or(a)), i + 1);
                }
            }
        }
        let gate = approval.map_or(ToolGate::Go, ToolGate::Approval);
        (gate, self.list.len())
    }

    pub async fn prepare_tool(&self, cx: &Scope<'_>, tool: &ToolUse<'_>) {
        for layer in self.list.iter() {
            layer.prepare_tool(cx, tool).await;
        }
    }

    pub async fn before_run(&self, cx: &Scope<'_>, tool: &ToolUse<'_>) {
        for layer in self.list.iter() {
            layer.before_run(cx, tool).await;
        }
    }

    pub async fn before_compact(&self, cx: &Scope<'_>, manual: bool) {
        for layer in self.list.iter() {
            layer.before_compact(cx, manual).await;
        }
    }

    pub async fn notification(&self, cx: &Scope<'_>, kind: &'static str, message: &str) {
        for layer in self.list.iter() {
            layer.notification(cx, kind, message).await;
        }
    }

    pub async fn session_end(&self, cx: &Scope<'_>) {
        for layer in self.list.iter() {
            layer.session_end(cx).await;
        }
    }

    pub async fn settle(&self, cx: &Scope<'_>, end: TurnEnd) {
        for layer in self.list.iter() {
            layer.settle(cx, end).await;
        }
    }

    pub async fn gone(&self, cx: &Scope<'_>) {
        for layer in self.list.iter() {
            layer.gone(cx).await;
        }
    }

    pub async fn after_tool(&self, cx: &Scope<'_>, tool: &ToolUse<'_>, done: &ToolDone<'_>) {
        for layer in self.list.iter() {
            layer.after_tool(cx, tool, done).await;
        }
    }

    pub async fn result_returned(&self, cx: &Scope<'_>, result: &AgentResult) {
        for layer in self.list.iter() {
            layer.result_returned(cx, result).await;
        }
    }

    pub async fn task_completed(&self, cx: &Scope<'_>, task: &Task) {
        for layer in self.list.iter() {
            layer.task_completed(cx, task).await;
        }
    }

    /// Every layer hears the end; the first that asks to go on decides.
    pub async fn turn_end(&self, cx: &Scope<'_>, end: TurnEnd, final_text: &str) -> AfterTurn {
        let mut after = AfterTurn::Rest;
        for layer in self.list.iter() {
            let said = layer.turn_end(cx, end, final_text).await;
            if after == AfterTurn::Rest {
                after = said;
            }
        }
        after
    }
}

#[cfg(test)]
mod answer_tests;
#[cfg(test)]
mod policy_tests;
#[cfg(test)]
mod tests;
