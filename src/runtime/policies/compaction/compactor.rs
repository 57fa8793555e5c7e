//! Compacting an agent's conversation so a long session keeps fitting its model's window:
//! the model summarizes the older part (a request without tools), and the summary takes
//! its place. The system prompt, the task (the first user message) and the most recent
//! turns stay word for word, and a tool call never loses its result: the kept part never
//! starts on a tool result. Runs in the agent's own task (before a model call and after an
//! overflow, as the compaction layer asks, or for `/compact` between turns), so nothing
//! else changes the history meanwhile. The summary request is the agent's own model call,
//! sent through its layers ([`Summarize`]).

use crate::config::{Config, ContextConfig};
use crate::context::{estimate_item, estimate_request};
use crate::model::{ChatRequest, ChatResponse};
use crate::protocol::{AgentId, HistoryItem};
use crate::runtime::request::RequestSetup;
use crate::runtime::team::{Compaction, Team};
use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;

/// What compacting needs: the config (the thresholds).
pub struct Compactor {
    pub config: Arc<Config>,
    /// By model: how many times squad's estimate the server counted a refused request
    /// (`fit.rs`).
    pub scales: std::sync::Mutex<std::collections::HashMap<String, f64>>,
}

/// The last user message of a summary request.
const INSTRUCTION: &str = "[squad] This conversation is about to be compacted to fit the \
context window: everything after the first user message will be replaced by what you write \
now. Summarize the conversation so far so that you can continue your work from the summary \
alone:\n\
- Goals: the task and what was asked, with the details that matter.\n\
- Decisions made, and why.\n\
- Files read, created or changed (paths), and what matters in them.\n\
- Commands and tests run, and their results.\n\
- What is done, what is left, and the next step.\n\
- Open questions.\n\
Be concise and concrete; keep exact paths, names, numbers and error messages. Do not call \
tools: answer with the summary only.";

/// Share of the room left for history (below the compaction threshold) that the kept
/// recent turns may take, and the share the summary may take.
const TAIL_SHARE: f64 = 0.5;
const SUMMARY_SHARE: f64 = 0.25;
/// Bytes assumed per token when turning a token budget into a text cap.
const BYTES_PER_TOKEN: u64 = 3;
/// Caps on each tool output and long argument inside a summary request, tried in turn
/// until the request fits the window.
const SUMMARY_ITEM_CAPS: [usize; 3] = [4096, 1024, 256];

#[derive(Debug, thiserror::Error)]
pub enum CompactError {
    #[error("nothing to compact: the conversation is only the task and the most recent turns")]
    NothingToCompact,
    #[error("the summary request failed: {0}")]
    Failed(String),
    #[error("the model answered the summary request with no text")]
    EmptySummary,
    #[error("cancelled")]
    Cancelled,
    #[error("the agent no longer exists")]
    Gone,
    #[error("this session runs without compaction")]
    Off,
}

/// Sends a summary request as the agent's own model call and brings its answer (its
/// usage counted on the agent).
#[async_trait]
pub trait Summarize: Send + Sync {
    async fn summarize(&self, request: ChatRequest) -> Result<ChatResponse, CompactError>;
}

/// Where to cut: keep `history[..head]` and `history[tail..]`, summarize the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    pub head: usize,
    pub tail: usize,
}

/// Who asked for a compaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// The threshold, or an overflow: keep as much recent work as the budget allows.
    Window,
    /// The user (`/compact`): keep only the latest turn, from the last user message on.
    User,
}

impl Compactor {
    /// The estimated tokens of `agent`'s next request when they pass the threshold
    /// (`context.compact_at` of the window), else `None`.
    pub fn due(&self, team: &Team, agent: AgentId, setup: &RequestSetup) -> Option<u64> {
        let tokens = team.context_tokens(agent, setup.fixed_tokens);
        let threshold = (setup.window as f64 * self.config.context.compact_at) as u64;
        (tokens >= threshold).then_some(tokens)
    }

