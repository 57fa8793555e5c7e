//! The last line of defence against a team that goes round in circles: a turn of the
//! persona that has made `[limits] max_turn_calls` model calls with no file changed (by
//! any agent) and no worker's outcome in between ends, with the reason. Every other guard
//! looks at one agent's calls; this one looks at the team's progress.

use super::{Gate, Layer, Reviewed, Scope, ToolDone, ToolUse};
use crate::protocol::{AgentId, EventKind, TurnEnd};
use crate::runtime::guard::{Verdict, hash_json};
use async_trait::async_trait;
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

pub struct ProgressLayer {
    /// 0: never.
    max: u32,
    /// The persona's model calls since the last progress in its turn.
    calls: AtomicU32,
    /// Handoffs since the last progress in the persona's turn.
    handoffs: AtomicU32,
    /// The last output of each changing call (agent, name, arguments): the same call
    /// answered the same again changed nothing (a 1.5B model wrote the same file, ran the
    /// same failing command and the same unconfigured tests, round and round).
    last: Mutex<HashMap<(AgentId, String, u64), u64>>,
}

fn mark(value: impl Hash) -> u64 {
    let mut h = DefaultHasher::new();
    value.hash(&mut h);
    h.finish()
}

impl ProgressLayer {
    pub fn new(max: u32) -> Self {
        Self {
            max,
            calls: AtomicU32::new(0),
            handoffs: AtomicU32::new(0),
            last: Mutex::new(HashMap::new()),
        }
    }

    #[cfg(test)]
    pub(super) fn progressed_for_test(&self) {
        self.progressed();
    }

    fn progressed(&self) {
        self.calls.store(0, Ordering::Relaxed);
        self.handoffs.store(0, Ordering::Relaxed);
    }
}

/// Handoffs in a row with nothing changed in between that end the persona's turn: personas
/// passing the session round (a 1.5B model handed copilot → architect → implementer →
/// tester → implementer … with the same reason, 23 times in ten minutes).
pub const MAX_BOUNCES: u32 = 4;

#[async_trait]
impl Layer for ProgressLayer {
    fn review(&self, cx: &Scope<'_>, call: &Reviewed<'_>) -> Verdict {
        if cx.is_worker() || call.name != "handoff_to" || call.is_error {
            return Verdict::Pass;
        }
        let handoffs = self.handoffs.fetch_add(1, Ordering::Relaxed) + 1;
        if handoffs < MAX_BOUNCES {
            return Verdict::Pass;
        }
        Verdict::Stop(format!(
            "handoffs going round: {handoffs} handoffs in this turn with no file changed in \
             between; send a message to continue"
        ))
    }

    fn turn_start(&self, cx: &Scope<'_>) {
        if !cx.is_worker() {
            self.progressed();
            // A new message is a new start: the outputs remembered so far do not grow
            // with the session.
            crate::sync::lock(&self.last).clear();
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

    /// A changing call is progress unless the very same call was answered the very same
    /// before.
    async fn after_tool(&self, cx: &Scope<'_>, tool: &ToolUse<'_>, done: &ToolDone<'_>) {
        if !tool.changes_files() || done.is_error {
            return;
        }
        let args = {
            let mut h = DefaultHasher::new();
            hash_json(tool.args, &mut h);
            h.finish()
        };
        let key = (cx.agent, tool.name.to_string(), args);
        let output = mark(done.output);
        let again = crate::sync::lock(&self.last).insert(key, output) == Some(output);
        if !again {
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
