//! The mock's Responses wire (`POST /v1/responses`): a script streamed as OpenAI streams a
//! Responses answer, event for event and in its order, with every field OpenAI sends
//! (`sequence_number`, `output_index`, `content_index`, `item_id`), so each event also
//! parses with async-openai's strict `ResponseStreamEvent`:
//!
//! `response.created`, `response.in_progress`, then per output item
//! `response.output_item.added`, its deltas (`response.content_part.added`,
//! `response.output_text.delta`…, `.output_text.done`, `.content_part.done`; or
//! `response.function_call_arguments.delta`…, `.done`), `response.output_item.done`;
//! last `response.completed` with the output and the usage (or `response.incomplete`,
//! `response.failed`, or an `error` event). No `[DONE]`.

use super::{Ending, Script, Step, split_text};
use serde_json::{Value, json};

/// The SSE steps of `script` on the Responses wire.
pub(super) fn steps(id: &str, model: &str, script: Script, custom: &[String]) -> Vec<Step> {
    let mut seq = 0u64;
    let mut event = |mut data: Value| -> String {
        data["sequence_number"] = json!(seq);
        seq += 1;
        let kind = data["type"].as_str().unwrap_or("").to_string();
        format!("event: {kind}\ndata: {data}\n\n")
    };
    let cached = script.cached;
    let response = |status: &str, output: &[Value], usage: Option<(u64, u64)>| {
        let mut r = json!({
            "id": id, "object": "response", "created_at": 1_700_000_000u64,
            "status": status, "model": model, "output": output,
            "parallel_tool_calls": true, "store": false,
        });
        if let Some((p, c)) = usage {
            r["usage"] = json!({
                "input_tokens": p, "input_tokens_details": {"cached_tokens": cached},
                "output_tokens": c, "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": p + c,
            });
        }
        r
    };

    let prelude = vec![
        event(json!({"type": "response.created", "response": response("in_progress", &[], None)})),
        event(
            json!({"type": "response.in_progress", "response": response("in_progress", &[], None)}),
        ),
    ];
    // The events `cut_after` / `stall_after` / `stream_error_after` count.
    let mut content: Vec<String> = Vec::new();
    let mut output: Vec<Value> = Vec::new();
    if let Some(encrypted) = &script.reasoning {
        let index = output.len();
        let item = json!({"type": "reasoning", "id": format!("rs_{id}"), "summary": [],
                          "encrypted_content": encrypted});
        content.push(event(json!({"type": "response.output_item.added",
                                  "output_index": index, "item": item})));
        content.push(event(json!({"type": "response.output_item.done",
                                  "output_index": index, "item": item})));
        output.push(item);
    }
    if !script.text_deltas.is_empty() {
        let index = output.len();
        let item_id = format!("msg_{id}");
        let text: String = script.text_deltas.concat();
        let message = |status: &str, text: Option<&str>| {
            let content = match text {
                Some(t) => {
                    json!([{"type": "output_text", "text": t, "annotations": [], "logprobs": []}])
                }
                None => json!([]),
            };
            json!({"type": "message", "id": item_id, "status": status, "role": "assistant",
                   "content": content})
        };
        let part =
            |t: &str| json!({"type": "output_text", "text": t, "annotations": [], "logprobs": []});
        let at = |v: Value| {
            let mut v = v;
            v["item_id"] = json!(item_id);
            v["output_index"] = json!(index);
            v["content_index"] = json!(0);
            v
        };
        content.push(event(
            json!({"type": "response.output_item.added", "output_index": index,
                                  "item": message("in_progress", None)}),
        ));
        content.push(event(at(
            json!({"type": "response.content_part.added", "part": part("")}),
        )));
        for d in &script.text_deltas {
            content.push(event(at(
                json!({"type": "response.output_text.delta", "delta": d, "logprobs": []}),
            )));
        }
        content.push(event(at(
            json!({"type": "response.output_text.done", "text": text, "logprobs": []}),
        )));
        content.push(event(at(
            json!({"type": "response.content_part.done", "part": part(&text)}),
        )));
        let done = message("completed", Some(&text));
        content.push(event(
            json!({"type": "response.output_item.done", "output_index": index,
                                  "item": done}),
        ));
        output.push(done);
    }
    for call in &script.tool_calls {
        let index = output.len();
        if custom.contains(&call.name) {
            // Offered as freeform: the model writes the text of its one argument.
            let args: Value = serde_json::from_str(&call.arguments).unwrap_or_default();
            let input = args
                .as_object()
                .and_then(|o| o.values().find_map(Value::as_str))
                .unwrap_or(&call.arguments)
                .to_string();
            let item_id = format!("ctc_{}", call.id);
            let item = |input: &str| {
                json!({"type": "custom_tool_call", "id": item_id, "call_id": call.id,
                       "name": call.name, "input": input})
            };
            content.push(event(json!({"type": "response.output_item.added",
                                      "output_index": index, "item": item("")})));
            for frag in split_text(&input, script.arg_fragment) {
                content.push(event(
                    json!({"type": "response.custom_tool_call_input.delta",
                    "item_id": item_id, "output_index": index, "delta": frag}),
                ));
            }
            content.push(event(
                json!({"type": "response.custom_tool_call_input.done",
                "item_id": item_id, "output_index": index, "input": input}),
            ));
            content.push(event(json!({"type": "response.output_item.done",
                                      "output_index": index, "item": item(&input)})));
            output.push(item(&input));
            continue;
        }
        let item_id = format!("fc_{}", call.id);
        let item = |status: &str, arguments: &str| {
            json!({"type": "function_call", "id": item_id, "call_id": call.id,
                   "name": call.name, "arguments": arguments, "status": status})
        };
        content.push(event(
            json!({"type": "response.output_item.added", "output_index": index,
                                  "item": item("in_progress", "")}),
        ));
        for frag in split_text(&call.arguments, script.arg_fragment) {
            content.push(event(
                json!({"type": "response.function_call_arguments.delta",
                                      "item_id": item_id, "output_index": index, "delta": frag}),
            ));
        }
        content.push(event(
            json!({"type": "response.function_call_arguments.done",
                                  "item_id": item_id, "output_index": index,
                                  "arguments": call.arguments}),
        ));
        let done = item("completed", &call.arguments);
        content.push(event(
            json!({"type": "response.output_item.done", "output_index": index,
                                  "item": done}),
        ));
        output.push(done);
    }

    let mut steps = Vec::new();
    let push = |steps: &mut Vec<Step>, s: String| {
        if !script.chunk_delay.is_zero() {
            steps.push(Step::Sleep(script.chunk_delay));
        }
        steps.push(Step::Data(s));
    };
    for s in prelude {
        push(&mut steps, s);
    }
    match &script.ending {
        Ending::Cut { .. } | Ending::Stall { .. } => {
            super::cut_short(&mut steps, content, &script.ending, push);
        }
        Ending::Error {
            after,
            code,
            message,
            failed,
        } => {
            for s in content.into_iter().take(*after) {
                push(&mut steps, s);
            }
            let last = if *failed {
                let mut r = response("failed", &[], None);
                r["error"] = json!({"code": code, "message": message});
                event(json!({"type": "response.failed", "response": r}))
            } else {
                event(json!({"type": "error", "code": code, "message": message, "param": null}))
            };
            push(&mut steps, last);
        }
        Ending::Complete | Ending::NoDone | Ending::Incomplete => {
            for s in content {
                push(&mut steps, s);
            }
            let last = if matches!(script.ending, Ending::Incomplete) {
                let mut r = response("incomplete", &output, script.usage);
                r["incomplete_details"] = json!({"reason": "max_output_tokens"});
                event(json!({"type": "response.incomplete", "response": r}))
            } else {
                let r = response("completed", &output, script.usage);
                event(json!({"type": "response.completed", "response": r}))
            };
            push(&mut steps, last);
        }
    }
    steps
}

