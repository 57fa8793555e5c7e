//! Tool calls a model wrote as text (a "tool shim", as Goose calls it). Small open models
//! served with their stock chat template often answer a tool request with the call in
//! their own format instead of the API's `tool_calls`: Qwen's and Hermes' `<tool_call>`
//! blocks, a fenced JSON block, Llama's bare JSON (`parameters`) or `<|python_tag|>`,
//! Mistral's `[TOOL_CALLS]`. A reply whose whole text is such a call (or several) of a
//! tool that was offered is evidence enough that the model meant to call it: it runs as
//! that call, through the same checks, approvals and hooks as any other. One call comes
//! without its name: a worker's result object (`{"result": {"status": …, "summary": …}}`,
//! or its fields alone) as the whole reply of an agent offered `return_results` is that
//! call, the only tool whose arguments are a result (a 1.5B worker wrote its result so,
//! twice, and it went up unchecked). Anything else stays text: a reply that mentions a
//! tool, shows a call among other words, names a tool that was not offered, or is some
//! other bare object. Pure: the caller decides whether to use it.

use crate::protocol::ToolCall;
use serde_json::Value;

/// The id of a call that was text: its result says so.
pub const ID_PREFIX: &str = "text_call_";

/// What the result of such a call starts with. Said only when the reply was a call written
/// as text (evidence: a well-formed call of an offered tool), never otherwise.
pub const RAN_NOTE: &str = "[squad] Your reply was this tool call written as text; it ran as \
                            a call. Its result:\n";

/// The calls `text` is made of, when it is nothing but well-formed calls of `offered`
/// tools, or one result object alone when `result_tool` (the offered tool whose arguments
/// are a worker's result) is given; `None` otherwise.
pub fn parse(text: &str, offered: &[&str], result_tool: Option<&str>) -> Option<Vec<ToolCall>> {
    calls(text, &|name| offered.contains(&name)).or_else(|| result_object(text, result_tool?))
}

/// The calls of a reply in the text protocol (`model::text_protocol`), where the model was
/// told to call tools by writing them so: the whole reply as [`parse`] reads it, or words and
/// then one or more call blocks (```` ```json ```` or `<tool_call>`, each a well-formed call
/// of an offered tool), as the server's parser reads a fenced template's reply. Returns the
/// words before the calls and the calls; what follows the last call block is not returned.
pub fn parse_declared(text: &str, offered: &[&str]) -> Option<(String, Vec<ToolCall>)> {
    let is_offered = |name: &str| offered.contains(&name);
    if let Some(calls) = calls(text, &is_offered) {
        return Some((String::new(), calls));
    }
    let mut at = 0;
    while let Some(start) = next_block(text, at) {
        let calls = leading_blocks(&text[start..], &is_offered);
        if !calls.is_empty() {
            return Some((text[..start].trim_end().to_string(), calls));
        }
        at = start + 1;
    }
    None
}

/// Where the next block opens at the start of a line, from byte `from` on.
fn next_block(text: &str, from: usize) -> Option<usize> {
    let mut at = from;
    loop {
        let rest = text.get(at..)?;
        let found = ["```", "<tool_call>"]
            .iter()
            .filter_map(|open| rest.find(open))
            .min()?;
        let start = at + found;
        if start == 0 || text[..start].ends_with('\n') {
            return Some(start);
        }
        at = start + 1;
    }
}

