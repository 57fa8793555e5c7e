//! What an agent worker streams, as the worker's conversation: its words as live text and
//! then one assistant item, its thinking kept as the item's reasoning, each tool call an
//! assistant item naming it (begun and ended as any call, its output a tool result), its
//! plan a `plan` call whose result is the list, its usage counted on the worker. Every
//! event is the worker's own (its agent id), so front ends show it like any worker's.

use crate::acp_client::{AgentUpdate, ToolDetail};
use crate::protocol::{AgentId, EventKind, HistoryItem, Reasoning, ToolCall};
use crate::runtime::team::Team;
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// A tool call of the agent as far as it said, for its permission requests.
#[derive(Clone, Debug, Default)]
pub(super) struct KnownCall {
    pub title: String,
    pub kind: String,
    pub detail: ToolDetail,
}

/// The agent's tool calls by id, shared with the permission requests.
pub(super) type Known = Arc<Mutex<HashMap<String, KnownCall>>>;

/// The conversation folded so far.
#[derive(Default)]
pub(super) struct Conversation {
    /// Its words since the last item.
    text: String,
    thought: String,
    /// Calls begun and not ended: when each began, and its name.
    open: HashMap<String, (Instant, String)>,
    /// Its last words of the prompt so far (the result, when it says nothing after).
    last_words: String,
    plans: u32,
    /// Whether it ever reported its usage.
    pub usage_seen: bool,
    cost_so_far: f64,
    pub known: Known,
}

impl Conversation {
    pub fn apply(&mut self, team: &Team, id: AgentId, update: AgentUpdate) {
        match update {
            AgentUpdate::Message(t) if !t.is_empty() => {
                team.emit(id, EventKind::TextDelta { delta: t.clone() });
                self.text.push_str(&t);
            }
            AgentUpdate::Thought(t) => self.thought.push_str(&t),
            AgentUpdate::ToolCall {
                id: call,
                title,
                kind,
                status,
                detail,
            } => {
                self.begin(team, id, &call, &title, &kind, detail);
                self.progress(team, id, &call, Some(&status), None);
            }
            AgentUpdate::ToolCallUpdate {
                id: call,
                title,
                status,
                output,
                detail,
            } => {
                let known = crate::sync::lock(&self.known).get(&call).cloned();
                match known {
                    Some(mut k) => {
                        k.detail.merge(detail);
                        if let Some(t) = title {
                            k.title = t;
                        }
                        crate::sync::lock(&self.known).insert(call.clone(), k);
                    }
                    None => {
                        let title = title.unwrap_or_else(|| call.clone());
                        self.begin(team, id, &call, &title, "other", detail);
                    }
                }
                self.progress(team, id, &call, status.as_deref(), output);
            }
            AgentUpdate::Plan(entries) => self.plan(team, id, &entries),
            AgentUpdate::Usage { used, size, cost } => self.usage(team, id, used, size, cost),
            AgentUpdate::Message(_) | AgentUpdate::Other(_) => {}
        }
    }

    /// Its words and thinking so far as one assistant item, with `calls`.
    fn flush(&mut self, team: &Team, id: AgentId, calls: Vec<ToolCall>) {
        let text = std::mem::take(&mut self.text);
        let thought = std::mem::take(&mut self.thought);
        if text.is_empty() && thought.is_empty() && calls.is_empty() {
            return;
        }
        if !text.trim().is_empty() {
            self.last_words = text.clone();
        }
        let mut item = HistoryItem::assistant(text, calls);
        if let HistoryItem::Assistant { reasoning, .. } = &mut item
            && !thought.is_empty()
        {
            reasoning.push(Reasoning {
                content: vec![thought],
                ..Reasoning::default()
            });
        }
        team.push_item(id, item);
    }

