//! A tool call told to the front ends: begun, and ended with how long it ran.

use super::Team;
use crate::protocol::{AgentId, EventKind};
use std::time::Instant;

impl Team {
    /// Runs `work`, `agent`'s call `call_id`, between its `tool_call_begin` and
    /// `tool_call_end`.
    pub async fn told<F: Future>(&self, agent: AgentId, call_id: &str, work: F) -> F::Output {
        let call_id = call_id.to_string();
        self.emit(
            agent,
            EventKind::ToolCallBegin {
                call_id: call_id.clone(),
            },
        );
        let started = Instant::now();
        let out = work.await;
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.emit(
            agent,
            EventKind::ToolCallEnd {
                call_id,
                duration_ms,
            },
        );
        out
    }
}
