//! The request of the Responses wire (`POST /responses`), built from squad's own history
//! with async-openai's Responses item types.
//!
//! Stateless: `store: false` and the whole history as input items each time (messages,
//! `function_call` and `function_call_output` items, reasoning passed back), so any server
//! that serves `/responses` works, local ones included, and a session can change wires.
//! The envelope is ours rather than async-openai's `CreateResponse` only so the `tools`
//! array can be the JSON cached per tool set (see [`ToolsJson`]).

use super::wire::{ToolsJson, user_text};
use super::{ChatRequest, ToolSpec};
use crate::protocol::{HistoryItem, Reasoning};
use async_openai::types::responses::GrammarSyntax;
use async_openai::types::responses::{
    CustomGrammarFormatParam, CustomToolCallOutput, CustomToolCallOutputOutput, CustomToolParam,
    CustomToolParamFormat, EasyInputContent, EasyInputMessage, FunctionCallOutput,
    FunctionCallOutputItemParam, FunctionTool, FunctionToolCall, InputItem, Item, MessageType,
    ReasoningItem, ReasoningItemContent, ReasoningTextContent, Role, SummaryPart,
    SummaryTextContent, Tool,
};
use serde::Serialize;
use serde_json::value::RawValue;

#[derive(Debug, Serialize)]
pub(crate) struct ResponsesRequest<'a> {
    pub model: &'a str,
    /// The system prompt, where Responses puts it.
    #[serde(skip_serializing_if = "str::is_empty")]
    pub instructions: &'a str,
    pub input: Vec<Input>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<&'a RawValue>,
    pub stream: bool,
    /// The server keeps nothing: the next request carries the whole history again.
    pub store: bool,
    /// Asks for the reasoning's encrypted content, which a stateless request must carry
    /// back; only for models that reason (OpenAI refuses it for the others).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<&'static str>,
    /// The freeform tools offered (name, argument): how their calls come back.
    #[serde(skip)]
    pub freeform: Vec<(String, String)>,
}

/// One input item: async-openai's, or a freeform call as it is passed back (async-openai's
/// `CustomToolCall` requires the server's item id, which a stateless request does not keep).
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum Input {
    Item(InputItem),
    Custom(CustomCall),
}

#[derive(Debug, Serialize)]
pub(crate) struct CustomCall {
    #[serde(rename = "type")]
    kind: &'static str,
    call_id: String,
    name: String,
    input: String,
}

/// The freeform tools of a request (name, argument), when the server takes them.
pub(crate) fn freeform_tools(tools: &[ToolSpec]) -> Vec<(String, String)> {
    tools
        .iter()
        .filter_map(|t| Some((t.name.clone(), t.freeform.as_ref()?.argument.clone())))
        .collect()
}

impl<'a> ResponsesRequest<'a> {
    /// `freeform`: the tools offered as freeform (see [`freeform_tools`]), whose calls are
    /// passed back as `custom_tool_call` items.
    pub fn from_chat(
        request: &'a ChatRequest,
        tools: Option<&'a RawValue>,
        freeform: &[(String, String)],
    ) -> Self {
        Self {
            model: &request.model,
            instructions: &request.system_prompt,
            input: input_items(&request.history, freeform),
            tools,
            stream: true,
            store: false,
            include: if reasons(&request.model) {
                vec!["reasoning.encrypted_content"]
            } else {
                Vec::new()
            },
            freeform: freeform.to_vec(),
        }
    }
}

/// OpenAI's reasoning models (o-series, GPT-5, codex), whose reasoning items come back
/// encrypted when asked for.
fn reasons(model: &str) -> bool {
    let m = model.to_ascii_lowercase();
    let o_series = m.starts_with('o') && m[1..].starts_with(|c: char| c.is_ascii_digit());
    o_series || m.starts_with("gpt-5") || m.contains("codex")
}

/// The cache of Responses-shaped `tools` arrays, freeform tools as `custom` ones.
pub(crate) fn tools_cache() -> ToolsJson {
    ToolsJson::new(|tools| encode_tools(tools, true))
}

/// The same, every tool a function (for a server that refuses `custom` tools).
pub(crate) fn function_tools_cache() -> ToolsJson {
    ToolsJson::new(|tools| encode_tools(tools, false))
}

/// Responses' flat `{"type": "function", "name", "description", "parameters"}` entries:
/// the same JSON schemas as on the chat wire; with `freeform`, a tool that has a grammar
/// is `{"type": "custom", "format": {"type": "grammar", "syntax": "lark", …}}`.
fn encode_tools(tools: &[ToolSpec], freeform: bool) -> serde_json::Result<Box<RawValue>> {
    let wire: Vec<Tool> = tools
        .iter()
        .map(|t| match &t.freeform {
            Some(f) if freeform => Tool::Custom(CustomToolParam {
                name: t.name.clone(),
                description: Some(t.description.clone()),
                format: CustomToolParamFormat::Grammar(CustomGrammarFormatParam {
                    definition: f.grammar.clone(),
                    syntax: GrammarSyntax::Lark,
                }),
                ..CustomToolParam::default()
            }),
            _ => Tool::Function(FunctionTool {
                name: t.name.clone(),
                parameters: Some(t.parameters.clone()),
                strict: None,
                description: Some(t.description.clone()),
                defer_loading: None,
                r#async: None,
                output_schema: None,
                allowed_callers: None,
            }),
        })
        .collect();
    serde_json::value::to_raw_value(&wire)
}

