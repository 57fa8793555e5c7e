//! Quotes before a fan-out and the waste report (issue 55 parts 1 and 3), end to end: the
//! real `squad exec --json` against the mock model server, whose usage counts each
//! request's bytes (a quarter of them, as a tokenizer might), so what the quote projects
//! is measured against what the requests really weighed.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::*;
use common::*;
use serde_json::{Value, json};
use std::collections::HashMap;

/// What the mock says a request weighed: a token per four bytes of its body.
fn weighed(body: &Value, answer: MockResponse) -> MockResponse {
    answer.with_usage(body.to_string().len() as u64 / 4, 40)
}

fn read(id: &str, path: &str) -> MockToolCall {
    call(id, "read_file", json!({"path": path}))
}

fn returns(id: &str) -> MockResponse {
    MockResponse::tool_call(id, "return_results", &good_result("looked").to_string())
}

fn spawns(calls: &[(&str, String)]) -> MockResponse {
    MockResponse::tool_calls(
        calls
            .iter()
            .enumerate()
            .map(|(i, (role, task))| {
                call(
                    &format!("s{i}"),
                    "spawn_agent",
                    json!({"role_name": role, "task_prompt": task}),
                )
            })
            .collect(),
    )
}

fn wait() -> MockResponse {
    MockResponse::tool_call("w", "wait_for_agents", "{}")
}

/// Tokens each agent spent, from its `usage` events.
fn spent(events: &[Value]) -> HashMap<String, u64> {
    let mut out = HashMap::new();
    for u in of_type(events, "usage") {
        let id = u["agent_id"].as_str().unwrap().to_string();
        *out.entry(id).or_default() +=
            u["prompt_tokens"].as_u64().unwrap() + u["completion_tokens"].as_u64().unwrap();
    }
    out
}

