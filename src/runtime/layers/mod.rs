//! An agent's life as a pipeline of layers, the way tower wraps a service: each policy
//! (pause, budget, user hooks, …) is one file implementing [`Layer`], and the loops only
//! walk the list in the order `Layers::new` builds it. A new policy is one file and one
//! line there (see docs/adding-a-policy.md).
//!
//! The points of an agent's life, in the order they come:
//! - `before_task`: a message starts a task (a worker's first, or a follow-up); a layer
//!   may add a note to the message.
//! - `before_model_call`: before each model call of a turn: go, hold (pass the gates
//!   again), or stop the turn with a reason.
//! - `after_usage`: the call's usage has been counted on the agent.
//! - `before_tool`: a call is about to run, after its arguments were checked and before
//!   the user is asked: go, or block it with a reason the model gets as its result.
//! - `after_tool`: the call ran; its output is what the model will read.
//! - `result_returned`: a worker's result went up to its supervisor.
//! - `task_completed`: a task of the board is done.
//! - `turn_start`: a turn begins (per-turn state starts afresh).
//! - `review`: the result of a call that ran, before the model reads it: pass, a note to
//!   append, or a stop of the turn (the loop guard).
//! - `turn_end`: the turn ended; a layer may ask the agent to go on with a message, as if
//!   the user had sent it (the caller bounds how often in a row).
//!
//! A layer sees a [`Scope`], not the engine: the team, the agent, its role and root.

mod budget;
mod hooks;
mod loop_guard;
mod pause;

pub use budget::BudgetLayer;
pub use hooks::HookLayer;
pub use loop_guard::{LoopGuardLayer, Reviewed};
pub use pause::PauseLayer;

use super::guard::Verdict;
use super::team::Team;
use crate::protocol::{AgentId, AgentResult, Task, TurnEnd};
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
    pub root: &'a Path,
    pub cancel: &'a CancellationToken,
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
#[derive(Debug, PartialEq, Eq)]
pub enum ToolGate {
    Go,
    /// The call does not run; the model reads this as its result.
    Block(String),
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
    pub name: &'a str,
    pub args: &'a Value,
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

    async fn before_task(&self, _cx: &Scope<'_>, _text: &mut String) {}

    async fn before_model_call(&self, _cx: &Scope<'_>) -> Gate {
        Gate::Go
    }

    fn after_usage(&self, _cx: &Scope<'_>) {}

    async fn before_tool(&self, _cx: &Scope<'_>, _tool: &ToolUse<'_>) -> ToolGate {
        ToolGate::Go
    }

    async fn after_tool(&self, _cx: &Scope<'_>, _tool: &ToolUse<'_>, _done: &ToolDone<'_>) {}

    async fn result_returned(&self, _cx: &Scope<'_>, _result: &AgentResult) {}

    async fn task_completed(&self, _cx: &Scope<'_>, _task: &Task) {}

    async fn turn_end(&self, _cx: &Scope<'_>, _end: TurnEnd, _final_text: &str) -> AfterTurn {
        AfterTurn::Rest
    }
}

/// The session's layers, in the order they run at every point: the pause gate first (a
/// paused team holds before anything is decided), then the budgets, the loop guard, and
/// the user's hooks (a hook sees only calls squad itself would let through).
pub fn session_layers(
    pause: &Arc<super::pause::PauseGate>,
    session: &super::budget::SessionLimits,
    guards: crate::config::GuardsConfig,
    hooks: HookLayer,
) -> Layers {
    Layers::new(vec![
        Arc::new(PauseLayer::new(pause.clone())),
        Arc::new(BudgetLayer::new(session.clone())),
        Arc::new(LoopGuardLayer::new(guards)),
        Arc::new(hooks),
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

    pub fn after_usage(&self, cx: &Scope<'_>) {
        for layer in self.list.iter() {
            layer.after_usage(cx);
        }
    }

    /// The first layer that blocks decides; the layers after it are not asked.
    pub async fn before_tool(&self, cx: &Scope<'_>, tool: &ToolUse<'_>) -> ToolGate {
        for layer in self.list.iter() {
            if let ToolGate::Block(why) = layer.before_tool(cx, tool).await {
                return ToolGate::Block(why);
            }
        }
        ToolGate::Go
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
mod tests;
