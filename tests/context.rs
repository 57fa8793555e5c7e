//! Long sessions: context fill, compaction (by tokens, after an overflow, on resume), big
//! tool outputs and project instructions, through the real `squad exec` binary against
//! the mock server.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::*;
use common::*;
use serde_json::{Value, json};

/// A window of 20,000 tokens for the default model; compaction at 16,000.
const SMALL_WINDOW: &str =
    "[context_windows]\n\"gpt-4.1\" = 20000\n[provider]\nretry_base_ms = 10\n";

/// Four files of ~2,000 tokens each, each with its own marker.
fn write_files(sb: &Sandbox) {
    for (i, name) in ["ONE", "TWO", "THREE", "FOUR"].iter().enumerate() {
        let line = format!("FILE-{name}-MARKER {}\n", "x".repeat(60));
        sb.write(&format!("f{}.txt", i + 1), &line.repeat(7000 / line.len()));
    }
}

fn read(i: usize) -> MockResponse {
    MockResponse::tool_call(
        &format!("c{i}"),
        "read_file",
        &json!({"path": format!("f{i}.txt")}).to_string(),
    )
}

fn text_of(body: &Value) -> String {
    body["messages"].to_string()
}

/// Every assistant tool call in the request has exactly one `tool` message, right after.
fn assert_calls_answered(body: &Value) {
    let messages = body["messages"].as_array().unwrap();
    for (i, m) in messages.iter().enumerate() {
        let Some(calls) = m["tool_calls"].as_array() else {
            continue;
        };
        for call in calls {
            let id = call["id"].as_str().unwrap();
            let answers = messages
                .iter()
                .filter(|r| r["role"] == "tool" && r["tool_call_id"] == id)
                .count();
            assert_eq!(answers, 1, "call {id} has {answers} results");
        }
        let next = &messages[i + 1..i + 1 + calls.len()];
        assert!(
            next.iter().all(|r| r["role"] == "tool"),
            "results must follow their call"
        );
    }
    let calls: usize = messages
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .map(Vec::len)
        .sum();
    let results = messages.iter().filter(|m| m["role"] == "tool").count();
    assert_eq!(calls, results, "a result without its call");
}

fn is_summary_request(body: &Value) -> bool {
    body.get("tools").is_none()
        && transcript(body).last().is_some_and(|(role, text)| {
            role == "user" && text.contains("Summarize the conversation so far")
        })
}

