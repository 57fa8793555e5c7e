//! Turning the events of a streamed Responses answer into one [`ChatResponse`].
//!
//! async-openai does the HTTP and the SSE framing; the events are read into our own
//! lenient [`ResponsesEvent`] rather than async-openai's `ResponseStreamEvent`, because
//! that type requires `sequence_number`, `output_index` and `content_index` on every event
//! and a complete `Response` object in `response.*` events, and llama.cpp's server omits
//! them all: with the strict type not one of its events would parse. Calls are keyed by
//! `item_id` (which every server sends), falling back to `output_index`.

use super::stream::{Assemble, Slots, answer, ended_early, error_in_stream};
use super::wire::null_default;
use super::{ChatResponse, ModelError, TokenUsage};
use crate::protocol::Reasoning;
use serde::Deserialize;
use serde_json::Value;

/// One `data:` payload of the stream; only the fields squad reads.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ResponsesEvent {
    #[serde(rename = "type")]
    pub kind: String,
    pub item_id: Option<String>,
    pub output_index: Option<u64>,
    /// Text of `response.output_text.delta`, arguments of
    /// `response.function_call_arguments.delta`.
    pub delta: Option<String>,
    /// The whole arguments, in `response.function_call_arguments.done`.
    pub arguments: Option<String>,
    /// The whole input of a freeform call, in `response.custom_tool_call_input.done`.
    pub input: Option<String>,
    pub item: Option<OutputItem>,
    pub response: Option<ResponseBody>,
    /// `error` events: `code` (a string at OpenAI, a number elsewhere) and `message`.
    pub code: Option<Value>,
    pub message: Option<String>,
    /// Some servers nest an `error` event's fields under `error`.
    pub error: Option<Value>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct OutputItem {
    #[serde(rename = "type")]
    pub kind: String,
    pub id: Option<String>,
    pub call_id: Option<String>,
    pub name: Option<String>,
    pub arguments: Option<String>,
    /// `custom_tool_call` items: the call's text.
    pub input: Option<String>,
    /// `message` items: `output_text` parts; `reasoning` items: `reasoning_text` parts.
    #[serde(deserialize_with = "null_default")]
    pub content: Vec<TextPart>,
    #[serde(deserialize_with = "null_default")]
    pub summary: Vec<TextPart>,
    pub encrypted_content: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct TextPart {
    #[serde(rename = "type")]
    pub kind: String,
    pub text: Option<String>,
}

/// The `response` of `response.completed`, `.failed` and `.incomplete`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ResponseBody {
    pub usage: Option<super::wire::WireUsage>,
    pub error: Option<Value>,
    pub incomplete_details: Option<Value>,
    #[serde(deserialize_with = "null_default")]
    pub output: Vec<OutputItem>,
}

#[derive(Debug, Default)]
struct PartialCall {
    call_id: String,
    name: String,
    /// A function call's JSON arguments, or a freeform call's text.
    arguments: String,
    freeform: bool,
}

#[derive(Debug)]
enum End {
    Completed,
    /// `response.incomplete`, with its reason (`max_output_tokens`, `content_filter`).
    Incomplete(String),
}

/// Accumulates one attempt's events; a new attempt starts a new one.
#[derive(Debug, Default)]
pub(crate) struct ResponsesAssembler {
    text: String,
    /// Whether text came as deltas; otherwise the finished message items give it.
    text_streamed: bool,
    /// The calls, by item id (or `#output_index`).
    calls: Slots<String, PartialCall>,
    reasoning: Vec<Reasoning>,
    usage: Option<TokenUsage>,
    end: Option<End>,
    /// The freeform tools offered (name, argument their text becomes).
    freeform: Vec<(String, String)>,
}

impl ResponsesAssembler {
    #[cfg(test)]
    pub fn new() -> Self {
        Self::default()
    }

    /// An assembler for a request that offered `freeform` tools (name, argument).
    pub fn with_freeform(freeform: Vec<(String, String)>) -> Self {
        Self {
            freeform,
            ..Self::default()
        }
    }

    fn key(item_id: Option<&str>, output_index: Option<u64>) -> String {
        match (item_id.filter(|s| !s.is_empty()), output_index) {
            (Some(id), _) => id.to_string(),
            (None, Some(i)) => format!("#{i}"),
            (None, None) => "#".to_string(),
        }
    }