/// One input item per history item, as on the chat wire: notices, summaries and handoffs
/// are `[squad]` user messages, neighbouring user messages are joined, an answer is its
/// reasoning, its text and its function calls in that order.
pub(crate) fn input_items(history: &[HistoryItem], freeform: &[(String, String)]) -> Vec<Input> {
    let mut out: Vec<Input> = Vec::with_capacity(history.len() + 1);
    // Calls passed back as freeform: their outputs are `custom_tool_call_output`s.
    let mut custom: Vec<&str> = Vec::new();
    for item in history {
        match item {
            HistoryItem::Assistant {
                text,
                tool_calls,
                reasoning,
            } => {
                out.extend(
                    reasoning
                        .iter()
                        .filter(|r| r.can_pass_back())
                        .map(reasoning_item)
                        .map(Input::Item),
                );
                if !text.is_empty() || tool_calls.is_empty() {
                    out.push(Input::Item(message(Role::Assistant, text.clone())));
                }
                out.extend(tool_calls.iter().map(|c| {
                    if let Some(input) = freeform_input(c, freeform) {
                        custom.push(&c.id);
                        return Input::Custom(CustomCall {
                            kind: "custom_tool_call",
                            call_id: c.id.clone(),
                            name: c.name.clone(),
                            input,
                        });
                    }
                    Input::Item(InputItem::Item(Item::FunctionCall(FunctionToolCall {
                        arguments: c.arguments.clone(),
                        call_id: c.id.clone(),
                        namespace: None,
                        name: c.name.clone(),
                        id: None,
                        status: None,
                        caller: None,
                        r#async: None,
                    })))
                }));
            }
            HistoryItem::ToolResult {
                call_id, output, ..
            } if custom.contains(&call_id.as_str()) => out.push(Input::Item(InputItem::Item(
                Item::CustomToolCallOutput(CustomToolCallOutput {
                    call_id: call_id.clone(),
                    output: CustomToolCallOutputOutput::Text(output.clone()),
                    id: None,
                    caller: None,
                }),
            ))),
            HistoryItem::ToolResult {
                call_id, output, ..
            } => out.push(Input::Item(InputItem::Item(Item::FunctionCallOutput(
                FunctionCallOutputItemParam {
                    call_id: Some(call_id.clone()),
                    output: FunctionCallOutput::Text(output.clone()),
                    id: None,
                    status: None,
                    name: None,
                    namespace: None,
                    caller: None,
                },
            )))),
            other => {
                let text = user_text(other).unwrap_or_default();
                if let Some(Input::Item(InputItem::EasyMessage(EasyInputMessage {
                    role: Role::User,
                    content: EasyInputContent::Text(previous),
                    ..
                }))) = out.last_mut()
                {
                    previous.push_str("\n\n");
                    previous.push_str(&text);
                } else {
                    out.push(Input::Item(message(Role::User, text.into_owned())));
                }
            }
        }
    }
    out
}

/// The text a call of a freeform tool was written as: the one argument its grammar fills.
fn freeform_input(
    call: &crate::protocol::ToolCall,
    freeform: &[(String, String)],
) -> Option<String> {
    let (_, argument) = freeform.iter().find(|(name, _)| *name == call.name)?;
    let args: serde_json::Value = serde_json::from_str(&call.arguments).ok()?;
    args.get(argument)?.as_str().map(str::to_string)
}

fn message(role: Role, text: String) -> InputItem {
    InputItem::EasyMessage(EasyInputMessage {
        r#type: MessageType::Message,
        role,
        content: EasyInputContent::Text(text),
        phase: None,
    })
}

