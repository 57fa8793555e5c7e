//! Turning a sequence of streamed chunks into one [`ChatResponse`].
//!
//! Kept free of HTTP so it can be tested on hand-written chunks.

use super::wire::{ChatChunk, ToolCallDelta};
use super::{ChatResponse, ModelError, TokenUsage};
use crate::protocol::ToolCall;

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

impl Assemble for StreamAssembler {
    type Chunk = ChatChunk;
    fn push(&mut self, chunk: ChatChunk) -> Result<String, ModelError> {
        StreamAssembler::push(self, chunk)
    }
    fn finish(self) -> Result<ChatResponse, ModelError> {
        StreamAssembler::finish(self)
    }
}

/// Accumulates one attempt's chunks. A new attempt starts with a new assembler, so
/// partial output of a failed attempt never leaks into the answer.
#[derive(Debug, Default)]
pub(crate) struct StreamAssembler {
    text: String,
    calls: Vec<PartialCall>,
    /// Where each call index sits in `calls`: a response may carry thousands of calls.
    positions: std::collections::HashMap<u32, usize>,
    usage: Option<TokenUsage>,
    finish_reason: Option<String>,
}

impl StreamAssembler {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one chunk; returns the text it carried (empty if none), for progress reports.
    pub fn push(&mut self, chunk: ChatChunk) -> Result<String, ModelError> {
        if let Some(err) = chunk.error {
            return Err(stream_error(&err));
        }
        if let Some(u) = chunk.usage {
            self.usage = Some(TokenUsage {
                prompt_tokens: u.prompt_tokens,
                completion_tokens: u.completion_tokens,
                cached_tokens: u.prompt_tokens_details.cached_tokens,
            });
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
        let next = self.calls.len();
        let pos = *self.positions.entry(index).or_insert(next);
        if pos == next {
            self.calls.push(PartialCall {
                index,
                ..PartialCall::default()
            });
        }
        let call = &mut self.calls[pos];
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

    /// The assembled answer. Without a finish_reason the stream did not end properly
    /// (connection cut, or the server stopped mid-answer), whatever `[DONE]` said.
    pub fn finish(mut self) -> Result<ChatResponse, ModelError> {
        let Some(finish_reason) = self.finish_reason else {
            return Err(ModelError::StreamBroken(
                "the stream ended before the model finished its answer".to_string(),
            ));
        };
        self.calls.sort_by_key(|c| c.index);
        let tool_calls = self
            .calls
            .into_iter()
            .map(|c| tool_call(c.id, c.name, c.arguments))
            .collect();
        Ok(ChatResponse {
            text: self.text,
            tool_calls,
            usage: self.usage,
            finish_reason: Some(finish_reason),
            reasoning: Vec::new(),
        })
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

/// An `{"error": ...}` payload inside a stream. Treated like the HTTP status it names
/// (500 when it names none) so the retry rules apply.
fn stream_error(err: &serde_json::Value) -> ModelError {
    let message = err
        .get("message")
        .and_then(|m| m.as_str())
        .map(str::to_string)
        .unwrap_or_else(|| err.to_string());
    let status = err
        .get("code")
        .and_then(|c| {
            c.as_u64()
                .or_else(|| c.as_str().and_then(|s| s.parse().ok()))
        })
        .filter(|c| (400..600).contains(c))
        .and_then(|c| u16::try_from(c).ok())
        .unwrap_or(500);
    if let Some(said) = super::overflow::in_stream(err, &message) {
        return ModelError::ContextOverflow { message, said };
    }
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
    }
}