/// The calls of the blocks `text` starts with, one after the other, up to the first block
/// that is no call (or anything else).
fn leading_blocks(text: &str, offered: &dyn Fn(&str) -> bool) -> Vec<ToolCall> {
    let mut out = Vec::new();
    let mut rest = text;
    loop {
        rest = rest.trim_start();
        let (json, after) = if let Some(inner) = rest.strip_prefix("<tool_call>") {
            match inner.split_once("</tool_call>") {
                Some((json, after)) => (unfence(json.trim()), after),
                None => break,
            }
        } else if let Some(inner) = rest.strip_prefix("```") {
            let Some((lang, inner)) = inner.split_once('\n') else {
                break;
            };
            if !matches!(lang.trim(), "" | "json" | "tool_call" | "tool_code") {
                break;
            }
            let Some(end) = inner.find("```") else {
                break;
            };
            (inner[..end].trim(), &inner[end + 3..])
        } else {
            break;
        };
        let calls: Option<Vec<ToolCall>> = json_calls(json).and_then(|values| {
            values
                .iter()
                .enumerate()
                .map(|(i, v)| call_of(v, offered, out.len() + i))
                .collect()
        });
        match calls {
            Some(calls) if !calls.is_empty() => out.extend(calls),
            _ => break,
        }
        rest = after;
    }
    out
}

/// What a result object holds: `status` and `summary` at the least.
const RESULT_FIELDS: [&str; 4] = ["status", "summary", "artifacts", "known_issues"];

/// A reply that is one result object and nothing else (bare or in one fenced block): the
/// call of `tool` it is.
fn result_object(text: &str, tool: &str) -> Option<Vec<ToolCall>> {
    let body = text.trim();
    let values = fenced(body).or_else(|| json_calls(body))?;
    let [value] = values.as_slice() else {
        return None;
    };
    let obj = value.as_object()?;
    let result = match obj.get("result") {
        Some(inner) if obj.len() == 1 => inner.as_object()?,
        Some(_) => return None,
        None => obj,
    };
    let is_result = ["status", "summary"]
        .iter()
        .all(|k| result.get(*k).is_some_and(Value::is_string))
        && result.keys().all(|k| RESULT_FIELDS.contains(&k.as_str()));
    is_result.then(|| {
        vec![ToolCall {
            id: format!("{ID_PREFIX}{}_0", uuid::Uuid::new_v4().simple()),
            name: tool.to_string(),
            arguments: serde_json::json!({ "result": result }).to_string(),
        }]
    })
}

/// Whether `text` is nothing but well-formed tool calls, of any tool: what a model writes
/// when it answers a request without tools with a call.
pub fn is_calls(text: &str) -> bool {
    calls(text, &|_| true).is_some()
}

fn calls(text: &str, offered: &dyn Fn(&str) -> bool) -> Option<Vec<ToolCall>> {
    let body = text.trim();
    if body.is_empty() {
        return None;
    }
    let values = tagged(body, "<tool_call>", "</tool_call>")
        .or_else(|| mistral(body))
        .or_else(|| fenced(body))
        .or_else(|| {
            let bare = body.strip_prefix("<|python_tag|>").unwrap_or(body).trim();
            json_calls(bare)
        })?;
    let calls: Option<Vec<ToolCall>> = values
        .iter()
        .enumerate()
        .map(|(i, v)| call_of(v, offered, i))
        .collect();
    calls.filter(|c| !c.is_empty())
}

/// `<open>{…}</close>` blocks and nothing else between or around them.
fn tagged(body: &str, open: &str, close: &str) -> Option<Vec<Value>> {
    if !body.starts_with(open) {
        return None;
    }
    let mut out = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let inner = rest.strip_prefix(open)?;
        let (json, after) = inner.split_once(close)?;
        out.extend(json_calls(unfence(json.trim()))?);
        rest = after.trim_start();
    }
    Some(out)
}

/// `[TOOL_CALLS][{…}, …]`, or the newer `[TOOL_CALLS]name[ARGS]{…}`.
fn mistral(body: &str) -> Option<Vec<Value>> {
    let rest = body.strip_prefix("[TOOL_CALLS]")?.trim();
    if let Some(v) = json_calls(rest) {
        return Some(v);
    }
    let mut out = Vec::new();
    for part in rest.split("[TOOL_CALLS]") {
        let (name, args) = part.trim().split_once("[ARGS]")?;
        let args: Value = serde_json::from_str(args.trim()).ok()?;
        out.push(serde_json::json!({"name": name.trim(), "arguments": args}));
    }
    Some(out)
}

