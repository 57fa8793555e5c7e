//! The agent's `session/update`s as a small enum of squad's, what the runtime will turn
//! into a worker's events: its words, its thinking, its tool calls, its plan, its usage.

use agent_client_protocol::v1::schema::{ContentBlock, SessionUpdate, ToolCallContent};

/// One thing the agent said about its turn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AgentUpdate {
    /// A piece of its reply.
    Message(String),
    /// A piece of its thinking.
    Thought(String),
    /// A tool call it started.
    ToolCall {
        id: String,
        title: String,
        kind: String,
        status: String,
    },
    /// Progress of a tool call: what changed (`None`: the same as before).
    ToolCallUpdate {
        id: String,
        title: Option<String>,
        status: Option<String>,
        /// The text of its output, where it gave any.
        output: Option<String>,
    },
    /// Its plan, each entry with its status.
    Plan(Vec<(String, String)>),
    /// Tokens in its context (`used` of `size`).
    Usage { used: u64, size: u64 },
    /// Anything else, by its kind (commands, modes, titles...).
    Other(String),
}

/// A debug name of a schema enum (`EditFile` → `edit_file` is not needed: the name is
/// only shown and compared).
fn name(value: &impl serde::Serialize) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn text(block: &ContentBlock) -> Option<String> {
    match block {
        ContentBlock::Text(t) => Some(t.text.clone()),
        _ => None,
    }
}

impl AgentUpdate {
    pub fn from_acp(update: SessionUpdate) -> Self {
        match update {
            SessionUpdate::AgentMessageChunk(c) => {
                Self::Message(text(&c.content).unwrap_or_default())
            }
            SessionUpdate::AgentThoughtChunk(c) => {
                Self::Thought(text(&c.content).unwrap_or_default())
            }
            SessionUpdate::ToolCall(call) => Self::ToolCall {
                id: call.tool_call_id.0.to_string(),
                title: call.title,
                kind: name(&call.kind),
                status: name(&call.status),
            },
            SessionUpdate::ToolCallUpdate(u) => {
                let output: Vec<String> = u
                    .fields
                    .content
                    .iter()
                    .flatten()
                    .filter_map(|c| match c {
                        ToolCallContent::Content(c) => text(&c.content),
                        _ => None,
                    })
                    .collect();
                Self::ToolCallUpdate {
                    id: u.tool_call_id.0.to_string(),
                    title: u.fields.title,
                    status: u.fields.status.as_ref().map(name),
                    output: (!output.is_empty()).then(|| output.join("\n")),
                }
            }
            SessionUpdate::Plan(plan) => Self::Plan(
                plan.entries
                    .into_iter()
                    .map(|e| (e.content, name(&e.status)))
                    .collect(),
            ),
            SessionUpdate::UsageUpdate(u) => Self::Usage {
                used: u.used,
                size: u.size,
            },
            other => Self::Other(
                serde_json::to_value(&other)
                    .ok()
                    .and_then(|v| v.get("sessionUpdate")?.as_str().map(str::to_string))
                    .unwrap_or_default(),
            ),
        }
    }
}
