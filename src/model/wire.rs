//! Our own wire types for chat completions.
//!
//! Requests carry only the fields every OpenAI-compatible server understands. Chunks are
//! parsed leniently (every field optional, `null` accepted for lists) so servers that omit
//! OpenAI-only fields (Ollama, llama.cpp, vLLM) still work.

use super::{ChatRequest, ToolSpec};
use crate::protocol::HistoryItem;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::sync::{Arc, Mutex, Weak};

#[derive(Debug, Serialize)]
pub(crate) struct WireRequest<'a> {
    pub model: &'a str,
    pub messages: Vec<WireMessage<'a>>,
    /// The `tools` array, serialized once per tool set (see [`ToolsJson`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<&'a RawValue>,
    pub stream: bool,
    pub stream_options: StreamOptions,
}

#[derive(Debug, Serialize)]
pub(crate) struct StreamOptions {
    pub include_usage: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
/// Messages borrow the history's text: building a request copies none of it (only the
/// joined neighbouring user messages and the `[squad]` notices are new strings).
pub(crate) enum WireMessage<'a> {
    System {
        content: Cow<'a, str>,
    },
    User {
        content: Cow<'a, str>,
    },
    Assistant {
        /// `null` when the turn was only tool calls, as OpenAI sends it.
        content: Option<Cow<'a, str>>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<WireToolCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: &'a str,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct WireToolCall<'a> {
    pub id: &'a str,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub function: WireFunctionCall<'a>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct WireFunctionCall<'a> {
    pub name: &'a str,
    pub arguments: &'a str,
}

#[derive(Debug, Serialize)]
pub(crate) struct WireTool<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub function: WireFunction<'a>,
}

#[derive(Debug, Serialize)]
pub(crate) struct WireFunction<'a> {
    pub name: &'a str,
    pub description: &'a str,
    pub parameters: &'a serde_json::Value,
}

/// The `tools` array of each tool set as JSON, made once: every agent of a role sends the
/// same specs on every call, and serializing them each time was most of a request's cost.
/// Keyed by the set's allocation (agents of one role share one `Arc`); entries for sets
/// no longer in use are dropped. One cache per wire, since the shapes differ.
pub(crate) struct ToolsJson {
    sets: Mutex<Vec<EncodedSet>>,
    encode: EncodeTools,
}

/// Writes a tool set as one wire's `tools` array.
pub(crate) type EncodeTools = fn(&[ToolSpec]) -> serde_json::Result<Box<RawValue>>;

/// A tool set (held weakly, so a dropped set's entry can go) and its `tools` JSON.
type EncodedSet = (Weak<[ToolSpec]>, Arc<RawValue>);

impl Default for ToolsJson {
    fn default() -> Self {
        Self::new(chat_tools)
    }
}

/// Chat completions' `{"type": "function", "function": {…}}` entries.
fn chat_tools(tools: &[ToolSpec]) -> serde_json::Result<Box<RawValue>> {
    let wire: Vec<WireTool<'_>> = tools.iter().map(wire_tool).collect();
    serde_json::value::to_raw_value(&wire)
}

impl ToolsJson {
    pub fn new(encode: EncodeTools) -> Self {
        Self {
            sets: Mutex::default(),
            encode,
        }
    }

    /// `None` for an empty set (the request then carries no `tools`).
    pub fn get(&self, tools: &Arc<[ToolSpec]>) -> Option<Arc<RawValue>> {
        if tools.is_empty() {
            return None;
        }
        let mut sets = match self.sets.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        sets.retain(|(w, _)| w.strong_count() > 0);
        if let Some((_, json)) = sets
            .iter()
            .find(|(w, _)| std::ptr::addr_eq(w.as_ptr(), Arc::as_ptr(tools)))
        {
            return Some(json.clone());
        }
        let json: Arc<RawValue> = (self.encode)(tools).ok()?.into();
        sets.push((Arc::downgrade(tools), json.clone()));
        Some(json)
    }
}

impl<'a> WireRequest<'a> {
    pub fn from_chat(request: &'a ChatRequest, tools: Option<&'a RawValue>) -> Self {
        Self {
            model: &request.model,
            messages: messages(&request.system_prompt, &request.history),
            tools,
            stream: true,
            stream_options: StreamOptions {
                include_usage: true,
            },
        }
    }
}

fn wire_tool(spec: &ToolSpec) -> WireTool<'_> {
    WireTool {
        kind: "function",
        function: WireFunction {
            name: &spec.name,
            description: &spec.description,
            parameters: &spec.parameters,
        },
    }
}

/// How a compaction summary is introduced to the model.
pub(crate) const SUMMARY_HEADING: &str = "[squad] The earlier part of this conversation was \
    compacted to fit the context window. Summary of it:";

