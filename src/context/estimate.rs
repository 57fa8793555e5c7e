//! Token estimates for text a server has not counted yet. Deliberately on the high side
//! (code and JSON run at 3–4 bytes a token), so compaction comes a little early rather
//! than a request overflowing.

use crate::model::ToolSpec;
use crate::protocol::HistoryItem;

/// Bytes per token assumed, times two (3.5 bytes a token).
const BYTES_PER_TWO_TOKENS: u64 = 7;
/// What a message costs beyond its text (role, separators of the chat template).
const PER_MESSAGE: u64 = 4;

pub fn estimate_text(text: &str) -> u64 {
    (text.len() as u64 * 2).div_ceil(BYTES_PER_TWO_TOKENS)
}

/// One history item as a message. O(1) per field: only lengths are read.
pub fn estimate_item(item: &HistoryItem) -> u64 {
    let bytes = match item {
        HistoryItem::User { text }
        | HistoryItem::Notice { text }
        | HistoryItem::Summary { text } => text.len(),
        HistoryItem::Assistant {
            text, tool_calls, ..
        } => {
            text.len()
                + tool_calls
                    .iter()
                    .map(|c| c.id.len() + c.name.len() + c.arguments.len() + 24)
                    .sum::<usize>()
        }
        HistoryItem::ToolResult {
            call_id, output, ..
        } => call_id.len() + output.len(),
        HistoryItem::Handoff {
            from,
            to,
            reason,
            context,
        } => from.len() + to.len() + reason.len() + context.len() + 32,
    };
    (bytes as u64 * 2).div_ceil(BYTES_PER_TWO_TOKENS) + PER_MESSAGE
}

/// The `tools` array of a request.
pub fn estimate_tools(tools: &[ToolSpec]) -> u64 {
    tools
        .iter()
        .map(|t| {
            let bytes = t.name.len() + t.description.len() + t.parameters.to_string().len() + 40;
            (bytes as u64 * 2).div_ceil(BYTES_PER_TWO_TOKENS)
        })
        .sum()
}

/// A whole request: system prompt, tools and history.
pub fn estimate_request(system_prompt: &str, tools: &[ToolSpec], history: &[HistoryItem]) -> u64 {
    estimate_text(system_prompt)
        + PER_MESSAGE
        + estimate_tools(tools)
        + history.iter().map(estimate_item).sum::<u64>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_err_on_the_high_side_of_four_bytes_a_token() {
        assert_eq!(estimate_text(""), 0);
        let text = "x".repeat(3500);
        assert_eq!(estimate_text(&text), 1000);
        let item = HistoryItem::user(text);
        assert_eq!(estimate_item(&item), 1004);
        assert!(estimate_request("sys", &[], &[item]) > 1004);
    }
}