/// A code reviewer reads two files, an architect one, then each returns. The supervisor
/// runs one of each, then a fan-out of three with tasks five to ten times as long.
fn fan_out_script(body: &Value) -> MockResponse {
    let answer = if is_role(body, "code_reviewer") {
        match tool_count(body) {
            0 => MockResponse::tool_calls(vec![read("r1", "a.txt")]),
            1 => MockResponse::tool_calls(vec![read("r2", "b.txt")]),
            _ => returns("ret"),
        }
    } else if is_role(body, "architect") {
        match tool_count(body) {
            0 => MockResponse::tool_calls(vec![read("r1", "b.txt")]),
            _ => returns("ret"),
        }
    } else {
        let long = |n: usize, what: &str| {
            format!("{} {what}", "Check the parser's edge cases. ".repeat(n))
        };
        match tool_count(body) {
            0 => spawns(&[
                ("code_reviewer", "Review a.txt.".into()),
                ("architect", "Sketch b.txt.".into()),
            ]),
            2 => wait(),
            3 => spawns(&[
                ("code_reviewer", long(40, "first")),
                ("code_reviewer", long(80, "second")),
                ("architect", long(60, "third")),
            ]),
            6 => wait(),
            _ => MockResponse::text("done"),
        }
    };
    weighed(body, answer)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_three_worker_fan_outs_quote_is_within_a_quarter_of_what_it_spent() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("a.txt", &"alpha line\n".repeat(200));
    sb.write("b.txt", &"beta line\n".repeat(120));
    sb.workspace_config("[team]\nrelease_after_s = 0\n");
    mock.set_responder(fan_out_script);
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "review"])
        .await;
    run.assert_ok();
    let events = run.events();

    let quotes = of_type(&events, "quote");
    let workers: Vec<&Value> = quotes
        .iter()
        .flat_map(|q| q["workers"].as_array().unwrap())
        .collect();
    assert_eq!(workers.len(), 5, "every spawn is quoted: {quotes:#?}");
    // The first two had no finished worker of their role: the stated default.
    assert!(workers[..2].iter().all(|w| w["basis"] == 0), "{workers:#?}");
    let fan_out: Vec<&Value> = workers
        .iter()
        .copied()
        .filter(|w| w["basis"] == 1)
        .collect();
    assert_eq!(fan_out.len(), 3, "{workers:#?}");
    // The spawn that brought the live workers past two showed the whole fan-out.
    let shown = quotes
        .iter()
        .find(|q| q["fan_out"] == true)
        .unwrap_or_else(|| panic!("no fan-out quote: {quotes:#?}"));
    assert_eq!(shown["live_workers"], 2, "{shown:#?}");
    assert!(shown["tokens"].as_u64().unwrap() > 0);
    // The second and third of a role reuse the first's prompt and tools: a cached prefix.
    assert!(
        fan_out
            .iter()
            .any(|w| w["shared_prefix_tokens"].as_u64().unwrap() > 0),
        "{fan_out:#?}"
    );

    let spent = spent(&events);
    let quoted: u64 = fan_out
        .iter()
        .map(|w| w["prompt_tokens"].as_u64().unwrap() + w["completion_tokens"].as_u64().unwrap())
        .sum();
    let actual: u64 = fan_out
        .iter()
        .map(|w| spent[w["agent_id"].as_str().unwrap()])
        .sum();
    let off = quoted as f64 / actual as f64 - 1.0;
    assert!(
        off.abs() <= 0.25,
        "quoted {quoted} tokens, spent {actual} ({:+.0}%)",
        off * 100.0
    );

    // Afterwards, the quote beside the actual per role, in the summary and the table.
    let summary = of_type(&events, "summary")[0];
    let roles: Vec<&str> = summary["quotes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["architect", "code_reviewer"], "{summary:#?}");
    let text = sb.exec(&mock, &["--approval", "auto", "review"]).await;
    text.assert_ok();
    assert!(
        text.stderr.contains("quote against actual, per role:")
            && text.stderr.contains("code_reviewer: 3 workers quoted "),
        "{}",
        text.stderr
    );
    eprintln!(
        "fan-out of three: quoted {quoted} tokens, spent {actual} ({:+.1}%)",
        off * 100.0
    );
}

/// Three reviewers at once, each returning at its first call.
fn three_at_once(body: &Value) -> MockResponse {
    let answer = if is_worker(body) {
        returns("ret")
    } else {
        match tool_count(body) {
            0 => spawns(&[
                ("code_reviewer", "Review a.txt.".into()),
                ("code_reviewer", "Review b.txt.".into()),
                ("code_reviewer", "Review c.txt.".into()),
            ]),
            3 => wait(),
            _ => MockResponse::text("done"),
        }
    };
    weighed(body, answer)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fan_out_quoted_above_what_is_left_is_refused_naming_both() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    // gpt-4.1 at its default price ($2 a million prompt tokens): a default quote of a
    // reviewer is a few cents; the session has two left.
    sb.workspace_config("[limits]\nmax_session_cost_usd = 0.02\n");
    mock.set_responder(three_at_once);
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "review"])
        .await;
    let events = run.events();
    let spawned = of_type(&events, "agent_spawned")
        .iter()
        .filter(|e| !e["parent_id"].is_null())
        .count();
    let outputs: Vec<&str> = items_of_kind(&events, "tool_result")
        .into_iter()
        .filter_map(|e| e["output"].as_str())
        .collect();
    assert_eq!(spawned, 2, "{outputs:#?}");
    let refused = items_of_kind(&events, "tool_result")
        .into_iter()
        .filter_map(|e| e["output"].as_str())
        .find(|o| o.contains("quote"))
        .unwrap_or_else(|| panic!("no refusal: {events:#?}"));
    assert!(
        refused.contains("this spawn's quote is $")
            && refused.contains("(1 new worker and 2 running)")
            && refused.contains("left of the budget"),
        "{refused}"
    );
    let fan_out = of_type(&events, "quote")
        .into_iter()
        .find(|q| q["fan_out"] == true)
        .unwrap_or_else(|| panic!("no fan-out quote"));
    let (cost, left) = (
        fan_out["cost_usd"].as_f64().unwrap(),
        fan_out["left_usd"].as_f64().unwrap(),
    );
    assert!(cost > left, "{fan_out:#?}");
    assert!(
        refused.contains(&::squad::protocol::dollars(left)),
        "{refused}"
    );
}