    fn call(&mut self, key: String) -> &mut PartialCall {
        self.calls.get(key)
    }

    /// A function-call item as `output_item.added` / `.done` or `response.completed`
    /// give it: what it names fills what the deltas left empty, and its whole arguments
    /// win over the deltas.
    fn call_item(&mut self, item: OutputItem, output_index: Option<u64>) {
        let key = Self::key(item.id.as_deref(), output_index);
        let call = self.call(key);
        if let Some(id) = item.call_id.filter(|s| !s.is_empty()) {
            call.call_id = id;
        }
        if let Some(name) = item.name.filter(|s| !s.is_empty()) {
            call.name = name;
        }
        if let Some(args) = item.arguments.filter(|s| !s.is_empty()) {
            call.arguments = args;
        }
        if item.kind == "custom_tool_call" {
            call.freeform = true;
            if let Some(input) = item.input.filter(|s| !s.is_empty()) {
                call.arguments = input;
            }
        }
    }

    fn done_item(&mut self, item: OutputItem, output_index: Option<u64>) -> String {
        match item.kind.as_str() {
            "function_call" | "custom_tool_call" => self.call_item(item, output_index),
            "reasoning" => {
                let texts = |parts: Vec<TextPart>| parts.into_iter().filter_map(|p| p.text);
                self.reasoning.push(Reasoning {
                    id: item.id,
                    summary: texts(item.summary).collect(),
                    content: texts(item.content).filter(|t| !t.is_empty()).collect(),
                    encrypted_content: item.encrypted_content.filter(|c| !c.is_empty()),
                });
            }
            "message" if !self.text_streamed => {
                let text: String = item
                    .content
                    .into_iter()
                    .filter(|p| p.kind == "output_text")
                    .filter_map(|p| p.text)
                    .collect();
                self.text.push_str(&text);
                return text;
            }
            _ => {}
        }
        String::new()
    }

    fn finished(&mut self, response: Option<ResponseBody>, end: End) {
        if let Some(r) = response {
            if let Some(u) = r.usage {
                self.usage = Some(u.into());
            }
            // A server that sent no items along the way still lists them here.
            if self.calls.is_empty() && self.reasoning.is_empty() {
                for (i, item) in r.output.into_iter().enumerate() {
                    self.done_item(item, Some(i as u64));
                }
            }
        }
        self.end = Some(end);
    }
}

impl Assemble for ResponsesAssembler {
    type Chunk = ResponsesEvent;

    fn push(&mut self, event: ResponsesEvent) -> Result<String, ModelError> {
        match event.kind.as_str() {
            "response.output_text.delta" => {
                let delta = event.delta.unwrap_or_default();
                self.text_streamed = true;
                self.text.push_str(&delta);
                return Ok(delta);
            }
            "response.output_item.added" => {
                if let Some(item) = event
                    .item
                    .filter(|i| i.kind == "function_call" || i.kind == "custom_tool_call")
                {
                    self.call_item(item, event.output_index);
                }
            }
            "response.custom_tool_call_input.delta" => {
                let key = Self::key(event.item_id.as_deref(), event.output_index);
                let delta = event.delta.unwrap_or_default();
                let call = self.call(key);
                call.freeform = true;
                call.arguments.push_str(&delta);
            }
            "response.custom_tool_call_input.done" => {
                let key = Self::key(event.item_id.as_deref(), event.output_index);
                let call = self.call(key);
                call.freeform = true;
                if let Some(input) = event.input {
                    call.arguments = input;
                }
            }
            "response.function_call_arguments.delta" => {
                let key = Self::key(event.item_id.as_deref(), event.output_index);
                let delta = event.delta.unwrap_or_default();
                self.call(key).arguments.push_str(&delta);
            }
            "response.function_call_arguments.done" => {
                let key = Self::key(event.item_id.as_deref(), event.output_index);
                if let Some(args) = event.arguments {
                    self.call(key).arguments = args;
                }
            }
            "response.output_item.done" => {
                if let Some(item) = event.item {
                    return Ok(self.done_item(item, event.output_index));
                }
            }
            "response.completed" => self.finished(event.response, End::Completed),
            "response.incomplete" => {
                let reason = event
                    .response
                    .as_ref()
                    .and_then(|r| r.incomplete_details.as_ref())
                    .and_then(|d| d.get("reason"))
                    .and_then(Value::as_str)
                    .unwrap_or("unknown")
                    .to_string();
                self.finished(event.response, End::Incomplete(reason));
            }
            "response.failed" => {
                let error = event.response.and_then(|r| r.error).unwrap_or(Value::Null);
                return Err(error_in_stream(&error));
            }
            "error" => {
                let error = match event.error {
                    Some(e) if e.is_object() => e,
                    _ => serde_json::json!({"code": event.code, "message": event.message}),
                };
                return Err(error_in_stream(&error));
            }
            _ => {}
        }
        Ok(String::new())
    }

