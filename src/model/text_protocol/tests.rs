use super::*;
use serde_json::json;

fn spec(name: &str, parameters: Value) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("{name} — does “{name}”"),
        parameters,
        freeform: None,
    }
}

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

#[test]
fn json_is_written_as_the_template_engine_writes_it() {
    let mut out = String::new();
    let v: Value = serde_json::from_str(
        r#"{"z":1,"a":[true,null,-2,{"k":"v"}],"s":"q\"b\\n\n\t\u0001é/<>","f":0.1,"g":1.0,"h":1234567.0,"e":0.00001,"m":[],"o":{}}"#,
    )
    .unwrap();
    tojson(&v, &mut out);
    assert_eq!(
        out,
        r#"{"z": 1, "a": [true, null, -2, {"k": "v"}], "s": "q\"b\\n\n\t\u0001é/<>", "f": 0.1, "g": 1, "h": 1.23457e+06, "e": 1e-05, "m": [], "o": {}}"#
    );
    for (f, want) in [
        (1.23456789, "1.23457"),
        (100000.0, "100000"),
        (999999.5, "1e+06"),
        (0.0001, "0.0001"),
        (-2.5, "-2.5"),
        (1e21, "1e+21"),
    ] {
        assert_eq!(float_g6(f), want, "{f}");
    }
}

#[test]
fn the_system_message_lists_each_tool_and_the_call_format() {
    let tools = [
        spec(
            "read_file",
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        ),
        spec("list_agents", json!({})),
    ];
    let system = system_message("You are the supervisor.", &tools);
    assert_eq!(
        system,
        "You are the supervisor.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n\
         You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n\
         {\"type\": \"function\", \"function\": {\"name\": \"read_file\", \"description\": \"read_file — does “read_file”\", \"parameters\": {\"type\": \"object\", \"properties\": {\"path\": {\"type\": \"string\"}}, \"required\": [\"path\"]}}}\n\
         {\"type\": \"function\", \"function\": {\"name\": \"list_agents\", \"description\": \"list_agents — does “list_agents”\", \"parameters\": {\"type\": \"object\", \"properties\": {}}}}\n\
         </tools>\n\nTo call a function, reply with a json object with the function name and arguments inside a ```json code block:\n\
         ```json\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n```\n\
         After a function result arrives inside <tool_response></tool_response>, use it to answer the user."
    );
    assert!(system_message("", &tools).starts_with(DEFAULT_SYSTEM));
}

#[test]
fn past_calls_are_blocks_in_the_assistant_message_and_results_are_tool_responses() {
    let history = vec![
        HistoryItem::user("fix it"),
        HistoryItem::Assistant {
            text: String::new(),
            tool_calls: vec![
                call("c1", "read_file", r#"{"path":"a.py","limit":10}"#),
                call("c2", "read_file", r#"{"path":"b.py"}"#),
            ],
            reasoning: Vec::new(),
        },
        HistoryItem::ToolResult {
            call_id: "c1".into(),
            name: "read_file".into(),
            output: "print(1)".into(),
            is_error: false,
        },
        HistoryItem::ToolResult {
            call_id: "c2".into(),
            name: "read_file".into(),
            output: "no such file".into(),
            is_error: true,
        },
        HistoryItem::notice("a worker finished"),
        HistoryItem::user("and?"),
        HistoryItem::Assistant {
            text: "Writing it.".into(),
            tool_calls: vec![call("c3", "write_file", "not json")],
            reasoning: Vec::new(),
        },
        HistoryItem::Assistant {
            text: "Done.".into(),
            tool_calls: vec![],
            reasoning: Vec::new(),
        },
    ];
    let tools = [spec("read_file", json!({"type": "object"}))];
    let v = serde_json::to_value(messages("sys", &history, &tools)).unwrap();
    let m = v.as_array().unwrap();
    let roles: Vec<&str> = m.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "user",
            "user",
            "assistant",
            "assistant"
        ]
    );
    assert!(
        m[0]["content"]
            .as_str()
            .unwrap()
            .starts_with("sys\n\n# Tools")
    );
    assert_eq!(
        m[2],
        json!({"role": "assistant", "content": "```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.py\", \"limit\": 10}}\n```\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"b.py\"}}\n```"})
    );
    assert_eq!(
        m[3]["content"],
        "<tool_response>\nprint(1)\n</tool_response>\n<tool_response>\nno such file\n</tool_response>"
    );
    assert_eq!(m[4]["content"], "[squad] a worker finished\n\nand?");
    assert_eq!(
        m[5]["content"],
        "Writing it.\n```json\n{\"name\": \"write_file\", \"arguments\": not json}\n```"
    );
    assert_eq!(m[6]["content"], "Done.");
    for message in m {
        assert!(message.get("tool_calls").is_none(), "{message}");
    }
    // No tools: the system prompt as it is.
    let v = serde_json::to_value(messages("sys", &history[..1], &[])).unwrap();
    assert_eq!(v[0]["content"], "sys");
}

#[test]
fn a_reply_is_read_as_words_then_calls() {
    let tools = [spec("read_file", json!({"type": "object"}))];
    let reply = |text: &str| ChatResponse {
        text: text.into(),
        ..ChatResponse::default()
    };
    let got = read_reply(
        reply(
            "Let me look.\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n```\nIt says hello.",
        ),
        &tools,
    );
    assert_eq!(got.text, "Let me look.");
    assert_eq!(got.tool_calls.len(), 1);
    assert_eq!(got.tool_calls[0].arguments, r#"{"path":"a"}"#);
    assert!(got.tool_calls[0].id.starts_with(CALL_ID_PREFIX));
    assert!(!got.tool_calls[0].id.starts_with(text_calls::ID_PREFIX));
    // A block of a tool not offered, or words alone, stay words.
    for text in [
        "```json\n{\"name\": \"rm_rf\", \"arguments\": {}}\n```",
        "I read it: it says hello.",
    ] {
        let got = read_reply(reply(text), &tools);
        assert!(got.tool_calls.is_empty(), "{text}");
        assert_eq!(got.text, text);
    }
    // Calls the server parsed stay as they are.
    let native = ChatResponse {
        tool_calls: vec![call("x", "read_file", "{}")],
        ..reply("```json\n{\"name\": \"read_file\", \"arguments\": {}}\n```")
    };
    assert_eq!(read_reply(native.clone(), &tools), native);
}