/// A reviewer that reports at once (no tool call of work), read by the supervisor; then
/// two side by side: one reads a file and returns, the other reads one and, a moment
/// later, answers with a call that spends the session's budget, so the team is paused
/// and the supervisor, waiting for both, never reads the first one's result.
fn waste_script(body: &Value) -> MockResponse {
    if is_worker(body) {
        let task = transcript(body)
            .into_iter()
            .find(|(r, _)| r == "user")
            .map(|(_, t)| t)
            .unwrap_or_default();
        let small = |r: MockResponse| r.with_usage(500, 40);
        return match (task.as_str(), tool_count(body)) {
            ("Report at once.", _) => small(returns("ret")),
            ("Read a.txt.", 0) => small(MockResponse::tool_calls(vec![read("r", "a.txt")])),
            ("Read a.txt.", _) => small(returns("ret")),
            (_, 0) => small(MockResponse::tool_calls(vec![read("r", "b.txt")])),
            // $0.20 of prompt at $2 a million: past the session's $0.05.
            _ => returns("ret")
                .with_usage(100_000, 40)
                .with_delay(std::time::Duration::from_millis(1500)),
        };
    }
    let answer = match tool_count(body) {
        0 => spawns(&[("code_reviewer", "Report at once.".into())]),
        1 => wait(),
        2 => spawns(&[
            ("code_reviewer", "Read a.txt.".into()),
            ("code_reviewer", "Spend.".into()),
        ]),
        4 => wait(),
        _ => MockResponse::text("done"),
    };
    answer.with_usage(500, 40)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_waste_report_names_an_unread_result_and_a_report_without_tool_calls() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    sb.write("b.txt", "beta\n");
    sb.workspace_config("[limits]\nmax_session_cost_usd = 0.05\n");
    mock.set_responder(waste_script);
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "review"])
        .await;
    let events = run.events();
    let workers: Vec<String> = of_type(&events, "agent_spawned")
        .iter()
        .filter(|e| !e["parent_id"].is_null())
        .map(|e| e["agent_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(workers.len(), 3, "{}", run.stderr);
    let summary = of_type(&events, "summary")[0];
    let lines = summary["waste"]["lines"].as_array().unwrap();
    let named = |kind: &str| -> Vec<String> {
        lines
            .iter()
            .filter(|l| l["kind"] == kind)
            .flat_map(|l| l["agents"].as_array().unwrap())
            .map(|a| a["agent_id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(named("no_tool_calls"), [workers[0].clone()], "{lines:#?}");
    assert_eq!(named("unread"), [workers[1].clone()], "{lines:#?}");
    let unread = lines.iter().find(|l| l["kind"] == "unread").unwrap();
    // What the unread worker spent: two calls of 540 tokens.
    assert_eq!(unread["tokens"], 1_080, "{unread:#?}");

    // The same lines under exec's table, each naming its worker.
    let text = sb.exec(&mock, &["--approval", "auto", "review"]).await;
    let err = &text.stderr;
    let line = |label: &str| {
        err.lines()
            .find(|l| l.contains(label))
            .unwrap_or_else(|| panic!("no `{label}` line in:\n{err}"))
            .to_string()
    };
    assert!(
        line("results nobody read: ").contains("(code_reviewer)"),
        "{err}"
    );
    assert!(
        line("reports made with zero tool calls: ").contains("(code_reviewer)"),
        "{err}"
    );
}
