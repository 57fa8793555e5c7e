//! The text tool protocol (`tool_protocol = "text"`): what a server-side chat template does
//! with tools, done on the client, for a model whose own template fails at them. The request
//! carries no `tools`: the tool list and the call format are written into the system
//! message, each past call into the assistant's message in that format, each result as a
//! user message in `<tool_response>` tags; calls are read back from the reply's text.
//!
//! The format is `../shared/real-llm/qwen2.5-coder-fenced-tools.jinja`'s (Qwen2.5's own
//! prompt with calls as ```` ```json ```` blocks, what Qwen2.5-Coder writes by itself), to
//! the byte: the model reads the same prompt as through that template, on any server.
//! JSON in the prompt is written as llama.cpp's `tojson` writes it (`tests/text_protocol.rs`
//! checks both against the server's own renderer).

use super::wire::{StreamOptions, WireMessage, WireRequest, user_text};
use super::{ChatResponse, ToolSpec, text_calls};
use crate::protocol::{HistoryItem, ToolCall};
use serde_json::Value;
use std::borrow::Cow;
use std::fmt::Write as _;

/// The template's system prompt when the conversation has none.
const DEFAULT_SYSTEM: &str = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";
const TOOLS_HEAD: &str = "\n\n# Tools\n\nYou may call one or more functions to assist with the \
    user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>";
const TOOLS_TAIL: &str = "\n</tools>\n\nTo call a function, reply with a json object with the \
    function name and arguments inside a ```json code block:\n```json\n{\"name\": \
    <function-name>, \"arguments\": <args-json-object>}\n```\nAfter a function result arrives \
    inside <tool_response></tool_response>, use it to answer the user.";

/// The id a call read from text gets: a call by the protocol, not a call the model wrote as
/// text by mistake (`text_calls::ID_PREFIX`, whose result says so).
const CALL_ID_PREFIX: &str = "call_";

impl<'a> WireRequest<'a> {
    /// The request in the text tool protocol: no `tools`, the tools and past calls written
    /// into the messages.
    pub fn text_protocol(request: &'a super::ChatRequest) -> Self {
        Self {
            model: &request.model,
            messages: messages(&request.system_prompt, &request.history, &request.tools),
            tools: None,
            stream: true,
            stream_options: StreamOptions {
                include_usage: true,
            },
        }
    }
}

/// The system message: the prompt, then the tools and how to call them.
pub(crate) fn system_message(system_prompt: &str, tools: &[ToolSpec]) -> String {
    let mut out = String::from(if system_prompt.is_empty() {
        DEFAULT_SYSTEM
    } else {
        system_prompt
    });
    out.push_str(TOOLS_HEAD);
    for tool in tools {
        out.push('\n');
        tojson(&tool_json(tool), &mut out);
    }
    out.push_str(TOOLS_TAIL);
    out
}

/// A tool as the server hands it to its template: llama.cpp's `{"type", "function":
/// {"name", "description", "parameters"}}`, an empty schema made an empty object's.
fn tool_json(tool: &ToolSpec) -> Value {
    let empty =
        tool.parameters.is_null() || tool.parameters.as_object().is_some_and(|o| o.is_empty());
    let parameters = match empty {
        true => serde_json::json!({"type": "object", "properties": {}}),
        false => tool.parameters.clone(),
    };
    serde_json::json!({
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": parameters},
    })
}

