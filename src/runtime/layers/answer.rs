//! A supervisor that ends: once its workers' results are all in, nothing runs and the board
//! has nothing ready or under way, the persona's next step is its answer. It is told so
//! with the results; a model that does not follow (a 1.5B one asked the absent user "What
//! is the content of notes.md?" five times after the results said it all) gets two more
//! calls that change nothing, then a request without tools, so its next reply is the
//! answer. Starting a worker, or changing a file, is progress and starts the count again.

use super::{Gate, Layer, Scope, Shape, ToolDone, ToolUse};
use crate::protocol::{HistoryItem, TurnEnd};
use crate::runtime::request::RequestSetup;
use crate::runtime::tasks::TaskBoard;
use async_trait::async_trait;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// Model calls after all is done that may still use tools (to look at the work, say).
pub const FREE_CALLS: u32 = 2;

/// What the request without tools ends with.
const ANSWER_NOW: &str = "[squad] Your workers are done and their results are above; nothing \
                          else is running. Answer the user now, in plain text, with what they \
                          reported.";

pub struct AnswerLayer {
    board: Arc<TaskBoard>,
    /// A worker of the persona settled in its current turn.
    results_in: AtomicBool,
    /// The persona's model calls since all was done.
    calls: AtomicU32,
}

impl AnswerLayer {
    pub fn new(board: Arc<TaskBoard>) -> Self {
        Self {
            board,
            results_in: AtomicBool::new(false),
            calls: AtomicU32::new(0),
        }
    }

    /// The persona's workers of this turn are all finished and told, and the board is idle.
    fn all_done(&self, cx: &Scope<'_>) -> bool {
        self.results_in.load(Ordering::Relaxed)
            && !self.board.has_work()
            && cx
                .team
                .children(cx.agent)
                .into_iter()
                .all(|c| cx.team.is_settled(c))
    }
}

#[async_trait]
impl Layer for AnswerLayer {
    fn turn_start(&self, cx: &Scope<'_>) {
        if !cx.is_worker() {
            self.results_in.store(false, Ordering::Relaxed);
            self.calls.store(0, Ordering::Relaxed);
        }
    }

    async fn before_model_call(&self, cx: &Scope<'_>) -> Gate {
        if !cx.is_worker() {
            if self.all_done(cx) {
                self.calls.fetch_add(1, Ordering::Relaxed);
            } else {
                self.calls.store(0, Ordering::Relaxed);
            }
        }
        Gate::Go
    }

    async fn shape_request(&self, cx: &Scope<'_>, req: &mut RequestSetup) -> Shape {
        let calls = self.calls.load(Ordering::Relaxed);
        if cx.is_worker() || calls <= FREE_CALLS {
            return Shape::Kept;
        }
        // Said once, in the history (the log and the screen show why the tools went).
        if calls == FREE_CALLS + 1 {
            cx.team.push_item(cx.agent, HistoryItem::notice(ANSWER_NOW));
            if let Some(view) = cx.team.request_view(cx.agent) {
                req.request.history = view.history;
            }
        }
        req.request.tools = Arc::from(Vec::new());
        Shape::Kept
    }

    async fn after_tool(&self, _cx: &Scope<'_>, tool: &ToolUse<'_>, done: &ToolDone<'_>) {
        if tool.changes_files() && !done.is_error {
            self.calls.store(0, Ordering::Relaxed);
        }
    }

    /// A worker of the persona ended its turns: its outcome is on its way up.
    async fn settle(&self, cx: &Scope<'_>, _end: TurnEnd) {
        if cx.team.parent(cx.agent) == Some(cx.team.root()) {
            self.results_in.store(true, Ordering::Relaxed);
        }
    }
}