#[tokio::test(flavor = "multi_thread")]
async fn usage_near_the_window_compacts_and_resume_sends_the_compacted_history() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config(SMALL_WINDOW);
    write_files(&sb);
    mock.push_all([
        read(1).with_usage(5000, 10),
        read(2).with_usage(9000, 10),
        read(3).with_usage(13000, 10),
        // 17,010 counted + the fourth file: past 16,000 before the next call.
        read(4).with_usage(17000, 10),
        MockResponse::text("SUMMARY-TEXT: read f1 and f2, both full of markers.")
            .with_usage(12000, 30),
        MockResponse::text("done").with_usage(9000, 5),
    ]);
    let run = sb
        .exec(
            &mock,
            &["--json", "--approval", "auto", "TASK: read the four files"],
        )
        .await;
    run.assert_ok();
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 6);
    assert!((0..4).all(|i| !is_summary_request(&reqs[i].body)));

    let summary = &reqs[4].body;
    assert!(is_summary_request(summary), "{}", text_of(summary));
    assert_eq!(transcript(summary)[0].0, "system");
    assert!(text_of(summary).contains("FILE-ONE-MARKER"));

    let next = &reqs[5].body;
    let t = text_of(next);
    assert!(next.get("tools").is_some());
    assert!(t.contains("TASK: read the four files"), "the task is kept");
    assert!(t.contains("SUMMARY-TEXT"), "the summary is sent");
    assert!(
        t.contains("FILE-THREE-MARKER") && t.contains("FILE-FOUR-MARKER"),
        "recent turns are kept"
    );
    assert!(
        !t.contains("FILE-ONE-MARKER") && !t.contains("FILE-TWO-MARKER"),
        "early items are gone"
    );
    assert_calls_answered(next);

    let events = run.events();
    let compacted = of_type(&events, "compacted");
    assert_eq!(compacted.len(), 1);
    let c = compacted[0];
    assert!(c["tokens_before"].as_u64().unwrap() >= 16000, "{c}");
    assert!(c["tokens_after"].as_u64().unwrap() < 16000, "{c}");
    assert_eq!(c["context_window"], 20000);
    assert_eq!(c["replaced"], 4);
    let usage = of_type(&events, "usage");
    assert_eq!(usage[0]["context_tokens"], 5010);
    assert_eq!(usage[0]["context_window"], 20000);
    assert_eq!(
        usage[4]["context_window"], 0,
        "the summary call is not the context"
    );

    // Resume: the compacted history goes back, not the original.
    mock.push(MockResponse::text("resumed"));
    sb.exec(&mock, &["--resume", "last", "and now?"])
        .await
        .assert_ok();
    let body = &mock.requests()[6].body;
    let t = text_of(body);
    assert!(t.contains("SUMMARY-TEXT") && t.contains("FILE-FOUR-MARKER"));
    assert!(
        !t.contains("FILE-ONE-MARKER"),
        "resume restored the original history"
    );
    assert_calls_answered(body);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_context_length_error_compacts_once_and_the_call_is_retried() {
    let shapes = [
        (
            "openai",
            json!({"error": {"message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.", "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}),
            20000,
        ),
        (
            "llama.cpp",
            json!({"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 17000, "n_ctx": 16000}}),
            16000,
        ),
        (
            "vllm",
            json!({"object": "error", "message": "This model's maximum context length is 18000 tokens. However, you requested 19000 tokens (19000 in the messages, 0 in the completion). Please reduce the length of the messages or completion.", "type": "BadRequestError", "param": null, "code": 400}),
            18000,
        ),
    ];
    for (server, body, window) in shapes {
        let mock = MockServer::start().await;
        let sb = Sandbox::new();
        sb.workspace_config(SMALL_WINDOW);
        write_files(&sb);
        mock.push_all([
            read(1),
            read(2),
            read(3),
            MockResponse::error_body(400, body),
            MockResponse::text("SUMMARY-TEXT"),
            MockResponse::text("done after compaction"),
        ]);
        let run = sb.exec(&mock, &["--json", "TASK: read them"]).await;
        run.assert_ok();
        let reqs = mock.requests();
        assert_eq!(reqs.len(), 6, "{server}: one compaction, one retry");
        assert!(is_summary_request(&reqs[4].body), "{server}");
        let retry = text_of(&reqs[5].body);
        assert!(retry.contains("SUMMARY-TEXT"), "{server}");
        assert!(!retry.contains("FILE-ONE-MARKER"), "{server}");
        assert!(retry.contains("FILE-THREE-MARKER"), "{server}");
        assert_calls_answered(&reqs[5].body);
        let events = run.events();
        assert!(of_type(&events, "error").is_empty(), "{server}: {events:?}");
        assert_eq!(of_type(&events, "retrying").len(), 0, "{server}");
        let c = of_type(&events, "compacted");
        assert_eq!(c.len(), 1, "{server}");
        assert_eq!(
            c[0]["context_window"], window,
            "{server}: window learned from the error"
        );
        let answer = items_of_kind(&events, "assistant");
        assert_eq!(answer.last().unwrap()["text"], "done after compaction");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_overflow_that_compacting_cannot_cure_is_a_clear_error_and_the_session_goes_on() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config(SMALL_WINDOW);
    write_files(&sb);
    // A server that refuses every request but a summary's, however short.
    mock.set_responder(|body| {
        if is_summary_request(body) {
            return MockResponse::text("SUMMARY-TEXT");
        }
        match tool_count(body) {
            n @ 0..=2 if !text_of(body).contains("SUMMARY-TEXT") => read(n + 1),
            _ => MockResponse::error(
                400,
                "This model's maximum context length is 20000 tokens. However, you requested 25000 tokens.",
            ),
        }
    });
    let run = sb.exec(&mock, &["TASK: read them"]).await;
    assert_eq!(run.code, 1, "stderr: {}", run.stderr);
    let last = run.stderr.lines().last().unwrap();
    assert!(
        last.contains("does not fit the context window")
            && (last.contains("even after compacting")
                || last.contains("nothing is left to compact")),
        "{last}"
    );
    // Harder each time, and bounded: at most three rounds of making it fit.
    let reqs = mock.requests();
    let refused = reqs.iter().filter(|r| !is_summary_request(&r.body)).count() - 3;
    assert!((2..=4).contains(&refused), "{refused} refused calls");
    assert!(reqs.len() <= 3 + 4 + 3, "{} requests", reqs.len());
    // The session is not dead: the next message works on the compacted history.
    mock.set_responder(|_| MockResponse::text("still here"));
    let at = mock.requests().len();
    let run = sb.exec(&mock, &["--resume", "last", "go on"]).await;
    run.assert_ok();
    assert_eq!(run.stdout.trim(), "still here");
    let t = text_of(&mock.requests()[at].body);
    assert!(t.contains("SUMMARY-TEXT") && !t.contains("FILE-ONE-MARKER"));
    assert_calls_answered(&mock.requests()[at].body);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_servers_count_is_the_truth_when_it_refuses_a_history_squad_thinks_small() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config("[context_windows]\n\"gpt-4.1\" = 8192\n[provider]\nretry_base_ms = 10\n");
    sb.write("a.txt", &"alpha ".repeat(300));
    sb.write("b.txt", &"beta ".repeat(300));
    // Squad estimates this history at well under 8,192 tokens; the server counts 9,000.
    mock.set_responder(|body| {
        if is_summary_request(body) {
            return MockResponse::text("SUMMARY-TEXT: read a.txt and b.txt");
        }
        let summarized = text_of(body).contains("SUMMARY-TEXT");
        match tool_count(body) {
            0 if !summarized => MockResponse::tool_call("a", "read_file", r#"{"path":"a.txt"}"#),
            1 if !summarized => MockResponse::tool_call("b", "read_file", r#"{"path":"b.txt"}"#),
            2 if !summarized => MockResponse::error_body(
                400,
                json!({"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 9000, "n_ctx": 8192}}),
            ),
            _ => MockResponse::text("both read"),
        }
    });
    let run = sb
        .exec(&mock, &["--json", "TASK: read a.txt and b.txt"])
        .await;
    run.assert_ok();
    let events = run.events();
    assert!(of_type(&events, "error").is_empty(), "{events:?}");
    assert_eq!(of_type(&events, "compacted").len(), 1);
    let answer = items_of_kind(&events, "assistant");
    assert_eq!(answer.last().unwrap()["text"], "both read");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_message_that_alone_does_not_fit_is_named() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config("[context_windows]\n\"gpt-4.1\" = 8192\n[provider]\nretry_base_ms = 10\n");
    mock.set_responder(|_| {
        MockResponse::error_body(
            400,
            json!({"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 30000, "n_ctx": 8192}}),
        )
    });
    let huge = format!("TASK: {}", "word ".repeat(20_000));
    let run = sb.exec(&mock, &[&huge]).await;
    assert_eq!(run.code, 1, "stderr: {}", run.stderr);
    let last = run.stderr.lines().last().unwrap();
    assert!(
        last.contains("nothing is left to compact")
            && last.contains("its largest part is a message of the user"),
        "{last}"
    );
    assert_eq!(mock.requests().len(), 1, "no summary of nothing, no retry");
}

#[tokio::test(flavor = "multi_thread")]
async fn agents_md_reaches_the_root_and_its_workers() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.ws().join(".git")).unwrap();
    sb.write(
        "AGENTS.md",
        "# House rules\nAGENTS-MD-MARKER: indent with tabs.\n",
    );
    mock.set_responder(|body| {
        if is_worker(body) {
            return MockResponse::tool_call("r", "return_results", &good_result("ok").to_string());
        }
        match tool_count(body) {
            0 => spawn("agentic_coder", "look around"),
            1 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            _ => MockResponse::text("done"),
        }
    });
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "go"])
        .await;
    run.assert_ok();
    let reqs = mock.requests();
    let root = reqs.iter().find(|r| !is_worker(&r.body)).unwrap();
    let worker = reqs.iter().find(|r| is_worker(&r.body)).unwrap();
    for (who, r) in [("root", root), ("worker", worker)] {
        let system = r.system_prompt().unwrap();
        assert!(system.contains("AGENTS-MD-MARKER"), "{who}: {system}");
        assert!(system.contains("AGENTS.md"), "{who}");
    }
    let events = run.events();
    let loaded = of_type(&events, "instructions_loaded");
    assert_eq!(loaded.len(), 1);
    assert!(
        loaded[0]["files"][0]
            .as_str()
            .unwrap()
            .ends_with("AGENTS.md")
    );
    assert_eq!(loaded[0]["cut"], false);
    // Text mode says so too.
    mock.set_responder(|_| MockResponse::text("hi"));
    let run = sb.exec(&mock, &["hello"]).await;
    run.assert_ok();
    assert!(
        run.stderr.contains("project instructions: "),
        "{}",
        run.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_output_of_one_megabyte_is_cut_with_a_note() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config("[tools]\nread_max_bytes = 2000000\n");
    let big: String = (1..=20_000)
        .map(|i| format!("line {i:05} {}\n", "y".repeat(40)))
        .collect();
    assert!(big.len() >= 1_000_000);
    sb.write("big.log", &big);
    mock.push_all([
        MockResponse::tool_call("b", "read_file", r#"{"path":"big.log"}"#),
        MockResponse::text("read it"),
    ]);
    let run = sb.exec(&mock, &["--json", "read big.log"]).await;
    run.assert_ok();
    let results = tool_messages(&mock.requests()[1].body);
    let output = &results[0].1;
    assert!(
        output.len() <= 16 * 1024 + 600,
        "{} bytes kept",
        output.len()
    );
    assert!(output.starts_with("line 00001 "));
    assert!(
        output
            .trim_end()
            .ends_with(&format!("line 20000 {}", "y".repeat(40)))
    );
    let note = output.lines().find(|l| l.starts_with("[squad:")).unwrap();
    assert!(note.contains("cut from the middle"), "{note}");
    assert!(
        note.contains("read_file path=\"big.log\" start_line="),
        "{note}"
    );
    // The log and the front ends see the same, small item.
    let events = run.events();
    let item = items_of_kind(&events, "tool_result")[0];
    assert_eq!(item["output"].as_str().unwrap(), output);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_compact_op_summarizes_all_but_the_task_and_the_latest_turn() {
    use ::squad::protocol::{ApprovalPolicy, EventKind, Op};
    use common::engine::*;
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    write_files(&sb);
    mock.push_all([
        read(1),
        MockResponse::text("first file read"),
        MockResponse::text("second answer"),
        MockResponse::text("SUMMARY-TEXT"),
        MockResponse::text("third answer"),
    ]);
    let mut handle = start_engine(&mock, &sb, ApprovalPolicy::Auto).await;
    let root = handle.info.root_agent;
    let mut seen = Vec::new();
    for message in ["TASK: read f1.txt", "and then?"] {
        say(&handle, message);
        next_event(&mut handle, &mut seen, |e| {
            matches!(e.kind, EventKind::Idle)
        })
        .await;
    }
    handle.ops.send(Op::Compact { agent_id: root }).unwrap();
    let compacted = next_event(&mut handle, &mut seen, |e| {
        matches!(e.kind, EventKind::Compacted { .. })
    })
    .await;
    let EventKind::Compacted { replaced, .. } = compacted.kind else {
        unreachable!()
    };
    assert_eq!(replaced, 3, "the call, its result and the first answer");
    assert!(is_summary_request(&mock.requests()[3].body));
    // Done: the tree is idle again.
    next_event(&mut handle, &mut seen, |e| {
        matches!(e.kind, EventKind::Idle)
    })
    .await;
    say(&handle, "and now?");
    next_event(&mut handle, &mut seen, |e| {
        matches!(e.kind, EventKind::Idle)
    })
    .await;
    let roles: Vec<(String, String)> = transcript(&mock.requests()[4].body);
    let texts: Vec<&str> = roles.iter().map(|(_, t)| t.as_str()).collect();
    assert!(texts[1].starts_with("TASK: read f1.txt") && texts[1].contains("SUMMARY-TEXT"));
    assert_eq!(
        texts[1..].len(),
        3,
        "task + summary, the latest turn, the new message: {roles:?}"
    );
    assert!(
        !mock.requests()[4]
            .body
            .to_string()
            .contains("FILE-ONE-MARKER")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn compact_with_nothing_to_compact_is_a_notice_not_an_error() {
    use ::squad::protocol::{ApprovalPolicy, EventKind, Op};
    use common::engine::*;
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.push_all([MockResponse::text("hello")]);
    let mut handle = start_engine(&mock, &sb, ApprovalPolicy::Auto).await;
    let root = handle.info.root_agent;
    let mut seen = Vec::new();
    say(&handle, "hi");
    next_event(&mut handle, &mut seen, |e| {
        matches!(e.kind, EventKind::Idle)
    })
    .await;
    handle.ops.send(Op::Compact { agent_id: root }).unwrap();
    let notice = next_event(&mut handle, &mut seen, |e| {
        matches!(e.kind, EventKind::Notice { .. } | EventKind::Error { .. })
    })
    .await;
    let EventKind::Notice { message } = notice.kind else {
        panic!("expected a notice, got {:?}", notice.kind)
    };
    assert!(message.contains("nothing to compact"), "{message}");
    assert_eq!(mock.requests().len(), 1, "no summary request was made");
}