/// One fenced block (```json or ``` alone) holding the call(s), and nothing else.
/// One fenced block, or several with nothing but blank lines between them (a model that
/// writes each of its calls in a block of its own).
fn fenced(body: &str) -> Option<Vec<Value>> {
    let mut out = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let inner = rest.strip_prefix("```")?;
        let (lang, inner) = inner.split_once('\n')?;
        if !matches!(lang.trim(), "" | "json" | "tool_call" | "tool_code") {
            return None;
        }
        let end = inner.find("```")?;
        out.extend(json_calls(inner[..end].trim())?);
        rest = inner[end + 3..].trim_start();
    }
    Some(out)
}

fn unfence(s: &str) -> &str {
    s.strip_prefix("```json")
        .or_else(|| s.strip_prefix("```"))
        .and_then(|r| r.trim_end().strip_suffix("```"))
        .map_or(s, str::trim)
}

/// A JSON object, an array of them, or objects one per line.
fn json_calls(s: &str) -> Option<Vec<Value>> {
    if let Ok(v) = serde_json::from_str::<Value>(s) {
        return match v {
            Value::Array(items) => Some(items),
            Value::Object(_) => Some(vec![v]),
            _ => None,
        };
    }
    s.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str::<Value>(l.trim())
                .ok()
                .filter(Value::is_object)
        })
        .collect()
}

