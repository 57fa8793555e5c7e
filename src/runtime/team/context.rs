//! How full each agent's context is, and replacing its older items by a summary. The
//! server's count of the last call (`usage`) is the base; items added since are
//! estimated, so the figure is right after every call and close in between. Kept up as
//! items come, so asking costs nothing however long the history.

use super::Team;
use crate::context::estimate_item;
use crate::protocol::{AgentId, EventKind, HistoryItem};
use std::sync::Arc;

#[derive(Clone, Copy, Debug, Default)]
pub(super) struct ContextState {
    /// Prompt and completion tokens of the last call, as the server counted them.
    measured: Option<u64>,
    /// Estimated tokens of the items added since that call.
    added: u64,
    /// The next assistant item is the answer the measure already counts.
    answer_pending: bool,
    /// Estimate of the whole history, for when there is no measure.
    history: u64,
}

impl ContextState {
    pub(super) fn of(history: &[HistoryItem]) -> Self {
        Self {
            history: history.iter().map(estimate_item).sum(),
            ..Self::default()
        }
    }

    pub(super) fn push(&mut self, item: &HistoryItem) {
        let tokens = estimate_item(item);
        self.history += tokens;
        if self.answer_pending && matches!(item, HistoryItem::Assistant { .. }) {
            self.answer_pending = false;
        } else {
            self.added += tokens;
        }
    }

    pub(super) fn forget_measure(&mut self) {
        self.measured = None;
        self.answer_pending = false;
    }
}

/// A compaction to apply: keep `history[..head]`, put the summary, keep `history[tail..]`
/// (indexes into the history the summary was made from, which has only grown since).
pub struct Compaction {
    pub head: usize,
    pub tail: usize,
    pub summary: String,
    pub tokens_before: u64,
    pub context_window: u64,
    /// Estimated tokens of what a request sends besides the history (prompt, tools).
    pub fixed_tokens: u64,
}

impl Team {
    /// The server counted `tokens` (prompt and answer) for the call that just ended.
    pub fn record_context(&self, id: AgentId, tokens: u64) {
        self.with(id, |a| {
            a.context.measured = Some(tokens);
            a.context.added = 0;
            a.context.answer_pending = true;
        });
    }

    /// Tokens the agent's next request will take; `fixed` estimates what it sends besides
    /// the history (system prompt, tools), used only until the server has counted a call.
    pub fn context_tokens(&self, id: AgentId, fixed: u64) -> u64 {
        self.with(id, |a| {
            let c = a.context;
            c.measured.map_or(fixed + c.history, |m| m + c.added)
        })
        .unwrap_or(fixed)
    }

    /// Replaces the agent's older items by the summary, tells the front ends and the log
    /// (`compacted`, with the whole new history), and returns the estimated tokens of the
    /// next request. `None` if the agent is gone or its history no longer fits the plan.
    pub fn compact_history(&self, id: AgentId, plan: Compaction) -> Option<u64> {
        let (history, replaced, tokens_after) = self.with(id, |a| {
            let old = &a.history;
            if plan.head > plan.tail || plan.tail > old.len() {
                return None;
            }
            let mut new = Vec::with_capacity(plan.head + 1 + old.len() - plan.tail);
            new.extend_from_slice(&old[..plan.head]);
            new.push(HistoryItem::Summary {
                text: plan.summary.clone(),
            });
            new.extend_from_slice(&old[plan.tail..]);
            a.context = ContextState::of(&new);
            let tokens_after = plan.fixed_tokens + a.context.history;
            let replaced = (plan.tail - plan.head) as u64;
            a.history = Arc::new(new);
            Some((a.history.clone(), replaced, tokens_after))
        })??;
        self.emit(
            id,
            EventKind::Compacted {
                tokens_before: plan.tokens_before,
                tokens_after,
                context_window: plan.context_window,
                replaced,
                history: history.as_ref().clone(),
            },
        );
        Some(tokens_after)
    }

    /// Replaces the agent's history by `new` (the same items, cut shorter), told like a
    /// compaction so the log and a resume have it. Returns the estimated tokens of the next
    /// request; `None` if the agent is gone.
    pub fn rewrite_history(
        &self,
        id: AgentId,
        new: Vec<HistoryItem>,
        tokens_before: u64,
        context_window: u64,
        fixed_tokens: u64,
    ) -> Option<u64> {
        let (history, replaced, tokens_after) = self.with(id, |a| {
            let replaced = a
                .history
                .iter()
                .zip(&new)
                .filter(|(old, new)| old != new)
                .count() as u64;
            a.context = ContextState::of(&new);
            a.history = Arc::new(new);
            (
                a.history.clone(),
                replaced,
                fixed_tokens + a.context.history,
            )
        })?;
        self.emit(
            id,
            EventKind::Compacted {
                tokens_before,
                tokens_after,
                context_window,
                replaced,
                history: history.as_ref().clone(),
            },
        );
        Some(tokens_after)
    }

    /// Puts the agent's history back as it was (a rewind); the caller logs the `rewound`
    /// event that says so. The server's count is forgotten: the next call measures anew.
    pub fn restore_history(&self, id: AgentId, items: Vec<HistoryItem>) -> bool {
        self.with(id, |a| {
            a.context = ContextState::of(&items);
            a.history = Arc::new(items);
        })
        .is_some()
    }
}
