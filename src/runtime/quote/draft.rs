//! A worker about to be spawned, as its quote sees it: what its first request is built
//! from, and that request's size. Plain data, so the agent tools can name it.

use crate::context::estimate_item;
use crate::protocol::{AgentId, HistoryItem};
use crate::roles::Role;

/// A worker about to be spawned, as its first request will be built.
pub struct Draft<'a> {
    /// Its id when it has one already (a spawn), so the quote names it.
    pub agent_id: Option<AgentId>,
    pub role: &'a Role,
    pub model: &'a str,
    /// Its tools, as narrowed for it.
    pub tools: &'a [String],
    /// Its spawn's instructions, appended to its role's prompt.
    pub instructions: Option<&'a str>,
    /// Its first message: task, context, files, board brief.
    pub first_message: &'a str,
}

/// A worker's first request as the session will build it, sized.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FirstRequest {
    /// The whole request, estimated.
    pub tokens: u64,
    /// Its prompt and tools: the part every worker of the same role and tools shares.
    pub prefix_tokens: u64,
    /// Tells prefixes apart: equal for byte-equal prompts, tools and model.
    pub prefix: u64,
}

impl FirstRequest {
    /// Only its first message sized: where no session builds the request.
    pub fn message_only(first_message: &str) -> Self {
        Self {
            tokens: estimate_item(&HistoryItem::user(first_message)),
            ..Self::default()
        }
    }
}
