//! Turning a sequence of streamed chunks into one [`ChatResponse`].
//!
//! Kept free of HTTP so it can be tested on hand-written chunks.

use super::wire::{ChatChunk, ToolCallDelta};
use super::{ChatResponse, ModelError, TokenUsage};
use crate::protocol::{Reasoning, ToolCall};
use serde_json::Value;
use std::collections::HashMap;
use std::hash::Hash;

/// A tool call being assembled from its deltas.
#[derive(Debug, Default)]
struct PartialCall {
    index: u32,
    id: String,
    name: String,
    arguments: String,
}

/// What turns one attempt's stream into an answer, whichever wire it came on.
pub(crate) trait Assemble {
    type Chunk;
    /// Adds one chunk; returns the text it carried (empty if none), for progress reports.
    fn push(&mut self, chunk: Self::Chunk) -> Result<String, ModelError>;
    /// The answer, or why the stream did not make one.
    fn finish(self) -> Result<ChatResponse, ModelError>;
}

/// The calls of one answer as their deltas come, each kept where its key first came: a
/// response may carry thousands, so a key finds its call without a scan. Both wires'.
#[derive(Debug)]
pub(super) struct Slots<K, T> {
    items: Vec<T>,
    positions: HashMap<K, usize>,
}

impl<K, T> Default for Slots<K, T> {
    fn default() -> Self {
        Self {
            items: Vec::new(),
            positions: HashMap::new(),
        }
    }
}

impl<K: Hash + Eq, T: Default> Slots<K, T> {
    /// The item of `key`, a new one at the end when the key is new.
    pub fn get(&mut self, key: K) -> &mut T {
        let next = self.items.len();
        let pos = *self.positions.entry(key).or_insert(next);
        if pos == next {
            self.items.push(T::default());
        }
        &mut self.items[pos]
    }

    pub fn last(&self) -> Option<&T> {
        self.items.last()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The items in the order their keys first came.
    pub fn into_items(self) -> Vec<T> {
        self.items
    }
}

/// A stream that stopped before the server said the answer was over (connection cut, or
/// the server stopped mid-answer), on either wire.
pub(super) fn ended_early() -> ModelError {
    ModelError::StreamBroken("the stream ended before the model finished its answer".to_string())
}

/// The answer of a finished stream, on either wire: its calls as (id, name, arguments) in
/// order, each given an id where the model sent none.
pub(super) fn answer(
    text: String,
    calls: impl IntoIterator<Item = (String, String, String)>,
    usage: Option<TokenUsage>,
    finish_reason: String,
    reasoning: Vec<Reasoning>,
) -> ChatResponse {
    ChatResponse {
        text,
        tool_calls: calls
            .into_iter()
            .map(|(id, name, arguments)| tool_call(id, name, arguments))
            .collect(),
        usage,
        finish_reason: Some(finish_reason),
        reasoning,
    }
}

/// Accumulates one attempt's chunks. A new attempt starts with a new assembler, so
/// partial output of a failed attempt never leaks into the answer.
#[derive(Debug, Default)]
pub(crate) struct StreamAssembler {
    text: String,
    calls: Slots<u32, PartialCall>,
    usage: Option<TokenUsage>,
    finish_reason: Option<String>,
}

impl StreamAssembler {
    pub fn new() -> Self {
        Self::default()
    }

    fn push_tool_delta(&mut self, d: ToolCallDelta) {
        let index = match d.index {
            Some(i) => i,
            // No index (some servers): a new id starts a new call, otherwise it continues
            // the last one.
            None => match (&d.id, self.calls.last()) {
                (Some(id), Some(last)) if !last.id.is_empty() && *id != last.id => last.index + 1,
                (_, Some(last)) => last.index,
                (_, None) => 0,
            },
        };
        let call = self.calls.get(index);
        call.index = index;
        if let Some(id) = d.id.filter(|s| !s.is_empty())
            && call.id.is_empty()
        {
            call.id = id;
        }
        if let Some(f) = d.function {
            if let Some(name) = f.name.filter(|s| !s.is_empty())
                && call.name.is_empty()
            {
                call.name = name;
            }
            match f.arguments {
                Some(serde_json::Value::String(s)) => call.arguments.push_str(&s),
                Some(serde_json::Value::Null) | None => {}
                Some(other) => call.arguments.push_str(&other.to_string()),
            }
        }
    }
}

impl Assemble for StreamAssembler {
    type Chunk = ChatChunk;