    /// Compacts `agent`'s conversation now (`setup` is its next request, let go of before
    /// the history is replaced), the summary asked through `ask`; returns the estimated
    /// tokens of its next request.
    ///
    /// `scale`: how many times squad's own estimate the server counted the model's
    /// requests (1 until a refusal said otherwise); every budget is planned in squad's
    /// estimate, so it is divided by it.
    pub async fn compact(
        &self,
        team: &Team,
        agent: AgentId,
        setup: RequestSetup,
        trigger: Trigger,
        scale: f64,
        ask: &dyn Summarize,
    ) -> Result<u64, CompactError> {
        compact(self, team, agent, setup, (trigger, scale), ask).await
    }

    /// The last resort when nothing is left to summarize: every tool output and long
    /// argument in the history cut, harder each pass, until the request fits the
    /// threshold (in squad's estimate, scaled). `None` when cutting changes nothing.
    pub fn cut_outputs(
        &self,
        team: &Team,
        agent: AgentId,
        setup: &RequestSetup,
        scale: f64,
    ) -> Option<u64> {
        let threshold = (setup.window as f64 * self.config.context.compact_at / scale) as u64;
        let room = threshold.saturating_sub(setup.fixed_tokens);
        let history = &setup.request.history;
        let mut cut = Vec::new();
        for cap in SUMMARY_ITEM_CAPS {
            cut = history.iter().map(|item| shrink(item, cap)).collect();
            if cut.iter().map(estimate_item).sum::<u64>() <= room {
                break;
            }
        }
        if cut == **history {
            return None;
        }
        let tokens_before = team.context_tokens(agent, setup.fixed_tokens);
        team.rewrite_history(agent, cut, tokens_before, setup.window, setup.fixed_tokens)
    }
}

/// What a request that cannot be made smaller is made of, for the user: its size by
/// squad's estimate and its biggest part.
pub fn largest_part(setup: &RequestSetup) -> String {
    let history = &setup.request.history;
    let total = setup.fixed_tokens + history.iter().map(estimate_item).sum::<u64>();
    let biggest = history
        .iter()
        .map(|item| (estimate_item(item), item))
        .max_by_key(|(tokens, _)| *tokens);
    let part = match biggest {
        Some((tokens, item)) if tokens > setup.fixed_tokens => {
            let what = match item {
                HistoryItem::User { .. } => "a message of the user".to_string(),
                HistoryItem::ToolResult { name, .. } => format!("the output of {name}"),
                HistoryItem::Assistant { .. } => "an answer of the model".to_string(),
                HistoryItem::Notice { .. } => "a notice".to_string(),
                _ => "one item of the conversation".to_string(),
            };
            format!("{what}, about {tokens} tokens")
        }
        _ => format!(
            "the system prompt and the tools, about {} tokens",
            setup.fixed_tokens
        ),
    };
    format!("the request is about {total} tokens by squad's estimate; its largest part is {part}")
}

async fn compact(
    me: &Compactor,
    team: &Team,
    agent: AgentId,
    setup: RequestSetup,
    (trigger, scale): (Trigger, f64),
    ask: &dyn Summarize,
) -> Result<u64, CompactError> {
    let tokens_before = team.context_tokens(agent, setup.fixed_tokens);
    let sizes = sizes(&me.config.context, setup.window, setup.fixed_tokens, scale);
    let history = setup.request.history.clone();
    let keep = match trigger {
        Trigger::Window => sizes.keep,
        Trigger::User => sizes.keep.min(latest_turn_tokens(&history)),
    };
    let plan = plan(&history, keep).ok_or(CompactError::NothingToCompact)?;
    let request = summary_request(&setup, &history[..plan.tail], sizes.request);
    let (window, fixed_tokens) = (setup.window, setup.fixed_tokens);
    // The request shares the history; let go of it before the history is replaced.
    drop(setup);
    drop(history);

    let response = ask.summarize(request).await?;
    let summary = response.text.trim();
    if summary.is_empty() {
        return Err(CompactError::EmptySummary);
    }
    let cap = ((sizes.room as f64 * SUMMARY_SHARE) as u64 * BYTES_PER_TOKEN).max(1024) as usize;
    let summary = cut(summary, cap);
    team.compact_history(
        agent,
        Compaction {
            head: plan.head,
            tail: plan.tail,
            summary,
            tokens_before,
            context_window: window,
            fixed_tokens,
        },
    )
    .ok_or(CompactError::Gone)
}

