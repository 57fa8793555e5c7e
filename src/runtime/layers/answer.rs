//! A supervisor that ends: once its workers' results are all in, nothing runs and the board
//! has nothing ready or under way, the persona's next step is its answer. It is told so
//! with the results; a model that does not follow (a 1.5B one asked the absent user "What
//! is the content of notes.md?" five times after the results said it all) gets two more
//! calls that change nothing, then a request without tools, so its next reply is the
//! answer. Starting a worker, or changing a file, is progress and starts the count again.
//! A reply that is only a tool call written as text (what a model trained on fenced tool
//! calls writes when none is offered) is no answer: it is asked once more, still without
//! tools, for plain sentences.

use super::{AfterTurn, Gate, Layer, Scope, Shape, ToolDone, ToolUse};
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

/// The persona's next turn after a reply that was no answer.
const PLAIN_WORDS: &str = "[squad] That was a tool call written as text, not an answer, and \
                           no tool can run now. Write your answer to the user as plain \
                           sentences: what your workers did and what they reported.";

pub struct AnswerLayer {
    board: Arc<TaskBoard>,
    /// The persona was asked again for its answer: its next turn goes without tools.
    answer_due: AtomicBool,
    /// A worker of the persona settled in its current turn.
    results_in: AtomicBool,
    /// The persona's model calls since all was done.
    calls: AtomicU32,
}

impl AnswerLayer {
    pub fn new(board: Arc<TaskBoard>) -> Self {
        Self {
            board,
            answer_due: AtomicBool::new(false),
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
        if !cx.is_worker() && !self.answer_due.load(Ordering::Relaxed) {
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

    async fn turn_end(&self, cx: &Scope<'_>, end: TurnEnd, final_text: &str) -> AfterTurn {
        if cx.is_worker() || self.calls.load(Ordering::Relaxed) <= FREE_CALLS {
            return AfterTurn::Rest;
        }
        // Asked once more at most.
        let again = end == TurnEnd::Completed
            && tool_call_as_text(final_text)
            && !self.answer_due.swap(true, Ordering::Relaxed);
        if again {
            return AfterTurn::Continue(PLAIN_WORDS.to_string());
        }
        self.answer_due.store(false, Ordering::Relaxed);
        AfterTurn::Rest
    }

    /// A worker of the persona ended its turns: its outcome is on its way up.
    async fn settle(&self, cx: &Scope<'_>, _end: TurnEnd) {
        if cx.team.parent(cx.agent) == Some(cx.team.root()) {
            self.results_in.store(true, Ordering::Relaxed);
        }
    }
}

/// A reply that is only a tool call written as text: a JSON object with a name and
/// arguments, fenced or not.
fn tool_call_as_text(text: &str) -> bool {
    let body = text.trim();
    let body = match body.strip_prefix("```") {
        Some(rest) => rest
            .split_once('\n')
            .map_or("", |(_, b)| b)
            .trim_end()
            .trim_end_matches("```"),
        None => body,
    };
    serde_json::from_str::<serde_json::Value>(body)
        .is_ok_and(|v| v.get("name").is_some() && v.get("arguments").is_some())
}