/// System prompt first, then one message per history item. Notices and handoffs become
/// `user` messages prefixed `[squad]`: many local chat templates reject a `system`
/// message anywhere but first. Neighbouring `user` messages (a notice, then the user's
/// words) are joined into one, for templates that insist on alternating roles.
pub(crate) fn messages<'a>(
    system_prompt: &'a str,
    history: &'a [HistoryItem],
) -> Vec<WireMessage<'a>> {
    let mut out = Vec::with_capacity(history.len() + 1);
    if !system_prompt.is_empty() {
        out.push(WireMessage::System {
            content: Cow::Borrowed(system_prompt),
        });
    }
    for item in history {
        let message = match item {
            HistoryItem::Assistant {
                text, tool_calls, ..
            } => WireMessage::Assistant {
                content: if text.is_empty() && !tool_calls.is_empty() {
                    None
                } else {
                    Some(Cow::Borrowed(text))
                },
                tool_calls: tool_calls
                    .iter()
                    .map(|c| WireToolCall {
                        id: &c.id,
                        kind: "function",
                        function: WireFunctionCall {
                            name: &c.name,
                            arguments: &c.arguments,
                        },
                    })
                    .collect(),
            },
            HistoryItem::ToolResult {
                call_id, output, ..
            } => WireMessage::Tool {
                tool_call_id: call_id,
                content: output,
            },
            other => WireMessage::User {
                content: user_text(other).unwrap_or_default(),
            },
        };
        match (out.last_mut(), message) {
            (Some(WireMessage::User { content: previous }), WireMessage::User { content }) => {
                let joined = previous.to_mut();
                joined.push_str("\n\n");
                joined.push_str(&content);
            }
            (_, message) => out.push(message),
        }
    }
    out
}

/// What an item other than the model's answer and a tool's result says to the model, as
/// a user message: the user's words, or a `[squad]` notice, summary or handoff. Shared by
/// both wires, so the model reads the same conversation on either.
pub(crate) fn user_text(item: &HistoryItem) -> Option<Cow<'_, str>> {
    Some(match item {
        HistoryItem::User { text } => Cow::Borrowed(text.as_str()),
        HistoryItem::Notice { text } => Cow::Owned(format!("[squad] {text}")),
        HistoryItem::Summary { text } => Cow::Owned(format!("{SUMMARY_HEADING}\n{text}")),
        HistoryItem::Handoff {
            from,
            to,
            reason,
            context,
        } => {
            let mut content = format!("[squad] Handoff: {from} → {to}. Reason: {reason}");
            if !context.is_empty() {
                content.push_str(" Context: ");
                content.push_str(context);
            }
            // Said to the persona taking over: a 1.5B implementer re-read the user's "then
            // hand off to the implementer" as its own step and handed straight back.
            content.push_str(&format!(
                "\nYou are now the {to}; the {from}'s part is done. Do your own part of the \
                 request now with your tools, and hand off only once it is done."
            ));
            Cow::Owned(content)
        }
        HistoryItem::Assistant { .. } | HistoryItem::ToolResult { .. } => return None,
    })
}

