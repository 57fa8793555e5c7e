//! Talking to an OpenAI-compatible server on chat completions or Responses: streaming,
//! tool-call delta assembly, retries and usage. The runtime sees only [`ModelClient`].

pub mod demo;
pub mod discover;
pub mod families;
mod http;
pub mod in_flight;
pub mod limiter;
mod openai;
mod overflow;
mod probe;
mod responses;
mod responses_stream;
mod retry;
mod stream;
pub mod text_calls;
mod text_protocol;
mod wire;

pub use crate::config::WireApi;
pub use openai::{ClientSettings, OpenAiClient};
pub use overflow::Overflow;
pub use probe::{list_models, probe_wire};

use crate::protocol::{HistoryItem, Reasoning, ToolCall};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// What the model is told about one tool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON schema of the arguments object.
    pub parameters: serde_json::Value,
    /// Where the Responses wire may offer it as a freeform (`custom`) tool, as Codex offers
    /// `apply_patch`: the model writes its input as plain text in this grammar.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub freeform: Option<Freeform>,
}

/// A freeform tool's input: plain text in a Lark grammar, which becomes the value of one
/// argument (`argument`) of the tool's JSON arguments.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Freeform {
    pub argument: String,
    pub grammar: String,
}

/// One model call. The system prompt is sent first, then the history in order.
#[derive(Clone, Debug)]
pub struct ChatRequest {
    pub model: String,
    pub system_prompt: String,
    /// Shared with the agent that sends it: building a request copies no history.
    pub history: Arc<Vec<HistoryItem>>,
    /// Shared between the requests of every agent with the same tools: built once.
    pub tools: Arc<[ToolSpec]>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChatResponse {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Option<TokenUsage>,
    pub finish_reason: Option<String>,
    /// Reasoning items (Responses wire only), kept in the history item for the next call.
    pub reasoning: Vec<Reasoning>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Of the prompt tokens, those the server took from its prompt cache (where it says:
    /// `prompt_tokens_details.cached_tokens`, `input_tokens_details.cached_tokens`).
    #[serde(default)]
    pub cached_tokens: u64,
}

/// Reported while a call is under way.
#[derive(Clone, Debug, PartialEq)]
pub enum ModelProgress {
    TextDelta(String),
    /// A chunk arrived that carried no text (tool-call arguments, usage): the call is
    /// alive, which stall detection wants to know.
    Received,
    /// The call will be tried again; front ends drop any partial text they showed.
    /// `attempt` is the number of the attempt about to start (2 for the first retry),
    /// out of `max_attempts` (= retries + 1); `delay` is the wait before it.
    Retrying {
        attempt: u32,
        max_attempts: u32,
        delay: Duration,
        reason: String,
        /// The server said 429 or 503: it has more than it can serve.
        overloaded: bool,
    },
}

impl ModelProgress {
    /// The `retrying` event a retry is told to the front ends as (`None`: not a retry).
    pub fn retry_event(&self) -> Option<crate::protocol::EventKind> {
        let ModelProgress::Retrying {
            attempt,
            max_attempts,
            delay,
            reason,
            ..
        } = self
        else {
            return None;
        };
        Some(crate::protocol::EventKind::Retrying {
            attempt: *attempt,
            max_attempts: *max_attempts,
            delay_ms: delay.as_millis() as u64,
            reason: reason.clone(),
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("cancelled")]
    Cancelled,
    #[error("the model server answered {status}: {message}")]
    Http { status: u16, message: String },
    #[error("cannot reach the model server at {base_url}: {message}")]
    Connection { base_url: String, message: String },
    /// The first connection failed and the server has never answered: a wrong URL or a
    /// server not started, which retrying does not fix, so it is said at once.
    #[error("cannot reach the model server at {base_url}: {message}")]
    Unreachable { base_url: String, message: String },
    #[error("the model's stream broke off: {0}")]
    StreamBroken(String),
    #[error("the model server sent nothing for {0:?}")]
    IdleTimeout(Duration),
    #[error("the model server sent a response squad cannot read: {0}")]
    BadResponse(String),
    /// The request does not fit the model's context window (what the server said of the
    /// window and the request's size). Retrying the same request cannot help; compacting
    /// can.
    #[error("the conversation is too long for the model's context window: {message}")]
    ContextOverflow { message: String, said: Overflow },
    /// The provider refuses every request without a key (OpenAI's own API); nothing was
    /// sent. The message is the fix.
    #[error("{0}")]
    MissingKey(String),
}

impl ModelError {
    /// The server has more than it can serve (429, 503): fewer requests at once may help.
    pub fn is_overload(&self) -> bool {
        matches!(
            self,
            Self::Http {
                status: 429 | 503,
                ..
            }
        )
    }

    /// Whether another attempt may succeed (429, 5xx, connection trouble, broken stream).
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Http { status, .. } => *status == 429 || *status >= 500,
            Self::Connection { .. } | Self::StreamBroken(_) | Self::IdleTimeout(_) => true,
            Self::Cancelled
            | Self::Unreachable { .. }
            | Self::BadResponse(_)
            | Self::ContextOverflow { .. }
            | Self::MissingKey(_) => false,
        }
    }
}

/// What a local server says of itself: llama.cpp's `GET /props`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServerProps {
    /// The context size of one slot (`n_ctx`).
    pub window: Option<u64>,
    /// How many requests it serves at once (`total_slots`).
    pub slots: Option<u32>,
}

#[async_trait]
pub trait ModelClient: Send + Sync {
    /// Runs one chat completion, streaming, with retries. Returns the assembled answer.
    async fn stream_chat(
        &self,
        request: &ChatRequest,
        progress: &(dyn Fn(ModelProgress) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<ChatResponse, ModelError>;

    /// What the server says of itself (llama.cpp's `/props`), where it says.
    async fn server_props(&self) -> ServerProps {
        ServerProps::default()
    }

    /// The models the server serves, for `/model` to offer.
    async fn list_models(&self) -> Result<Vec<String>, ModelError> {
        Err(ModelError::BadResponse(
            "this model client does not list its models".into(),
        ))
    }
}
