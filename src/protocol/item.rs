use serde::{Deserialize, Serialize};

/// One entry of an agent's conversation. The same items are sent to the model, written
/// to the session log and drawn by the front ends.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum HistoryItem {
    User {
        text: String,
    },
    Assistant {
        text: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
        /// Reasoning the Responses wire returned before this answer, passed back with the
        /// next request; the chat wire leaves it out.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        reasoning: Vec<Reasoning>,
    },
    ToolResult {
        call_id: String,
        name: String,
        output: String,
        #[serde(default)]
        is_error: bool,
    },
    /// Something the runtime tells the model (a handoff, workers' results arriving).
    Notice {
        text: String,
    },
    /// What compaction left of older items: the model's own summary of them. Sent as a
    /// `[squad]` user message.
    Summary {
        text: String,
    },
    /// The active persona changed; the next model call uses `to`'s prompt and tools.
    Handoff {
        from: String,
        to: String,
        reason: String,
        #[serde(default)]
        context: String,
    },
}

impl HistoryItem {
    pub fn user(text: impl Into<String>) -> Self {
        Self::User { text: text.into() }
    }

    pub fn notice(text: impl Into<String>) -> Self {
        Self::Notice { text: text.into() }
    }

    pub fn assistant(text: String, tool_calls: Vec<ToolCall>) -> Self {
        Self::Assistant {
            text,
            tool_calls,
            reasoning: Vec::new(),
        }
    }
}

/// A reasoning item of a Responses answer. Requests are stateless (`store: false`), so
/// the server forgets it: the next request carries it back, with the encrypted content
/// where the server gave it (OpenAI) or the text (local servers).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Reasoning {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub summary: Vec<String>,
    /// The reasoning text itself, where the server shows it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub content: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted_content: Option<String>,
}

impl Reasoning {
    /// Whether a stateless request can carry it back: an id alone names an item only a
    /// storing server keeps.
    pub fn can_pass_back(&self) -> bool {
        self.encrypted_content
            .as_deref()
            .is_some_and(|c| !c.is_empty())
            || !self.content.is_empty()
    }
}

/// A tool call as the model wrote it. `arguments` stays the raw string: the model may
/// have produced malformed JSON, and the error it gets back must quote what it sent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}