    fn begin(
        &mut self,
        team: &Team,
        id: AgentId,
        call: &str,
        title: &str,
        kind: &str,
        detail: ToolDetail,
    ) {
        let name = if kind.is_empty() { "other" } else { kind };
        let mut arguments = json!({ "title": title });
        if let Some(input) = &detail.raw_input {
            arguments["input"] = input.clone();
        }
        let tool_call = ToolCall {
            id: call.to_string(),
            name: name.to_string(),
            arguments: arguments.to_string(),
        };
        self.flush(team, id, vec![tool_call]);
        let known = KnownCall {
            title: title.to_string(),
            kind: name.to_string(),
            detail,
        };
        crate::sync::lock(&self.known).insert(call.to_string(), known);
        self.open
            .insert(call.to_string(), (Instant::now(), name.to_string()));
        team.emit(
            id,
            EventKind::ToolCallBegin {
                call_id: call.to_string(),
            },
        );
    }

    /// A call that completed or failed ends: its output is its result.
    fn progress(
        &mut self,
        team: &Team,
        id: AgentId,
        call: &str,
        status: Option<&str>,
        output: Option<String>,
    ) {
        let is_error = match status {
            Some("completed") => false,
            Some("failed") => true,
            _ => return,
        };
        let Some((began, name)) = self.open.remove(call) else {
            return;
        };
        let duration_ms = u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX);
        team.emit(
            id,
            EventKind::ToolCallEnd {
                call_id: call.to_string(),
                duration_ms,
            },
        );
        let output =
            output.unwrap_or_else(|| if is_error { "(failed)" } else { "(done)" }.to_string());
        team.count_tool_result(id, is_error);
        team.push_item(
            id,
            HistoryItem::ToolResult {
                call_id: call.to_string(),
                name,
                output,
                is_error,
            },
        );
    }

    /// Its plan: a `plan` call whose result is the list with each entry's status.
    fn plan(&mut self, team: &Team, id: AgentId, entries: &[(String, String)]) {
        self.plans += 1;
        let call = format!("plan-{}", self.plans);
        let list: Vec<String> = entries
            .iter()
            .map(|(what, status)| format!("- [{status}] {what}"))
            .collect();
        let tool_call = ToolCall {
            id: call.clone(),
            name: "plan".into(),
            arguments: json!({ "entries": entries.len() }).to_string(),
        };
        self.flush(team, id, vec![tool_call]);
        team.push_item(
            id,
            HistoryItem::ToolResult {
                call_id: call,
                name: "plan".into(),
                output: list.join("\n"),
                is_error: false,
            },
        );
    }

    /// A usage update: the tokens in its context counted as one call's prompt (what a
    /// native worker's call is counted as), its cost as the growth of the session's
    /// cumulative cost where it says one in US dollars.
    fn usage(
        &mut self,
        team: &Team,
        id: AgentId,
        used: u64,
        size: u64,
        cost: Option<(f64, String)>,
    ) {
        self.usage_seen = true;
        let cost_usd = match cost {
            Some((amount, currency)) if currency.eq_ignore_ascii_case("USD") => {
                let grew = (amount - self.cost_so_far).max(0.0);
                self.cost_so_far = amount.max(self.cost_so_far);
                grew
            }
            _ => 0.0,
        };
        team.add_usage(id, used, 0, cost_usd);
        team.emit(
            id,
            EventKind::Usage {
                model: team.model(id).unwrap_or_default(),
                prompt_tokens: used,
                completion_tokens: 0,
                cost_usd,
                context_tokens: used,
                context_window: size,
                cached_tokens: 0,
            },
        );
    }

    /// The prompt ended: its last words as an item; returns them (its last words of the
    /// prompt when it said nothing after its last call). Calls it left open end unknown.
    pub fn finish(&mut self, team: &Team, id: AgentId) -> String {
        let open: Vec<String> = self.open.keys().cloned().collect();
        for call in open {
            let unsaid = Some("(the agent did not say how this call ended)".to_string());
            self.progress(team, id, &call, Some("completed"), unsaid);
        }
        self.flush(team, id, Vec::new());
        std::mem::take(&mut self.last_words)
    }
}
