//! The agent's `session/update`s as a small enum of squad's, what the runtime turns into a
//! worker's events: its words, its thinking, its tool calls, its plan, its usage.

use agent_client_protocol::v1::schema::{
    ContentBlock, SessionUpdate, ToolCallContent, ToolCallUpdateFields,
};
use std::path::PathBuf;

/// One thing the agent said about its turn.
#[derive(Clone, Debug, PartialEq)]
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
        detail: ToolDetail,
    },
    /// Progress of a tool call: what changed (`None`: the same as before).
    ToolCallUpdate {
        id: String,
        title: Option<String>,
        status: Option<String>,
        /// The text of its output, where it gave any.
        output: Option<String>,
        detail: ToolDetail,
    },
    /// Its plan, each entry with its status.
    Plan(Vec<(String, String)>),
    /// Tokens in its context (`used` of `size`), and the session's cumulative cost where
    /// the agent knows it (amount, currency).
    Usage {
        used: u64,
        size: u64,
        cost: Option<(f64, String)>,
    },
    /// Anything else, by its kind (commands, modes, titles...).
    Other(String),
}

/// What a tool call acts on, as far as the agent said: the files (`locations`), an
/// edit's change (`diffs`), its raw input. The approval shown to the user is built from it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolDetail {
    pub locations: Vec<PathBuf>,
    pub diffs: Vec<FileDiff>,
    pub raw_input: Option<serde_json::Value>,
    /// Its text content (a permission request's explanation, a command's output).
    pub text: Option<String>,
}

/// An edit as the agent describes it: the file's text before (none: a new file) and after.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileDiff {
    pub path: PathBuf,
    pub old_text: Option<String>,
    pub new_text: String,
}

impl ToolDetail {
    pub(super) fn of(fields: &ToolCallUpdateFields) -> Self {
        let content = fields.content.iter().flatten();
        let texts: Vec<String> = content
            .clone()
            .filter_map(|c| match c {
                ToolCallContent::Content(c) => text(&c.content),
                _ => None,
            })
            .collect();
        Self {
            locations: (fields.locations.iter().flatten())
                .map(|l| l.path.clone())
                .collect(),
            diffs: content
                .filter_map(|c| match c {
                    ToolCallContent::Diff(d) => Some(FileDiff {
                        path: d.path.clone(),
                        old_text: d.old_text.clone(),
                        new_text: d.new_text.clone(),
                    }),
                    _ => None,
                })
                .collect(),
            raw_input: fields.raw_input.clone(),
            text: (!texts.is_empty()).then(|| texts.join("\n")),
        }
    }

    /// Fills what `self` lacks from `other` (a later update adds to an earlier call).
    pub fn merge(&mut self, other: ToolDetail) {
        if !other.locations.is_empty() {
            self.locations = other.locations;
        }
        if !other.diffs.is_empty() {
            self.diffs = other.diffs;
        }
        if other.raw_input.is_some() {
            self.raw_input = other.raw_input;
        }
        if other.text.is_some() {
            self.text = other.text;
        }
    }
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
            SessionUpdate::ToolCall(call) => {
                let mut fields = ToolCallUpdateFields::new()
                    .content(call.content.clone())
                    .locations(call.locations.clone());
                fields.raw_input = call.raw_input.clone();
                Self::ToolCall {
                    id: call.tool_call_id.0.to_string(),
                    title: call.title,
                    kind: name(&call.kind),
                    status: name(&call.status),
                    detail: ToolDetail::of(&fields),
                }
            }
            SessionUpdate::ToolCallUpdate(u) => {
                let detail = ToolDetail::of(&u.fields);
                Self::ToolCallUpdate {
                    id: u.tool_call_id.0.to_string(),
                    title: u.fields.title,
                    status: u.fields.status.as_ref().map(name),
                    output: detail.text.clone(),
                    detail,
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
                cost: u.cost.map(|c| (c.amount, c.currency)),
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