fn reasoning_item(r: &Reasoning) -> InputItem {
    InputItem::Item(Item::Reasoning(ReasoningItem {
        id: r.id.clone(),
        summary: r
            .summary
            .iter()
            .map(|text| SummaryPart::SummaryText(SummaryTextContent { text: text.clone() }))
            .collect(),
        content: (!r.content.is_empty()).then(|| {
            r.content
                .iter()
                .map(|text| {
                    ReasoningItemContent::ReasoningText(ReasoningTextContent { text: text.clone() })
                })
                .collect()
        }),
        encrypted_content: r.encrypted_content.clone().filter(|c| !c.is_empty()),
        status: None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ToolCall;
    use serde_json::{Value, json};
    use std::sync::Arc;

    #[test]
    fn history_maps_to_input_items() {
        let history = vec![
            HistoryItem::user("fix the bug"),
            HistoryItem::Assistant {
                text: "Reading.".into(),
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "read_file".into(),
                    arguments: r#"{"path":"a.rs"}"#.into(),
                }],
                reasoning: vec![
                    Reasoning {
                        id: Some("rs_1".into()),
                        summary: vec!["look first".into()],
                        content: vec![],
                        encrypted_content: Some("gAAA".into()),
                    },
                    Reasoning {
                        id: Some("rs_2".into()),
                        ..Reasoning::default()
                    },
                ],
            },
            HistoryItem::ToolResult {
                call_id: "c1".into(),
                name: "read_file".into(),
                output: "fn main() {}".into(),
                is_error: false,
            },
            HistoryItem::notice("worker w1 finished"),
            HistoryItem::user("and?"),
        ];
        let v = serde_json::to_value(input_items(&history, &[])).unwrap();
        assert_eq!(
            v,
            json!([
                {"type": "message", "role": "user", "content": "fix the bug"},
                {"type": "reasoning", "id": "rs_1",
                 "summary": [{"type": "summary_text", "text": "look first"}],
                 "encrypted_content": "gAAA"},
                {"type": "message", "role": "assistant", "content": "Reading."},
                {"type": "function_call", "call_id": "c1", "name": "read_file",
                 "arguments": "{\"path\":\"a.rs\"}"},
                {"type": "function_call_output", "call_id": "c1", "output": "fn main() {}"},
                {"type": "message", "role": "user",
                 "content": "[squad] worker w1 finished\n\nand?"},
            ])
        );
    }

    #[test]
    fn request_is_stateless_and_streams() {
        let req = ChatRequest {
            model: "gpt-5-codex".into(),
            system_prompt: "be brief".into(),
            history: vec![HistoryItem::user("hi")].into(),
            tools: vec![ToolSpec {
                name: "read_file".into(),
                description: "Read".into(),
                parameters: json!({"type": "object"}),
                freeform: None,
            }]
            .into(),
        };
        let cache = tools_cache();
        let tools = cache.get(&req.tools);
        let v =
            serde_json::to_value(ResponsesRequest::from_chat(&req, tools.as_deref(), &[])).unwrap();
        assert_eq!(v["store"], false);
        assert_eq!(v["stream"], true);
        assert_eq!(v["instructions"], "be brief");
        assert_eq!(v["include"], json!(["reasoning.encrypted_content"]));
        assert_eq!(
            v["tools"],
            json!([{"type": "function", "name": "read_file", "description": "Read",
                    "parameters": {"type": "object"}}])
        );
        let plain = ChatRequest {
            model: "qwen2.5-coder".into(),
            tools: Arc::from(Vec::new()),
            ..req
        };
        let v = serde_json::to_value(ResponsesRequest::from_chat(&plain, None, &[])).unwrap();
        assert!(v.get("include").is_none() && v.get("tools").is_none());
        assert!(reasons("o3-mini") && reasons("gpt-5.1") && !reasons("gpt-4.1"));
        assert!(!reasons("ollama-model"));
    }

    #[test]
    fn a_freeform_tools_calls_go_back_as_custom_items_and_a_tool_as_custom() {
        let patch = "*** Begin Patch\n*** End Patch";
        let history = vec![
            HistoryItem::Assistant {
                text: String::new(),
                tool_calls: vec![ToolCall {
                    id: "p1".into(),
                    name: "apply_patch".into(),
                    arguments: json!({ "patch": patch }).to_string(),
                }],
                reasoning: Vec::new(),
            },
            HistoryItem::ToolResult {
                call_id: "p1".into(),
                name: "apply_patch".into(),
                output: "done".into(),
                is_error: false,
            },
        ];
        let freeform = [("apply_patch".to_string(), "patch".to_string())];
        let v = serde_json::to_value(input_items(&history, &freeform)).unwrap();
        assert_eq!(
            v,
            json!([
                {"type": "custom_tool_call", "call_id": "p1", "name": "apply_patch",
                 "input": patch},
                {"type": "custom_tool_call_output", "call_id": "p1", "output": "done"},
            ])
        );
        let spec = ToolSpec {
            name: "apply_patch".into(),
            description: "d".into(),
            parameters: json!({"type": "object"}),
            freeform: Some(crate::model::Freeform {
                argument: "patch".into(),
                grammar: "start: x".into(),
            }),
        };
        let custom: Value = serde_json::from_str(
            encode_tools(std::slice::from_ref(&spec), true)
                .unwrap()
                .get(),
        )
        .unwrap();
        assert_eq!(custom[0]["type"], "custom");
        assert_eq!(
            custom[0]["format"],
            json!({"type": "grammar", "syntax": "lark", "definition": "start: x"})
        );
        let plain: Value =
            serde_json::from_str(encode_tools(&[spec], false).unwrap().get()).unwrap();
        assert_eq!(plain[0]["type"], "function");
    }
}
