//! The last line of defence against a team that goes round in circles: a turn of the
//! persona that has made `[limits] max_turn_calls` model calls with no file changed (by
//! any agent) and no worker's outcome in between ends, with the reason. Every other guard
//! looks at one agent's calls; this one looks at the team's progress.

use super::{Gate, Layer, Scope, ToolDone, ToolUse};
use crate::protocol::{EventKind, TurnEnd};
use async_trait::async_trait;
use std::sync::atomic::{AtomicU32, Ordering};

pub struct ProgressLayer {
    /// 0: never.
    max: u32,
    /// The persona's model calls since the last progress in its turn.
    calls: AtomicU32,
}

impl ProgressLayer {
    pub fn new(max: u32) -> Self {
        Self {
            max,
            calls: AtomicU32::new(0),
        }
    }

    fn progressed(&self) {
        self.calls.store(0, Ordering::Relaxed);
    }
}

#[async_trait]
impl Layer for ProgressLayer {
    fn turn_start(&self, cx: &Scope<'_>) {
        if !cx.is_worker() {
            self.progressed();
        }
    }

    async fn before_model_call(&self, cx: &Scope<'_>) -> Gate {
        if self.max == 0 || cx.is_worker() {
            return Gate::Go;
        }
        let calls = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        if calls <= self.max {
            return Gate::Go;
        }
        let message = format!(
            "no progress: {} model calls in this turn with no file changed and no new result \
             from a worker (limits.max_turn_calls); send a message to continue",
            self.max
        );
        cx.team.count_error(cx.agent);
        cx.team.emit(
            cx.agent,
            EventKind::Error {
                message: message.clone(),
            },
        );
        Gate::Stop(message)
    }

    async fn after_tool(&self, _cx: &Scope<'_>, tool: &ToolUse<'_>, done: &ToolDone<'_>) {
        if tool.changes_files() && !done.is_error {
            self.progressed();
        }
    }

    /// A worker's turns ended: its result (or its failure, or its answer) is news.
    async fn settle(&self, cx: &Scope<'_>, _end: TurnEnd) {
        if cx.is_worker() {
            self.progressed();
        }
    }
}
