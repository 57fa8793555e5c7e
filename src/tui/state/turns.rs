//! An agent's turn as its conversation shows it: status and turn boundaries, streamed
//! text, tool timings, token use and compaction, retries and stalls, notices, hooks and
//! errors.

use super::agents::set_status;
use super::{EntryKind, SessionState, Stall};
use crate::protocol::{AgentId, AgentStatus, EventKind, TurnEnd};
use crate::tui::format;
use std::time::{Duration, Instant};

impl SessionState {
    pub(super) fn agent_status(
        &mut self,
        id: AgentId,
        status: AgentStatus,
        reason: &Option<String>,
        live: bool,
        now: Instant,
    ) {
        let a = self.agent_entry(id, now);
        set_status(a, status, now);
        a.status_reason = reason.clone();
        if status == AgentStatus::Interrupted && live {
            a.conversation.push(EntryKind::Notice(
                "interrupted when squad stopped: /continue goes on with every interrupted \
                 agent (c on a selected one in the tree), or send a message"
                    .into(),
            ));
        }
    }

    pub(super) fn turn_started(&mut self, id: AgentId, now: Instant) {
        let a = self.agent_entry(id, now);
        a.in_turn = true;
        if a.busy_since.is_none() {
            a.busy_since = Some(now);
        }
    }

    pub(super) fn turn_finished(&mut self, id: AgentId, end: TurnEnd, now: Instant) {
        let a = self.agent_entry(id, now);
        a.in_turn = false;
        a.stalled = None;
        let conv = &mut a.conversation;
        if !conv.streaming.is_empty() {
            // Text the model streamed but never committed: keep what was seen.
            let text = std::mem::take(&mut conv.streaming);
            conv.stream_rev += 1;
            conv.push(EntryKind::Assistant(text));
        }
        if matches!(
            end,
            TurnEnd::Interrupted | TurnEnd::Cancelled | TurnEnd::MaxIterations
        ) {
            conv.push(EntryKind::TurnStopped(end));
        }
    }

    pub(super) fn text_delta(&mut self, id: AgentId, delta: &str, now: Instant) {
        let conv = &mut self.agent_entry(id, now).conversation;
        conv.streaming.push_str(delta);
        conv.stream_rev += 1;
    }

    pub(super) fn tool_call_end(&mut self, id: AgentId, call_id: &str, ms: u64, now: Instant) {
        self.agent_entry(id, now)
            .conversation
            .set_tool_duration(call_id, ms);
    }

    /// One model call's tokens and cost; `context` is (tokens in the window, its size).
    pub(super) fn usage(
        &mut self,
        id: AgentId,
        prompt_tokens: u64,
        completion_tokens: u64,
        cost_usd: f64,
        (context_tokens, context_window): (u64, u64),
        now: Instant,
    ) {
        let a = self.agent_entry(id, now);
        let f = &mut a.figures;
        f.prompt_tokens += prompt_tokens;
        f.completion_tokens += completion_tokens;
        f.cost_usd += cost_usd;
        f.model_calls += 1;
        if context_window > 0 && context_tokens > 0 {
            a.context = Some((context_tokens, context_window));
        }
    }

    /// `tokens` is (before, after, the window's size).
    pub(super) fn compacted(
        &mut self,
        id: AgentId,
        (before, after, window): (u64, u64, u64),
        replaced: u64,
        now: Instant,
    ) {
        let a = self.agent_entry(id, now);
        a.context = Some((after, window));
        a.conversation.push(EntryKind::Notice(format!(
            "context compacted: {replaced} older items replaced by a summary, \
             ~{} → ~{} of {} tokens",
            format::tokens(before),
            format::tokens(after),
            format::tokens(window),
        )));
    }

    pub(super) fn retrying(
        &mut self,
        id: AgentId,
        attempt: u32,
        max_attempts: u32,
        reason: &str,
        now: Instant,
    ) {
        let conv = &mut self.agent_entry(id, now).conversation;
        conv.set_streaming(String::new());
        let kind = EntryKind::Retrying {
            attempt,
            max_attempts,
            reason: reason.to_string(),
        };
        // One line per retry streak: a later attempt replaces the earlier line.
        match conv.entries.last_mut() {
            Some(e) if matches!(e.kind, EntryKind::Retrying { .. }) => {
                e.kind = kind;
                e.rev += 1;
            }
            _ => conv.push(kind),
        }
    }

    pub(super) fn stalled(
        &mut self,
        id: AgentId,
        on: &str,
        since_s: u64,
        live: bool,
        now: Instant,
    ) {
        // A stall read back from an earlier run's log is over.
        if !live {
            return;
        }
        let since = now.checked_sub(Duration::from_secs(since_s)).unwrap_or(now);
        self.agent_entry(id, now).stalled = Some(Stall {
            on: on.to_string(),
            since,
        });
    }

    pub(super) fn notice(&mut self, id: AgentId, message: String, now: Instant) {
        self.agent_entry(id, now)
            .conversation
            .push(EntryKind::Notice(message));
    }

    pub(super) fn hook_ran(&mut self, id: AgentId, kind: &EventKind, now: Instant) {
        if let Some(line) = kind.hook_summary() {
            self.notice(id, line, now);
        }
    }

    pub(super) fn error(&mut self, id: AgentId, message: &str, now: Instant) {
        let a = self.agent_entry(id, now);
        a.figures.errors += 1;
        a.conversation.push(EntryKind::Error(message.to_string()));
    }
}