    fn push(&mut self, chunk: ChatChunk) -> Result<String, ModelError> {
        if let Some(err) = chunk.error {
            return Err(error_in_stream(&err));
        }
        if let Some(u) = chunk.usage {
            self.usage = Some(u.into());
        }
        let mut text = String::new();
        // We ask for one choice; ignore any other a server might add.
        for choice in chunk
            .choices
            .into_iter()
            .filter(|c| c.index.unwrap_or(0) == 0)
        {
            if let Some(delta) = choice.delta {
                if let Some(t) = delta.content {
                    text.push_str(&t);
                }
                for d in delta.tool_calls {
                    self.push_tool_delta(d);
                }
            }
            if let Some(r) = choice.finish_reason.filter(|r| !r.is_empty()) {
                self.finish_reason = Some(r);
            }
        }
        self.text.push_str(&text);
        Ok(text)
    }

    /// Without a finish_reason the stream did not end properly, whatever `[DONE]` said.
    fn finish(self) -> Result<ChatResponse, ModelError> {
        let finish_reason = self.finish_reason.ok_or_else(ended_early)?;
        let mut calls = self.calls.into_items();
        calls.sort_by_key(|c| c.index);
        let calls = calls.into_iter().map(|c| (c.id, c.name, c.arguments));
        Ok(answer(
            self.text,
            calls,
            self.usage,
            finish_reason,
            Vec::new(),
        ))
    }
}

/// A call as the model sent it; one without an id gets one, so its result can name it.
pub(super) fn tool_call(id: String, name: String, arguments: String) -> ToolCall {
    let id = if id.is_empty() {
        format!("call_{}", uuid::Uuid::new_v4().simple())
    } else {
        id
    };
    ToolCall {
        id,
        name,
        arguments,
    }
}

/// An error inside a stream (chat's `{"error": …}` payload, Responses' `error` event or
/// failed response), as the HTTP status it stands for, so the retry rules apply on either
/// wire: a numeric code is the status; OpenAI's named codes name none
/// (`rate_limit_exceeded` is a 429, `invalid_*` a 400); anything else is a 500, worth
/// another attempt. A context overflow is [`ModelError::ContextOverflow`].
pub(super) fn error_in_stream(error: &Value) -> ModelError {
    let message = match error.get("message").and_then(Value::as_str) {
        Some(m) => m.to_string(),
        None if error.is_null() => "the server reported an error without a message".to_string(),
        None => error.to_string(),
    };
    if let Some(said) = super::overflow::in_stream(error, &message) {
        return ModelError::ContextOverflow { message, said };
    }
    let code = error.get("code").unwrap_or(&Value::Null);
    let code_str = code.as_str().unwrap_or("");
    let numeric = code
        .as_u64()
        .or_else(|| code_str.parse().ok())
        .filter(|c| (400..600).contains(c))
        .and_then(|c| u16::try_from(c).ok());
    let status = numeric.unwrap_or(match code_str {
        "rate_limit_exceeded" => 429,
        c if c.starts_with("invalid") => 400,
        _ => 500,
    });
    let message = if code_str.is_empty() || numeric.is_some() {
        message
    } else {
        format!("{message} ({code_str})")
    };
    ModelError::Http { status, message }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn chunk(v: serde_json::Value) -> ChatChunk {
        serde_json::from_value(v).unwrap()
    }

    fn delta(d: serde_json::Value) -> ChatChunk {
        chunk(json!({"choices": [{"index": 0, "delta": d, "finish_reason": null}]}))
    }

    fn finish(reason: &str) -> ChatChunk {
        chunk(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}))
    }

    #[test]
    fn text_deltas_concatenate() {
        let mut a = StreamAssembler::new();
        assert_eq!(
            a.push(delta(json!({"role": "assistant", "content": "Hel"})))
                .unwrap(),
            "Hel"
        );
        assert_eq!(a.push(delta(json!({"content": "lo"}))).unwrap(), "lo");
        assert_eq!(a.push(finish("stop")).unwrap(), "");
        a.push(chunk(json!({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7, "prompt_tokens_details": {"cached_tokens": 3}}})))
            .unwrap();
        let r = a.finish().unwrap();
        assert_eq!(r.text, "Hello");
        assert!(r.tool_calls.is_empty());
        assert_eq!(r.finish_reason.as_deref(), Some("stop"));
        assert_eq!(
            r.usage,
            Some(TokenUsage {
                prompt_tokens: 5,
                completion_tokens: 2,
                cached_tokens: 3,
            })
        );
    }

    #[test]
    fn tool_calls_assemble_by_index() {
        let mut a = StreamAssembler::new();
        let head = |i: u32, id: &str, name: &str| {
            delta(
                json!({"tool_calls": [{"index": i, "id": id, "type": "function",
                "function": {"name": name, "arguments": ""}}]}),
            )
        };
        let frag = |i: u32, s: &str| {
            delta(json!({"tool_calls": [{"index": i, "function": {"arguments": s}}]}))
        };
        a.push(head(0, "c0", "read_file")).unwrap();
        a.push(frag(0, "{\"pa")).unwrap();
        a.push(head(1, "c1", "grep")).unwrap();
        a.push(frag(1, "{\"q\":1}")).unwrap();
        a.push(frag(0, "th\":\"x\"}")).unwrap();
        a.push(finish("tool_calls")).unwrap();
        let r = a.finish().unwrap();
        assert_eq!(
            r.tool_calls,
            vec![
                ToolCall {
                    id: "c0".into(),
                    name: "read_file".into(),
                    arguments: r#"{"path":"x"}"#.into()
                },
                ToolCall {
                    id: "c1".into(),
                    name: "grep".into(),
                    arguments: r#"{"q":1}"#.into()
                },
            ]
        );
    }

    #[test]
    fn tool_calls_without_index_or_id_still_assemble() {
        let mut a = StreamAssembler::new();
        a.push(delta(
            json!({"tool_calls": [{"id": "a", "function": {"name": "f", "arguments": {"x": 1}}}]}),
        ))
        .unwrap();
        a.push(delta(
            json!({"tool_calls": [{"id": "b", "function": {"name": "g", "arguments": "{}"}}]}),
        ))
        .unwrap();
        a.push(delta(
            json!({"tool_calls": [{"index": 2, "function": {"name": "h", "arguments": "{}"}}]}),
        ))
        .unwrap();
        a.push(finish("tool_calls")).unwrap();
        let r = a.finish().unwrap();
        let names: Vec<_> = r.tool_calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["f", "g", "h"]);
        assert_eq!(r.tool_calls[0].arguments, r#"{"x":1}"#);
        assert!(r.tool_calls[2].id.starts_with("call_"));
    }

    #[test]
    fn missing_finish_reason_is_a_broken_stream() {
        let mut a = StreamAssembler::new();
        a.push(delta(json!({"content": "half an ans"}))).unwrap();
        assert!(matches!(a.finish(), Err(ModelError::StreamBroken(_))));
    }

    #[test]
    fn error_payload_in_stream_is_an_http_error() {
        let mut a = StreamAssembler::new();
        let e = a
            .push(chunk(
                json!({"error": {"message": "overloaded", "code": 503}}),
            ))
            .unwrap_err();
        assert!(
            matches!(e, ModelError::Http { status: 503, ref message } if message == "overloaded")
        );
        assert!(e.is_retryable());
        // A named code means the same as on the Responses wire: one rule for both.
        let e = StreamAssembler::new()
            .push(chunk(
                json!({"error": {"message": "slow down", "code": "rate_limit_exceeded"}}),
            ))
            .unwrap_err();
        assert!(
            matches!(e, ModelError::Http { status: 429, ref message } if message == "slow down (rate_limit_exceeded)"),
            "{e:?}"
        );
        let e = StreamAssembler::new()
            .push(chunk(json!({"error": {"code": "invalid_request"}})))
            .unwrap_err();
        assert!(matches!(e, ModelError::Http { status: 400, .. }), "{e:?}");
    }
}
