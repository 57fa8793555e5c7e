//! The loop guard in each agent's life: its repeats are counted per turn (a turn's start
//! gives it a fresh [`LoopGuard`]), and every result of a call that ran is shown to it
//! (`review`): a note for the model, or a stop of the turn.
//!
//! One rule spans turns and agents: a supervisor that sends a worker the very message it
//! already sent, with no file changed by anyone since, is not heard again (its
//! `tool_call` refuses it with the way out). Small models acknowledged a finished worker over and over,
//! each time in a new turn, which no per-turn count sees.

use super::guard::LoopGuard;
use crate::config::GuardsConfig;
use crate::runtime::agent_tools::SPEAK_TO_AGENT;
use crate::runtime::cx::{AgentCx, Layer, Policy, Starting, ToolNext};
use crate::runtime::points::{Moment, Reviewed, Verdict};
use crate::runtime::tool_call::{ToolOut, ToolReq};
use async_trait::async_trait;
use serde_json::Value;
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

impl LoopGuardLayer {
    /// Why a message to a worker is not sent: the very one it has, nothing changed since.
    fn heard_already(&self, args: &Value) -> Option<String> {
        let text = |k: &str| args[k].as_str().unwrap_or_default().trim().to_string();
        let (worker, message) = (text("agent_id"), text("message"));
        let now = self.changes.load(Ordering::Relaxed);
        let mut sent = crate::sync::lock(&self.sent);
        match sent.insert((worker.clone(), message), now) {
            Some(then) if then == now => Some(format!(
                "not sent: worker {worker} already has this very message and no file has \
                 changed since, so its reply stands. If all work is done, your next step is \
                 your final answer to the user; otherwise give it new work"
            )),
            _ => None,
        }
    }
}

#[async_trait]
impl Layer for LoopGuardLayer {
    async fn hear(&self, _cx: &AgentCx, moment: Moment) {
        if moment == Moment::TurnStart {
            *crate::sync::lock(&self.guard) = LoopGuard::new(self.limits);
        }
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

    async fn tool_call(&self, cx: &AgentCx, req: &mut ToolReq<'_>, next: ToolNext<'_>) -> ToolOut {
        if req.call.name == SPEAK_TO_AGENT
            && let Some(why) = self.heard_already(&req.args)
        {
            return ToolOut::refused(why);
        }
        let out = next.run(cx, req).await;
        if out.did_run() && req.view().changes_files() && !out.is_error {
            self.changes.fetch_add(1, Ordering::Relaxed);
        }
        out
    }
}