/// The messages of a request in the text protocol. Neighbouring user messages are joined
/// as on the native wire; a results message stays apart, as the template closes it.
pub(crate) fn messages<'a>(
    system_prompt: &'a str,
    history: &'a [HistoryItem],
    tools: &[ToolSpec],
) -> Vec<WireMessage<'a>> {
    let mut out = Vec::with_capacity(history.len() + 1);
    if !tools.is_empty() {
        out.push(WireMessage::System {
            content: Cow::Owned(system_message(system_prompt, tools)),
        });
    } else if !system_prompt.is_empty() {
        out.push(WireMessage::System {
            content: Cow::Borrowed(system_prompt),
        });
    }
    // Whether the last message is results (never joined with what follows).
    let mut results = false;
    for item in history {
        match item {
            HistoryItem::Assistant {
                text, tool_calls, ..
            } => {
                results = false;
                out.push(WireMessage::Assistant {
                    content: Some(assistant(text, tool_calls)),
                    tool_calls: Vec::new(),
                });
            }
            HistoryItem::ToolResult { output, .. } => {
                let block = format!("<tool_response>\n{output}\n</tool_response>");
                match out.last_mut() {
                    Some(WireMessage::User { content }) if results => {
                        let joined = content.to_mut();
                        joined.push('\n');
                        joined.push_str(&block);
                    }
                    _ => out.push(WireMessage::User {
                        content: Cow::Owned(block),
                    }),
                }
                results = true;
            }
            other => {
                let content = user_text(other).unwrap_or_default();
                match out.last_mut() {
                    Some(WireMessage::User { content: previous }) if !results => {
                        let joined = previous.to_mut();
                        joined.push_str("\n\n");
                        joined.push_str(&content);
                    }
                    _ => out.push(WireMessage::User { content }),
                }
                results = false;
            }
        }
    }
    out
}

/// An assistant turn: its words, then each call in a block of its own.
fn assistant<'a>(text: &'a str, calls: &[ToolCall]) -> Cow<'a, str> {
    if calls.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = text.to_string();
    for (i, call) in calls.iter().enumerate() {
        if i > 0 || !text.is_empty() {
            out.push('\n');
        }
        out.push_str(&call_block(call));
    }
    Cow::Owned(out)
}

/// One call as the template writes it: the name as is, the arguments as `tojson` writes
/// them (as the model wrote them when they are no JSON object: the server would refuse them).
pub(crate) fn call_block(call: &ToolCall) -> String {
    let mut out = format!("```json\n{{\"name\": \"{}\", \"arguments\": ", call.name);
    match serde_json::from_str::<Value>(&call.arguments) {
        Ok(args) => tojson(&args, &mut out),
        Err(_) => out.push_str(&call.arguments),
    }
    out.push_str("}\n```");
    out
}

/// JSON as llama.cpp's template engine writes `x | tojson`: `", "` and `": "` between items,
/// keys in their order, only `"`, `\`, and control characters escaped (the rest as UTF-8),
/// and floats with six significant digits (C++'s `ostream << double`).
pub(crate) fn tojson(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => {
                let _ = write!(out, "{i}");
            }
            (None, Some(u), _) => {
                let _ = write!(out, "{u}");
            }
            (None, None, Some(f)) => out.push_str(&float_g6(f)),
            _ => out.push_str("null"),
        },
        Value::String(s) => string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                tojson(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                string(key, out);
                out.push_str(": ");
                tojson(item, out);
            }
            out.push('}');
        }
    }
}

fn string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `printf("%g", f)`: six significant digits, trailing zeros dropped, an exponent below
/// 1e-4 and from 1e6 on.
fn float_g6(f: f64) -> String {
    if !f.is_finite() {
        return if f.is_nan() {
            "nan"
        } else if f > 0.0 {
            "inf"
        } else {
            "-inf"
        }
        .to_string();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    // The exponent after rounding to six digits, as %e would print it.
    let sci = format!("{f:.5e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..6).contains(&exp) {
        let decimals = usize::try_from(5 - exp).unwrap_or(0);
        trim_zeros(&format!("{f:.decimals$}")).to_string()
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim_zeros(mantissa), exp.abs())
    }
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// The reply read in the text protocol: calls of offered tools written in the format (or
/// any other a model writes, `text_calls`) become its calls; words before them stay its
/// text; what follows the last call is dropped, written before any result came back.
pub(crate) fn read_reply(mut response: ChatResponse, tools: &[ToolSpec]) -> ChatResponse {
    if !response.tool_calls.is_empty() || tools.is_empty() {
        return response;
    }
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    if let Some((before, calls)) = text_calls::parse_declared(&response.text, &names) {
        response.text = before;
        response.tool_calls = calls
            .into_iter()
            .map(|mut c| {
                let id = c.id.trim_start_matches(text_calls::ID_PREFIX);
                c.id = format!("{CALL_ID_PREFIX}{id}");
                c
            })
            .collect();
    }
    response
}

#[cfg(test)]
mod tests;