/// `null` and a missing field both mean "empty" (both wires' streams).
pub(crate) fn null_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// One `data:` payload of the stream.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ChatChunk {
    #[serde(deserialize_with = "null_default")]
    pub choices: Vec<ChunkChoice>,
    pub usage: Option<WireUsage>,
    /// Some servers (vLLM, proxies) report a failure mid-stream as `{"error": {...}}`.
    pub error: Option<serde_json::Value>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ChunkChoice {
    pub index: Option<u32>,
    pub delta: Option<Delta>,
    pub finish_reason: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Delta {
    pub content: Option<String>,
    #[serde(deserialize_with = "null_default")]
    pub tool_calls: Vec<ToolCallDelta>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ToolCallDelta {
    pub index: Option<u32>,
    pub id: Option<String>,
    pub function: Option<FunctionDelta>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct FunctionDelta {
    pub name: Option<String>,
    /// Normally a string fragment; some servers send the whole arguments as an object.
    pub arguments: Option<serde_json::Value>,
}

/// A stream's token counts, as either wire names them (chat completions: prompt and
/// completion tokens; Responses: input and output tokens).
#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct WireUsage {
    #[serde(alias = "input_tokens", deserialize_with = "null_default")]
    pub prompt_tokens: u64,
    #[serde(alias = "output_tokens", deserialize_with = "null_default")]
    pub completion_tokens: u64,
    #[serde(alias = "input_tokens_details", deserialize_with = "null_default")]
    pub prompt_tokens_details: CachedTokens,
}

impl From<WireUsage> for super::TokenUsage {
    fn from(u: WireUsage) -> Self {
        Self {
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
            cached_tokens: u.prompt_tokens_details.cached_tokens,
        }
    }
}

/// `*_tokens_details` of a usage: how many prompt tokens came from the server's cache.
#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct CachedTokens {
    #[serde(deserialize_with = "null_default")]
    pub cached_tokens: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ToolCall;
    use serde_json::json;

    #[test]
    fn history_maps_to_openai_messages() {
        let history = vec![
            HistoryItem::user("fix the bug"),
            HistoryItem::Assistant {
                text: String::new(),
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "read_file".into(),
                    arguments: r#"{"path":"a.rs"}"#.into(),
                }],
                reasoning: Vec::new(),
            },
            HistoryItem::ToolResult {
                call_id: "c1".into(),
                name: "read_file".into(),
                output: "fn main() {}".into(),
                is_error: false,
            },
            HistoryItem::notice("worker w1 finished"),
            HistoryItem::Handoff {
                from: "planner".into(),
                to: "coder".into(),
                reason: "plan ready".into(),
                context: "step 1".into(),
            },
            HistoryItem::Assistant {
                text: "done".into(),
                tool_calls: vec![],
                reasoning: Vec::new(),
            },
        ];
        let v = serde_json::to_value(messages("be helpful", &history)).unwrap();
        assert_eq!(
            v,
            json!([
                {"role": "system", "content": "be helpful"},
                {"role": "user", "content": "fix the bug"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function",
                     "function": {"name": "read_file", "arguments": "{\"path\":\"a.rs\"}"}}
                ]},
                {"role": "tool", "tool_call_id": "c1", "content": "fn main() {}"},
                {"role": "user",
                 "content": "[squad] worker w1 finished\n\n[squad] Handoff: planner → coder. Reason: plan ready Context: step 1\nYou are now the coder; the planner's part is done. Do your own part of the request now with your tools, and hand off only once it is done."},
                {"role": "assistant", "content": "done"},
            ])
        );
    }

    #[test]
    fn tool_sets_are_serialized_once_and_forgotten_when_unused() {
        let cache = ToolsJson::default();
        let set: Arc<[ToolSpec]> = vec![ToolSpec {
            name: "read_file".into(),
            description: "Read".into(),
            parameters: json!({"type": "object"}),
            freeform: None,
        }]
        .into();
        let a = cache.get(&set).unwrap();
        let b = cache.get(&set).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        let v: serde_json::Value = serde_json::from_str(a.get()).unwrap();
        assert_eq!(v[0]["type"], "function");
        assert_eq!(v[0]["function"]["name"], "read_file");
        assert!(cache.get(&Vec::new().into()).is_none());
        drop(set);
        let other: Arc<[ToolSpec]> = vec![ToolSpec {
            name: "list_files".into(),
            description: "List".into(),
            parameters: json!({"type": "object"}),
            freeform: None,
        }]
        .into();
        let c = cache.get(&other).unwrap();
        assert!(c.get().contains("list_files"));
        assert_eq!(
            cache.sets.lock().unwrap().len(),
            1,
            "the dropped set is gone"
        );
    }

    #[test]
    fn request_omits_empty_tools_and_asks_for_usage() {
        let req = ChatRequest {
            model: "m".into(),
            system_prompt: "s".into(),
            history: vec![HistoryItem::user("hi")].into(),
            tools: Vec::new().into(),
        };
        let v = serde_json::to_value(WireRequest::from_chat(&req, None)).unwrap();
        assert!(v.get("tools").is_none());
        assert_eq!(v["stream"], true);
        assert_eq!(v["stream_options"], json!({"include_usage": true}));
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), 4, "no other fields: {keys:?}");
    }

    #[test]
    fn chunks_parse_without_openai_only_fields() {
        let c: ChatChunk = serde_json::from_str(
            r#"{"choices":[{"delta":{"content":"hi","tool_calls":null},"finish_reason":null}]}"#,
        )
        .unwrap();
        assert_eq!(
            c.choices[0].delta.as_ref().unwrap().content.as_deref(),
            Some("hi")
        );
        let c: ChatChunk =
            serde_json::from_str(r#"{"choices":null,"usage":{"prompt_tokens":3}}"#).unwrap();
        assert!(c.choices.is_empty());
        assert_eq!(c.usage.unwrap().prompt_tokens, 3);
        assert_eq!(c.usage.unwrap().completion_tokens, 0);
        let c: ChatChunk = serde_json::from_str("{}").unwrap();
        assert!(c.choices.is_empty() && c.usage.is_none());
    }

    #[test]
    fn neighbouring_user_messages_are_joined() {
        let history = vec![
            HistoryItem::user("first"),
            HistoryItem::Assistant {
                text: "ok".into(),
                tool_calls: vec![],
                reasoning: Vec::new(),
            },
            HistoryItem::notice("Results of your workers: …"),
            HistoryItem::user("what did they find?"),
        ];
        let v = serde_json::to_value(messages("sys", &history)).unwrap();
        let roles: Vec<&str> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["system", "user", "assistant", "user"]);
        assert_eq!(
            v[3]["content"],
            "[squad] Results of your workers: …\n\nwhat did they find?"
        );
    }
}
