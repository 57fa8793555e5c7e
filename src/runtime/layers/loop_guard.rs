//! The loop guard as a layer: each agent's repeats are counted per turn (`turn_start`
//! gives it a fresh `LoopGuard`, `turn_end` lets it go), and every result of a call that
//! ran is shown to it (`review`): a note for the model, or a stop of the turn.
//!
//! One rule spans turns and agents: a supervisor that sends a worker the very message it
//! already sent, with no file changed by anyone since, is not heard again (`before_tool`
//! blocks it with the way out). Small models acknowledged a finished worker over and over,
//! each time in a new turn, which no per-turn count sees.

use super::{AfterTurn, Layer, Scope, ToolDone, ToolGate, ToolUse};
use crate::config::GuardsConfig;
use crate::protocol::{AgentId, TurnEnd};
use crate::runtime::agent_tools::SPEAK_TO_AGENT;
use crate::runtime::guard::{CallKind, LoopGuard, Verdict};
use crate::tools::Reports;
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// One result as the guard sees it.
pub struct Reviewed<'a> {
    pub name: &'a str,
    /// The arguments as the model wrote them (compared as JSON).
    pub arguments: &'a str,
    pub kind: CallKind,
    /// What the output reports, as the call's handler says.
    pub reports: Reports,
    pub output: &'a str,
    pub is_error: bool,
}

pub struct LoopGuardLayer {
    limits: GuardsConfig,
    turns: Mutex<HashMap<AgentId, LoopGuard>>,
    /// Calls that changed files, by any agent, so far.
    changes: AtomicU64,
    /// Each message sent (sender, worker, text), with `changes` when it was sent.
    sent: Mutex<HashMap<(AgentId, String, String), u64>>,
}

impl LoopGuardLayer {
    pub fn new(limits: GuardsConfig) -> Self {
        Self {
            limits,
            turns: Mutex::new(HashMap::new()),
            changes: AtomicU64::new(0),
            sent: Mutex::new(HashMap::new()),
        }
    }
}

#[async_trait]
impl Layer for LoopGuardLayer {
    fn turn_start(&self, cx: &Scope<'_>) {
        crate::sync::lock(&self.turns).insert(cx.agent, LoopGuard::new(self.limits));
    }

    fn review(&self, cx: &Scope<'_>, call: &Reviewed<'_>) -> Verdict {
        let mut turns = crate::sync::lock(&self.turns);
        let guard = turns
            .entry(cx.agent)
            .or_insert_with(|| LoopGuard::new(self.limits));
        guard.observe(
            call.name,
            call.arguments,
            call.kind,
            call.output,
            call.is_error,
        )
    }

    async fn before_tool(&self, cx: &Scope<'_>, tool: &ToolUse<'_>) -> ToolGate {
        if tool.name != SPEAK_TO_AGENT {
            return ToolGate::Go;
        }
        let text = |k: &str| tool.args[k].as_str().unwrap_or_default().trim().to_string();
        let (worker, message) = (text("agent_id"), text("message"));
        let now = self.changes.load(Ordering::Relaxed);
        let mut sent = crate::sync::lock(&self.sent);
        match sent.insert((cx.agent, worker.clone(), message), now) {
            Some(then) if then == now => ToolGate::Block(format!(
                "not sent: worker {worker} already has this very message and no file has \
                 changed since, so its reply stands. If all work is done, your next step is \
                 your final answer to the user; otherwise give it new work"
            )),
            _ => ToolGate::Go,
        }
    }

    async fn after_tool(&self, _cx: &Scope<'_>, tool: &ToolUse<'_>, done: &ToolDone<'_>) {
        if tool.changes_files() && !done.is_error {
            self.changes.fetch_add(1, Ordering::Relaxed);
        }
    }

    async fn turn_end(&self, cx: &Scope<'_>, _end: TurnEnd, _final_text: &str) -> AfterTurn {
        crate::sync::lock(&self.turns).remove(&cx.agent);
        AfterTurn::Rest
    }
}
