//! The loop guard as a layer: each agent's repeats are counted per turn (`turn_start`
//! gives it a fresh `LoopGuard`, `turn_end` lets it go), and every result of a call that
//! ran is shown to it (`review`): a note for the model, or a stop of the turn.

use super::{AfterTurn, Layer, Scope};
use crate::config::GuardsConfig;
use crate::protocol::{AgentId, TurnEnd};
use crate::runtime::guard::{CallKind, LoopGuard, Verdict};
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::Mutex;

/// One result as the guard sees it.
pub struct Reviewed<'a> {
    pub name: &'a str,
    /// The arguments as the model wrote them (compared as JSON).
    pub arguments: &'a str,
    pub kind: CallKind,
    pub output: &'a str,
    pub is_error: bool,
}

pub struct LoopGuardLayer {
    limits: GuardsConfig,
    turns: Mutex<HashMap<AgentId, LoopGuard>>,
}

impl LoopGuardLayer {
    pub fn new(limits: GuardsConfig) -> Self {
        Self {
            limits,
            turns: Mutex::new(HashMap::new()),
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

    async fn turn_end(&self, cx: &Scope<'_>, _end: TurnEnd, _final_text: &str) -> AfterTurn {
        crate::sync::lock(&self.turns).remove(&cx.agent);
        AfterTurn::Rest
    }
}
