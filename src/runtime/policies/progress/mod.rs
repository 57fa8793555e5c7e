//! The team's loop guard: a turn of the persona whose last `[limits] max_turn_calls` model
//! calls brought nothing new ends, with the reason. Something new is a call answered with
//! what no earlier call of this turn was answered (a file not read before, a search not
//! made, a file's content after a change, a command's other output), by any agent, or a
//! worker's outcome. The loop guard looks at one agent's identical calls in a row; this
//! looks at the team going round through several calls (a 1.5B model read the same three
//! files, ran the same failing command and wrote the same file, round and round, each
//! call a different one from the one before).
//!
//! A count of calls on its own is no evidence: a capable model reading its way through 45
//! files, or making 120 distinct calls in one turn, brings something new with every call
//! and is never stopped here (`tests/capable_models.rs`). `[limits] max_iterations` is the
//! hard cap against spend.

use crate::protocol::EventKind;
use crate::runtime::cx::{AgentCx, Layer, ModelNext, Policy, Starting, ToolNext};
use crate::runtime::points::{Called, ModelCall, Moment, Purpose};
use crate::runtime::policies::loop_guard::guard::hash_json;
use crate::runtime::tool_call::{ToolOut, ToolReq};
use async_trait::async_trait;
use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

/// The team's progress in the persona's turn: what every agent's calls were answered with.
pub struct ProgressPolicy {
    max: u32,
    team: Arc<TeamProgress>,
}

impl ProgressPolicy {
    /// `max`: `[limits] max_turn_calls` (0: never).
    pub fn new(max: u32) -> Self {
        Self {
            max,
            team: Arc::new(TeamProgress::default()),
        }
    }
}

impl Policy for ProgressPolicy {
    /// The persona's layer gates its calls; a worker's tells of the news it brings.
    fn layer_for(&self, agent: &Starting) -> Option<Box<dyn Layer>> {
        Some(Box::new(ProgressLayer {
            max: if agent.is_worker() { 0 } else { self.max },
            team: self.team.clone(),
        }))
    }
}

#[derive(Default)]
struct TeamProgress {
    /// The persona's model calls since something new came.
    stale: AtomicU32,
    /// Every (agent, call, answer) of the persona's turn, hashed.
    seen: Mutex<HashSet<u64>>,
}

impl TeamProgress {
    fn progressed(&self) {
        self.stale.store(0, Ordering::Relaxed);
    }
}

struct ProgressLayer {
    /// 0: not gated (a worker, or the limit is off).
    max: u32,
    team: Arc<TeamProgress>,
}

/// One call and its answer, by value: JSON arguments in any key order are the same call.
fn mark(cx: &AgentCx, req: &ToolReq<'_>, out: &ToolOut) -> u64 {
    let mut h = DefaultHasher::new();
    cx.id().hash(&mut h);
    req.call.name.hash(&mut h);
    hash_json(&req.args, &mut h);
    out.output.hash(&mut h);
    out.is_error.hash(&mut h);
    h.finish()
}

impl ProgressLayer {
    /// Whether the persona's next call may go: false once the last `max` brought nothing
    /// new (the user is told why).
    fn may_call(&self, cx: &AgentCx) -> Result<(), String> {
        if self.max == 0 {
            return Ok(());
        }
        // The calls made since the last news, all answered by now.
        let stale = self.team.stale.fetch_add(1, Ordering::Relaxed);
        if stale < self.max {
            return Ok(());
        }
        let message = format!(
            "no progress: the last {} model calls in this turn brought nothing new (every \
             call was answered as an earlier one of this turn, and no worker reported) \
             (limits.max_turn_calls); send a message to continue",
            self.max
        );
        cx.team().count_error(cx.id());
        cx.team().emit(
            cx.id(),
            EventKind::Error {
                message: message.clone(),
            },
        );
        Err(message)
    }
}

#[async_trait]
impl Layer for ProgressLayer {
    async fn hear(&self, cx: &AgentCx, moment: Moment) {
        match moment {
            Moment::TurnStart if !cx.is_worker() => {
                self.team.progressed();
                // A new message is a new start: what was seen does not grow with the session.
                crate::sync::lock(&self.team.seen).clear();
            }
            // A worker's turns ended: its result (or its failure, or its answer) is news.
            Moment::Settled(_) if cx.is_worker() => self.team.progressed(),
            _ => {}
        }
    }

    /// The persona's own summaries are not its steps.
    async fn model_call(&self, cx: &AgentCx, call: &mut ModelCall, next: ModelNext<'_>) -> Called {
        if call.purpose == Purpose::Turn
            && let Err(why) = self.may_call(cx)
        {
            return Called::Stopped(why);
        }
        next.run(cx, call).await
    }

    async fn tool_call(&self, cx: &AgentCx, req: &mut ToolReq<'_>, next: ToolNext<'_>) -> ToolOut {
        let out = next.run(cx, req).await;
        if out.did_run() && crate::sync::lock(&self.team.seen).insert(mark(cx, req, &out)) {
            self.team.progressed();
        }
        out
    }
}