/// The budgets of one compaction, in squad's own estimate.
#[derive(Debug, PartialEq)]
struct Sizes {
    /// What the history may take below the threshold, once prompt and tools are sent.
    room: u64,
    /// The recent part kept word for word (before a `/compact` narrows it).
    keep: u64,
    /// The most the summary request may take.
    request: u64,
}

/// The budgets for a `window` whose server counts `scale` times squad's estimate: each is
/// divided by it, as squad plans in its own estimate.
fn sizes(context: &ContextConfig, window: u64, fixed_tokens: u64, scale: f64) -> Sizes {
    let est = |tokens: f64| (tokens / scale.max(1.0)) as u64;
    let threshold = est(window as f64 * context.compact_at);
    let room = threshold.saturating_sub(fixed_tokens);
    let keep = est(window as f64 * context.keep_recent).min((room as f64 * TAIL_SHARE) as u64);
    Sizes {
        room,
        keep,
        request: est((window - window / 8) as f64),
    }
}

/// Keeps everything up to the first user message (the task) and the newest items within
/// `keep_tokens`, moved forward so the kept part never starts on a tool result. `None`
/// when nothing (or only an earlier summary) lies between.
pub(crate) fn plan(history: &[HistoryItem], keep_tokens: u64) -> Option<Plan> {
    let head = history
        .iter()
        .position(|i| matches!(i, HistoryItem::User { .. }))
        .map_or(0, |p| p + 1);
    let mut tail = history.len();
    let mut kept = 0;
    while tail > head {
        let t = estimate_item(&history[tail - 1]);
        if kept + t > keep_tokens {
            break;
        }
        kept += t;
        tail -= 1;
    }
    while tail < history.len() && matches!(history[tail], HistoryItem::ToolResult { .. }) {
        tail += 1;
    }
    match &history[head..tail] {
        [] | [HistoryItem::Summary { .. }] => None,
        _ => Some(Plan { head, tail }),
    }
}

/// Tokens from the last user message to the end.
fn latest_turn_tokens(history: &[HistoryItem]) -> u64 {
    let from = history
        .iter()
        .rposition(|i| matches!(i, HistoryItem::User { .. }))
        .unwrap_or(0);
    history[from..].iter().map(estimate_item).sum()
}

/// The agent's own prompt and the part to summarize, without tools, ending with the
/// instruction. Tool outputs and long arguments are cut (the summary needs their gist, and
/// the request must fit even when the conversation no longer does).
fn summary_request(setup: &RequestSetup, part: &[HistoryItem], budget: u64) -> ChatRequest {
    let mut items = Vec::new();
    for cap in SUMMARY_ITEM_CAPS {
        items = part.iter().map(|item| shrink(item, cap)).collect();
        items.push(HistoryItem::user(INSTRUCTION));
        if estimate_request(&setup.request.system_prompt, &[], &items) <= budget {
            break;
        }
    }
    ChatRequest {
        model: setup.request.model.clone(),
        system_prompt: setup.request.system_prompt.clone(),
        history: Arc::new(items),
        tools: Arc::from(Vec::new()),
    }
}

/// The item with tool output and long string arguments cut to about `cap` bytes. Arguments
/// stay valid JSON: servers parse them to render their chat template.
fn shrink(item: &HistoryItem, cap: usize) -> HistoryItem {
    match item {
        HistoryItem::ToolResult {
            call_id,
            name,
            output,
            is_error,
        } if output.len() > cap => HistoryItem::ToolResult {
            call_id: call_id.clone(),
            name: name.clone(),
            output: cut(output, cap),
            is_error: *is_error,
        },
        HistoryItem::Assistant {
            text,
            tool_calls,
            reasoning,
        } if tool_calls.iter().any(|c| c.arguments.len() > cap) => {
            let mut calls = tool_calls.clone();
            for call in &mut calls {
                if call.arguments.len() > cap
                    && let Ok(mut args) = serde_json::from_str::<Value>(&call.arguments)
                {
                    if let Value::Object(map) = &mut args {
                        for value in map.values_mut() {
                            if let Value::String(s) = value
                                && s.len() > cap
                            {
                                *s = cut(s, cap);
                            }
                        }
                    }
                    call.arguments = args.to_string();
                }
            }
            HistoryItem::Assistant {
                text: text.clone(),
                tool_calls: calls,
                reasoning: reasoning.clone(),
            }
        }
        other => other.clone(),
    }
}

