//! One model call of an agent, as the engine builds it and the layers may shape it.

use crate::model::ChatRequest;

/// One model call, ready to send.
pub struct RequestSetup {
    pub request: ChatRequest,
    pub max_iterations: u32,
    /// Estimated tokens of the system prompt and the tools: what a request sends besides
    /// the history.
    pub fixed_tokens: u64,
    /// The model's context window.
    pub window: u64,
}
