//! The loop guard in each agent's life: its repeats are counted per turn (`turn_start`
//! gives it a fresh [`LoopGuard`]), and every result of a call that ran is shown to it
//! (`review`): a note for the model, or a stop of the turn.
//!
//! One rule spans turns and agents: a supervisor that sends a worker the very message it
//! already sent, with no file changed by anyone since, is not heard again (`before_tool`
//! blocks it with the way out). Small models acknowledged a finished worker over and over,
//! each time in a new turn, which no per-turn count sees.

use super::guard::{LoopGuard, Verdict};
use crate::config::GuardsConfig;
use crate::runtime::agent_tools::SPEAK_TO_AGENT;
use crate::runtime::cx::{AgentCx, Layer, Policy, Starting};
use crate::runtime::points::{Reviewed, ToolDone, ToolGate, ToolUse};
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

pub struct LoopGuardPolicy {
    limits: GuardsConfig,
    /// Calls that changed files, by any agent, so far.
    changes: Arc<AtomicU64>,
}

impl LoopGuardPolicy {
    pub fn new(limits: GuardsConfig) -> Self {
        Self {
            limits,
            changes: Arc::new(AtomicU64::new(0)),
        }
    }
}

impl Policy for LoopGuardPolicy {
    fn layer_for(&self, _agent: &Starting) -> Option<Box<dyn Layer>> {
        Some(Box::new(LoopGuardLayer {
            guard: Mutex::new(LoopGuard::new(self.limits)),
            limits: self.limits,
            changes: self.changes.clone(),
            sent: Mutex::new(HashMap::new()),
        }))
    }
}

struct LoopGuardLayer {
    limits: GuardsConfig,
    /// This turn's repeats.
    guard: Mutex<LoopGuard>,
    changes: Arc<AtomicU64>,
    /// Each message this agent sent (worker, text), with `changes` when it was sent.
    sent: Mutex<HashMap<(String, String), u64>>,
}

#[async_trait]
impl Layer for LoopGuardLayer {
    fn turn_start(&self, _cx: &AgentCx) {
        *crate::sync::lock(&self.guard) = LoopGuard::new(self.limits);
    }

    fn review(&self, _cx: &AgentCx, call: &Reviewed<'_>) -> Verdict {
        crate::sync::lock(&self.guard).observe(
            call.name,
            call.arguments,
            call.kind,
            call.output,
            call.is_error,
        )
    }

    async fn before_tool(&self, _cx: &AgentCx, tool: &ToolUse<'_>) -> ToolGate {
        if tool.name != SPEAK_TO_AGENT {
            return ToolGate::Go;
        }
        let text = |k: &str| tool.args[k].as_str().unwrap_or_default().trim().to_string();
        let (worker, message) = (text("agent_id"), text("message"));
        let now = self.changes.load(Ordering::Relaxed);
        let mut sent = crate::sync::lock(&self.sent);
        match sent.insert((worker.clone(), message), now) {
            Some(then) if then == now => ToolGate::Block(format!(
                "not sent: worker {worker} already has this very message and no file has \
                 changed since, so its reply stands. If all work is done, your next step is \
                 your final answer to the user; otherwise give it new work"
            )),
            _ => ToolGate::Go,
        }
    }

    async fn after_tool(&self, _cx: &AgentCx, tool: &ToolUse<'_>, done: &ToolDone<'_>) {
        if tool.changes_files() && !done.is_error {
            self.changes.fetch_add(1, Ordering::Relaxed);
        }
    }
}