/// `s` cut to about `cap` bytes on a char boundary, saying how much was left out.
fn cut(s: &str, cap: usize) -> String {
    if s.len() <= cap {
        return s.to_string();
    }
    let mut end = cap;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n[… {} more bytes cut]", &s[..end], s.len() - end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ToolCall;

    #[test]
    fn sizes_are_planned_in_squads_estimate() {
        let context = ContextConfig {
            compact_at: 0.8,
            keep_recent: 0.3,
            ..ContextConfig::default()
        };
        let plain = Sizes {
            room: 70_000,
            keep: 30_000,
            request: 87_500,
        };
        assert_eq!(sizes(&context, 100_000, 10_000, 1.0), plain);
        // A server that never counts less than squad is taken at squad's word.
        assert_eq!(sizes(&context, 100_000, 10_000, 0.5), plain);
        // One that counts twice as much halves every budget; the kept part stays within
        // its share of the room.
        let halved = Sizes {
            room: 30_000,
            keep: 15_000,
            request: 43_750,
        };
        assert_eq!(sizes(&context, 100_000, 10_000, 2.0), halved);
    }

    fn call(id: &str) -> HistoryItem {
        HistoryItem::Assistant {
            text: String::new(),
            tool_calls: vec![ToolCall {
                id: id.into(),
                name: "read_file".into(),
                arguments: "{}".into(),
            }],
            reasoning: Vec::new(),
        }
    }

    fn result(id: &str, bytes: usize) -> HistoryItem {
        HistoryItem::ToolResult {
            call_id: id.into(),
            name: "read_file".into(),
            output: "x".repeat(bytes),
            is_error: false,
        }
    }

    #[test]
    fn keeps_the_task_and_recent_turns_and_never_splits_a_call_from_its_result() {
        let mut h = vec![HistoryItem::notice("context"), HistoryItem::user("task")];
        for i in 0..10 {
            h.push(call(&format!("c{i}")));
            h.push(result(&format!("c{i}"), 350));
        }
        // Each result is ~104 tokens, each call ~15: room for the last two pairs.
        let p = plan(&h, 250).unwrap();
        assert_eq!(p.head, 2);
        assert_eq!(p.tail, h.len() - 4);
        assert!(matches!(h[p.tail], HistoryItem::Assistant { .. }));
        // A budget that ends between a call and its result moves the cut past the result.
        let p = plan(&h, 110).unwrap();
        assert_eq!(p.tail, h.len(), "the result alone fits, its call does not");
        // Nothing between the task and the tail: nothing to do.
        assert_eq!(plan(&h[..4], 10_000), None);
        let summarized = vec![
            HistoryItem::user("task"),
            HistoryItem::Summary { text: "s".into() },
            call("z"),
            result("z", 10),
        ];
        assert_eq!(plan(&summarized, 10_000), None);
    }

    #[test]
    fn shrinking_keeps_arguments_valid_json() {
        let item = HistoryItem::Assistant {
            text: "writing".into(),
            tool_calls: vec![ToolCall {
                id: "w".into(),
                name: "write_file".into(),
                arguments: serde_json::json!({"path": "a.rs", "content": "y".repeat(5000)})
                    .to_string(),
            }],
            reasoning: Vec::new(),
        };
        let HistoryItem::Assistant { tool_calls, .. } = shrink(&item, 100) else {
            panic!();
        };
        let args: Value = serde_json::from_str(&tool_calls[0].arguments).unwrap();
        assert_eq!(args["path"], "a.rs");
        assert!(args["content"].as_str().unwrap().len() < 200);
        let HistoryItem::ToolResult { output, .. } = shrink(&result("r", 5000), 100) else {
            panic!();
        };
        assert!(output.contains("4900 more bytes cut"));
    }
}