    /// Without `response.completed` (or `.incomplete`) the stream did not end properly.
    /// An incomplete answer (the server's output limit) is kept, as chat completions'
    /// `finish_reason: "length"` is; one with nothing in it is an error.
    fn finish(self) -> Result<ChatResponse, ModelError> {
        let finish_reason = match self.end {
            None => return Err(ended_early()),
            Some(End::Completed) if self.calls.is_empty() => "stop".to_string(),
            Some(End::Completed) => "tool_calls".to_string(),
            Some(End::Incomplete(reason)) => {
                if self.text.is_empty() && self.calls.is_empty() {
                    return Err(ModelError::BadResponse(format!(
                        "the answer ended incomplete ({reason}) before the model wrote anything"
                    )));
                }
                if reason == "max_output_tokens" {
                    "length".to_string()
                } else {
                    reason
                }
            }
        };
        let freeform = &self.freeform;
        let calls = self.calls.into_items().into_iter().map(|c| {
            // A freeform call's text is the one argument its grammar fills.
            let arguments = match c.freeform {
                false => c.arguments,
                true => {
                    let argument = freeform
                        .iter()
                        .find(|(name, _)| *name == c.name)
                        .map_or("input", |(_, a)| a.as_str());
                    serde_json::json!({ argument: c.arguments }).to_string()
                }
            };
            (c.call_id, c.name, arguments)
        });
        Ok(answer(
            self.text,
            calls,
            self.usage,
            finish_reason,
            self.reasoning,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ToolCall;
    use serde_json::json;

    fn ev(v: Value) -> ResponsesEvent {
        serde_json::from_value(v).unwrap()
    }

    fn run(events: Vec<Value>) -> Result<ChatResponse, ModelError> {
        let mut a = ResponsesAssembler::new();
        for e in events {
            a.push(ev(e))?;
        }
        a.finish()
    }

    fn completed(input: u64, output: u64) -> Value {
        json!({"type": "response.completed", "sequence_number": 9, "response": {
            "id": "resp_1", "status": "completed", "output": [],
            "usage": {"input_tokens": input, "output_tokens": output, "total_tokens": input + output,
                "input_tokens_details": {"cached_tokens": 4}}}})
    }

    #[test]
    fn text_deltas_and_usage() {
        let r = run(vec![
            json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}}),
            json!({"type": "response.output_item.added", "output_index": 0,
                   "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}}),
            json!({"type": "response.output_text.delta", "item_id": "msg_1", "delta": "Hel"}),
            json!({"type": "response.output_text.delta", "item_id": "msg_1", "delta": "lo"}),
            json!({"type": "response.output_item.done", "output_index": 0,
                   "item": {"type": "message", "id": "msg_1", "role": "assistant",
                            "content": [{"type": "output_text", "text": "Hello"}]}}),
            completed(5, 2),
        ])
        .unwrap();
        assert_eq!(r.text, "Hello", "the done item does not repeat the deltas");
        assert_eq!(r.finish_reason.as_deref(), Some("stop"));
        assert_eq!(
            r.usage,
            Some(TokenUsage {
                prompt_tokens: 5,
                completion_tokens: 2,
                cached_tokens: 4,
            })
        );
    }

    #[test]
    fn parallel_calls_assemble_by_item_without_output_index() {
        let added = |id: &str, call: &str, name: &str| {
            json!({"type": "response.output_item.added", "item": {"type": "function_call",
                   "id": id, "call_id": call, "name": name, "arguments": ""}})
        };
        let delta = |id: &str, d: &str| json!({"type": "response.function_call_arguments.delta", "item_id": id, "delta": d});
        let r = run(vec![
            added("fc_a", "call_a", "read_file"),
            delta("fc_a", "{\"pa"),
            added("fc_b", "call_b", "list_files"),
            delta("fc_b", "{}"),
            delta("fc_a", "th\":\"x\"}"),
            json!({"type": "response.function_call_arguments.done", "item_id": "fc_a",
                   "arguments": "{\"path\":\"x\"}"}),
            completed(1, 1),
        ])
        .unwrap();
        assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(
            r.tool_calls,
            vec![
                ToolCall {
                    id: "call_a".into(),
                    name: "read_file".into(),
                    arguments: r#"{"path":"x"}"#.into()
                },
                ToolCall {
                    id: "call_b".into(),
                    name: "list_files".into(),
                    arguments: "{}".into()
                },
            ]
        );
    }

    #[test]
    fn reasoning_is_kept_and_output_of_completed_is_a_fallback() {
        let r = run(vec![json!({"type": "response.completed", "response": {"output": [
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "plan"}],
             "encrypted_content": "gAAA"},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": "{}"}
        ]}})])
        .unwrap();
        assert_eq!(r.reasoning.len(), 1);
        assert_eq!(r.reasoning[0].encrypted_content.as_deref(), Some("gAAA"));
        assert_eq!(r.reasoning[0].summary, ["plan"]);
        assert_eq!(r.tool_calls[0].id, "call_1");
    }

    #[test]
    fn errors_failures_and_incomplete_answers() {
        let e = run(vec![json!({"type": "error", "code": "rate_limit_exceeded",
                                "message": "slow down", "param": null})])
        .unwrap_err();
        assert!(matches!(e, ModelError::Http { status: 429, .. }) && e.is_retryable());
        let e = run(vec![
            json!({"type": "response.failed", "response": {"status": "failed",
            "error": {"code": "context_length_exceeded",
                      "message": "Your input exceeds the context window of this model."}}}),
        ])
        .unwrap_err();
        assert!(matches!(e, ModelError::ContextOverflow { .. }), "{e:?}");
        let e = run(vec![json!({"type": "response.failed", "response": {
            "error": {"code": "server_error", "message": "boom"}}})])
        .unwrap_err();
        assert!(matches!(e, ModelError::Http { status: 500, .. }) && e.is_retryable());
        let e = run(vec![
            json!({"type": "error", "error": {"code": 400, "message": "bad"}}),
        ])
        .unwrap_err();
        assert!(matches!(e, ModelError::Http { status: 400, .. }));

        let incomplete = json!({"type": "response.incomplete", "response": {
            "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}});
        let r = run(vec![
            json!({"type": "response.output_text.delta", "item_id": "m", "delta": "half"}),
            incomplete.clone(),
        ])
        .unwrap();
        assert_eq!(
            (r.text.as_str(), r.finish_reason.as_deref()),
            ("half", Some("length"))
        );
        assert!(matches!(
            run(vec![incomplete]),
            Err(ModelError::BadResponse(m)) if m.contains("max_output_tokens")
        ));
        assert!(matches!(
            run(vec![
                json!({"type": "response.output_text.delta", "delta": "cut"})
            ]),
            Err(ModelError::StreamBroken(_))
        ));
    }

    #[test]
    fn a_freeform_call_is_its_grammars_argument() {
        let mut a = ResponsesAssembler::with_freeform(vec![("apply_patch".into(), "patch".into())]);
        let item = json!({"type": "custom_tool_call", "id": "ctc_1", "call_id": "p1",
                          "name": "apply_patch", "input": ""});
        for e in [
            json!({"type": "response.output_item.added", "output_index": 0, "item": item}),
            json!({"type": "response.custom_tool_call_input.delta", "item_id": "ctc_1",
                   "delta": "*** Begin Patch\n"}),
            json!({"type": "response.custom_tool_call_input.delta", "item_id": "ctc_1",
                   "delta": "*** End Patch"}),
            completed(1, 1),
        ] {
            a.push(ev(e)).unwrap();
        }
        let r = a.finish().unwrap();
        assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(r.tool_calls[0].id, "p1");
        let args: Value = serde_json::from_str(&r.tool_calls[0].arguments).unwrap();
        assert_eq!(args, json!({"patch": "*** Begin Patch\n*** End Patch"}));
    }
}