/// A Responses body as a chat-completions body: `instructions` the system message, input
/// items messages (function calls joined into the assistant message before them, as
/// llama.cpp's server does), so responders written for chat answer both wires.
pub(super) fn as_chat(body: &Value) -> Value {
    if body.get("input").is_none() {
        return body.clone();
    }
    let mut messages: Vec<Value> = Vec::new();
    if let Some(i) = body.get("instructions").and_then(Value::as_str) {
        messages.push(json!({"role": "system", "content": i}));
    }
    let items = match &body["input"] {
        Value::String(s) => vec![json!({"type": "message", "role": "user", "content": s})],
        Value::Array(items) => items.clone(),
        _ => Vec::new(),
    };
    for item in items {
        let kind = item["type"].as_str().unwrap_or("message");
        match kind {
            "function_call" | "custom_tool_call" => {
                let arguments = match kind {
                    "custom_tool_call" => json!({ "input": item["input"] }).to_string().into(),
                    _ => item["arguments"].clone(),
                };
                let call = json!({"id": item["call_id"], "type": "function",
                                  "function": {"name": item["name"], "arguments": arguments}});
                match messages.last_mut() {
                    Some(m) if m["role"] == "assistant" => {
                        if !m["tool_calls"].is_array() {
                            m["tool_calls"] = json!([]);
                        }
                        if let Some(calls) = m["tool_calls"].as_array_mut() {
                            calls.push(call);
                        }
                    }
                    _ => messages.push(json!({"role": "assistant", "content": null,
                                              "tool_calls": [call]})),
                }
            }
            "function_call_output" | "custom_tool_call_output" => messages
                .push(json!({"role": "tool",
                "tool_call_id": item["call_id"], "content": item["output"]})),
            "reasoning" => {}
            _ => messages.push(json!({"role": item["role"], "content": item["content"]})),
        }
    }
    let mut chat = body.clone();
    if let Some(o) = chat.as_object_mut() {
        o.remove("input");
        o.remove("instructions");
        o.insert("messages".to_string(), Value::Array(messages));
    }
    chat
}