/// `{"name": …, "arguments"|"parameters": {…}}` of an offered tool, or OpenAI's own shape
/// `{"type": "function", "function": {…}}` written out.
fn call_of(v: &Value, offered: &dyn Fn(&str) -> bool, i: usize) -> Option<ToolCall> {
    let v = v.get("function").filter(|f| f.is_object()).unwrap_or(v);
    let obj = v.as_object()?;
    let name = obj.get("name")?.as_str()?.trim();
    if !offered(name) {
        return None;
    }
    // Only a name and its arguments: an object with more is data that happens to hold a
    // `name` (a package.json, a config), not a call.
    if obj.keys().any(|k| {
        !matches!(
            k.as_str(),
            "name" | "arguments" | "parameters" | "id" | "type"
        )
    }) {
        return None;
    }
    let args = match obj.get("arguments").or_else(|| obj.get("parameters")) {
        None => Value::Object(Default::default()),
        Some(Value::String(s)) => serde_json::from_str::<Value>(s).ok()?,
        Some(a @ Value::Object(_)) => a.clone(),
        Some(_) => return None,
    };
    if !args.is_object() {
        return None;
    }
    Some(ToolCall {
        id: format!("{ID_PREFIX}{}_{i}", uuid::Uuid::new_v4().simple()),
        name: name.to_string(),
        arguments: args.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const OFFERED: &[&str] = &["read_file", "write_file", "return_results"];

    fn names(text: &str) -> Option<Vec<(String, Value)>> {
        parse(text, OFFERED, Some("return_results")).map(|calls| {
            calls
                .into_iter()
                .map(|c| (c.name, serde_json::from_str(&c.arguments).unwrap()))
                .collect()
        })
    }

    fn one(name: &str, args: Value) -> Option<Vec<(String, Value)>> {
        Some(vec![(name.to_string(), args)])
    }

    #[test]
    fn a_workers_result_object_alone_is_its_return_results_call() {
        let result = serde_json::json!({"status": "success", "summary": "made config.env", "artifacts": [], "known_issues": []});
        let wrapped = serde_json::json!({ "result": result });
        for text in [
            format!("```json\n{wrapped:#}\n```"),
            wrapped.to_string(),
            format!("```\n{result}\n```"),
            serde_json::json!({"status": "partial", "summary": "half"}).to_string(),
        ] {
            let calls =
                parse(&text, OFFERED, Some("return_results")).unwrap_or_else(|| panic!("{text}"));
            assert_eq!(calls.len(), 1);
            assert_eq!(calls[0].name, "return_results");
            let args: Value = serde_json::from_str(&calls[0].arguments).unwrap();
            assert!(args["result"]["status"].is_string(), "{args}");
        }
        assert_eq!(
            names(&wrapped.to_string()),
            one("return_results", wrapped.clone())
        );
    }

    #[test]
    fn other_bare_objects_and_results_among_words_stay_text() {
        let result = serde_json::json!({"result": {"status": "success", "summary": "done"}});
        for text in [
            // Among words, or two of them.
            format!("Here is my result:\n```json\n{result}\n```"),
            format!("```json\n{result}\n```\n\n```json\n{result}\n```"),
            // Not a result: a field it does not have, no summary, a status that is no text.
            serde_json::json!({"status": "ok", "summary": "x", "version": 2}).to_string(),
            serde_json::json!({"status": "success"}).to_string(),
            serde_json::json!({"status": 1, "summary": "x"}).to_string(),
            serde_json::json!({"result": {"status": "success", "summary": "x"}, "extra": 1})
                .to_string(),
            serde_json::json!({"path": "a.txt", "content": "hi"}).to_string(),
        ] {
            assert_eq!(names(&text), None, "{text}");
        }
        // Only an agent offered return_results: a persona's JSON answer is its answer.
        let text = result.to_string();
        assert!(parse(&text, &["read_file", "write_file"], None).is_none());
    }

    #[test]
    fn each_format_small_models_write_is_a_call() {
        let args = serde_json::json!({"path": "a.txt"});
        for text in [
            "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}\n</tool_call>",
            "```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}\n```",
            "```\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}\n```",
            "{\"name\": \"read_file\", \"parameters\": {\"path\": \"a.txt\"}}",
            "<|python_tag|>{\"name\": \"read_file\", \"parameters\": {\"path\": \"a.txt\"}}",
            "[TOOL_CALLS][{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}]",
            "[TOOL_CALLS]read_file[ARGS]{\"path\": \"a.txt\"}",
            "{\"type\": \"function\", \"function\": {\"name\": \"read_file\", \"arguments\": \"{\\\"path\\\": \\\"a.txt\\\"}\"}}",
            "  <tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}</tool_call>  ",
        ] {
            assert_eq!(names(text), one("read_file", args.clone()), "{text}");
        }
        let two = "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}</tool_call>\n<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"b\"}}</tool_call>";
        assert_eq!(names(two).map(|c| c.len()), Some(2));
        let ids: Vec<String> = parse(two, OFFERED, None)
            .unwrap()
            .into_iter()
            .map(|c| c.id)
            .collect();
        assert_ne!(ids[0], ids[1], "each call its own id");
        // Each call in a fenced block of its own, as the 1.5B model writes them on its
        // stock template.
        let blocks = "```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n```\n\n```json\n{\n  \"name\": \"write_file\",\n  \"arguments\": {\"path\": \"b\", \"content\": \"x\"}\n}\n```";
        let got = names(blocks).unwrap();
        let got: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(got, ["read_file", "write_file"]);
    }

    #[test]
    fn text_that_only_mentions_or_shows_a_call_stays_text() {
        assert!(is_calls(
            "```json\n{\"name\": \"ask_user\", \"arguments\": {}}\n```"
        ));
        assert!(!is_calls("I will ask the user."));
        for text in [
            "I will call read_file on a.txt next.",
            "To read it, call:\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}\n```",
            "```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n```\nand then the answer",
            "{\"name\": \"delete_everything\", \"arguments\": {}}",
            "```json\n{\"name\": \"my-app\", \"version\": \"1.0.0\", \"scripts\": {}}\n```",
            "{\"name\": \"read_file\", \"arguments\": [\"a.txt\"]}",
            "<tool_call>{\"name\": \"read_file\", \"arguments\": {}}</tool_call> and some words",
            "```python\nprint('hi')\n```",
            "```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n```\nthen\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"b\"}}\n```",
            "```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n```\n```python\nprint('hi')\n```",
            "",
            "The answer is 42.",
        ] {
            assert_eq!(names(text), None, "{text}");
        }
    }
}
