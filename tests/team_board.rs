//! The team claims its work (issue 54, parts 2 and 3, and the done-when scenario): three
//! kept workers split a board of five tasks by claiming, two writing disjoint declared
//! paths at once, the third refused a claim whose paths overlap a running task (naming
//! its holder) until that one is done; one messages another mid-task and the message is
//! in the recipient's next request; the team ends by itself when the board is done.
//! Real `squad exec` binary, mock server over HTTP.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::*;
use common::*;
use serde_json::{Value, json};

fn mentions(body: &Value, needle: &str) -> bool {
    transcript(body).iter().any(|(_, c)| c.contains(needle))
}

/// The last message of the request: its role and text.
fn last(body: &Value) -> (String, String) {
    transcript(body).last().cloned().unwrap_or_default()
}

/// The name of the tool whose result ends the request.
fn last_call(body: &Value) -> Option<String> {
    let msgs = body["messages"].as_array()?;
    let result = msgs.iter().rev().find(|m| m["role"] == "tool")?;
    let id = result["tool_call_id"].as_str()?;
    msgs.iter().rev().find_map(|m| {
        m["tool_calls"].as_array()?.iter().find_map(|c| {
            (c["id"] == id).then(|| c["function"]["name"].as_str().unwrap_or("").to_string())
        })
    })
}

fn tool(name: &str, args: Value) -> MockResponse {
    MockResponse::tool_call(&format!("c{}", rand_id()), name, &args.to_string())
}

fn rand_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

fn sleep(s: f32) -> MockResponse {
    tool("run_command", json!({"command": format!("sleep {s}")}))
}

/// The task the worker's last successful claim gave it.
fn claimed_task(body: &Value) -> Option<String> {
    tool_messages(body).iter().rev().find_map(|(_, c)| {
        let v: Value = serde_json::from_str(c).ok()?;
        v["brief"].as_str()?;
        v["task_id"].as_str().map(str::to_string)
    })
}

/// How many of the tool results hold `needle`.
fn results_with(body: &Value, needle: &str) -> usize {
    tool_messages(body)
        .iter()
        .filter(|(_, c)| c.contains(needle))
        .count()
}

/// How many commands ran since the worker's last claim.
fn sleeps_since_claim(body: &Value) -> usize {
    let results = tool_messages(body);
    let from = results
        .iter()
        .rposition(|(_, c)| c.contains("\"brief\""))
        .unwrap_or(0);
    results[from..]
        .iter()
        .filter(|(_, c)| c.contains("exit code: 0"))
        .count()
}

/// Each worker: claim (W1 T1, W2 T2, W3 T3 after a short sleep, then the first free),
/// work (W1 messages W2 between two sleeps, W2 sleeps long), write its task's file,
/// return, and claim again when offered.
fn worker(body: &Value) -> MockResponse {
    let me = ["W1", "W2", "W3"]
        .into_iter()
        .find(|w| mentions(body, &format!("({w})")))
        .unwrap_or("W3");
    let (role, text) = last(body);
    // A teammate's message came after the last result: go on from that result.
    if role == "user" && !text.starts_with("[message from") {
        let first = !mentions(body, "\"brief\"") && !mentions(body, "overlap");
        return match (me, first) {
            ("W1", true) => tool("claim_task", json!({"task_id": "T1"})),
            ("W2", true) => tool("claim_task", json!({"task_id": "T2"})),
            ("W3", true) if results_with(body, "exit code: 0") == 0 => sleep(0.5),
            _ if text.contains("Task board: ready") || first => tool("claim_task", json!({})),
            _ => tool("return_results", good_result("nothing left for me")),
        };
    }
    match last_call(body).as_deref() {
        Some("run_command") if me == "W3" && claimed_task(body).is_none() => {
            tool("claim_task", json!({"task_id": "T3"}))
        }
        Some("claim_task") => {
            let (_, out) = tool_messages(body).last().cloned().unwrap();
            if out.contains("\"brief\"") {
                // W1 and W2 work a while on their first task; later ones are quick.
                let first_task = results_with(body, "\"brief\"") == 1;
                return match me {
                    "W1" | "W2" if first_task => sleep(if me == "W1" { 1.0 } else { 2.5 }),
                    _ => write(body),
                };
            }
            if out.contains("overlap") && results_with(body, "\"brief\"") == 0 {
                // Refused T3: take whatever is free instead.
                return tool("claim_task", json!({}));
            }
            MockResponse::text("nothing free for me")
        }
        Some("run_command") if me == "W1" && results_with(body, "\"delivered\"") == 0 => tool(
            "message_agent",
            json!({"to": "w2", "text": "LEXER-API-CHANGED: Token::Ident is now Token::Name"}),
        ),
        Some("message_agent") if sleeps_since_claim(body) < 2 => sleep(1.0),
        Some("run_command") => write(body),
        Some("write_file") => tool(
            "return_results",
            good_result(&format!(
                "W-DONE {}",
                claimed_task(body).unwrap_or_default()
            )),
        ),
        _ => tool("return_results", good_result("nothing left for me")),
    }
}

fn write(body: &Value) -> MockResponse {
    let task = claimed_task(body).unwrap();
    let dir = dir_of(&task);
    tool(
        "write_file",
        json!({"path": format!("{dir}/{task}.txt"), "content": format!("{task}\n")}),
    )
}

fn dir_of(task: &str) -> &'static str {
    match task {
        "T1" | "T3" => "lexer",
        "T2" => "parser",
        "T4" => "docs",
        _ => "tests",
    }
}

fn plan() -> MockResponse {
    let task =
        |id: &str, paths: &[&str]| json!({"id": id, "title": format!("do {id}"), "paths": paths});
    tool(
        "plan_tasks",
        json!({"tasks": [
            task("T1", &["lexer/**"]),
            task("T2", &["parser/**"]),
            task("T3", &["lexer/T3.txt"]),
            task("T4", &["docs/**"]),
            task("T5", &["tests/**"]),
        ]}),
    )
}

fn spawn_three() -> MockResponse {
    let spawn = |w: &str| {
        call(
            &format!("s{w}"),
            "spawn_agent",
            json!({"role_name": "agentic_coder", "name": w.to_lowercase(), "keep": true,
                   "task_prompt": format!("Claim tasks from the board with claim_task until none is left. ({w})")}),
        )
    };
    MockResponse::tool_calls(vec![spawn("W1"), spawn("W2"), spawn("W3")])
}

#[tokio::test(flavor = "multi_thread")]
async fn three_workers_split_a_board_by_claiming_and_the_team_ends_by_itself() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_worker(body) {
            return worker(body);
        }
        match tool_count(body) {
            0 => plan(),
            1 => spawn_three(),
            _ => MockResponse::text("the board is done"),
        }
    });
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "split the work"])
        .await;
    run.assert_ok();
    let events = run.events();

    // Every task done, each by one worker, each file written.
    let mut last: std::collections::BTreeMap<String, Value> = Default::default();
    for e in events.iter().filter(|e| e["type"] == "task_updated") {
        last.insert(
            e["task"]["id"].as_str().unwrap().to_string(),
            e["task"].clone(),
        );
    }
    assert_eq!(last.len(), 5);
    for (id, t) in &last {
        assert_eq!(t["status"], "done", "{id}: {t}");
        assert!(
            sb.ws().join(dir_of(id)).join(format!("{id}.txt")).exists(),
            "{id}"
        );
    }
    // Never two owners: each task goes running once.
    for id in last.keys() {
        let runs = events
            .iter()
            .filter(|e| {
                e["type"] == "task_updated"
                    && e["task"]["id"] == id.as_str()
                    && e["task"]["status"] == "running"
            })
            .count();
        assert_eq!(runs, 1, "{id} was dispatched {runs} times");
    }
    // The claims were the workers' own (agent_id the claimer, which is the assignee).
    let claims: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "task_updated" && e["task"]["status"] == "running")
        .collect();
    assert!(
        claims
            .iter()
            .all(|e| e["agent_id"] == e["task"]["assignee"] && e["task"]["claimed"] == true)
    );

    let reqs: Vec<Value> = mock.requests().into_iter().map(|r| r.body).collect();
    // W3 was refused T3 while W1 held T1, naming W1.
    let w1 = last["T1"]["assignee"].as_str().unwrap()[..8].to_string();
    let refused = reqs
        .iter()
        .filter(|b| is_worker(b) && mentions(b, "(W3)"))
        .flat_map(tool_messages)
        .find(|(_, c)| c.contains("overlap task T1"))
        .expect("W3's claim of T3 refused");
    assert!(
        refused.1.contains(&format!("worker {w1} holds")),
        "{}",
        refused.1
    );
    // T1 and T2 ran at once: T2 was claimed before T1 was done.
    let at = |pred: &dyn Fn(&Value) -> bool| events.iter().position(pred).unwrap();
    let t1_done = at(&|e| {
        e["type"] == "task_updated" && e["task"]["id"] == "T1" && e["task"]["status"] == "done"
    });
    let t2_run = at(&|e| {
        e["type"] == "task_updated" && e["task"]["id"] == "T2" && e["task"]["status"] == "running"
    });
    let t3_run = at(&|e| {
        e["type"] == "task_updated" && e["task"]["id"] == "T3" && e["task"]["status"] == "running"
    });
    assert!(t2_run < t1_done, "T1 and T2 in parallel");
    assert!(t3_run > t1_done, "T3 only once T1 was done");

    // W1's message reached W2 mid-task: in W2's first request after it was sent, before
    // W2 wrote its file.
    let w2_reqs: Vec<&Value> = reqs
        .iter()
        .filter(|b| is_worker(b) && mentions(b, "(W2)"))
        .collect();
    let first_with = w2_reqs
        .iter()
        .position(|b| mentions(b, "LEXER-API-CHANGED"))
        .expect("the message in W2's requests");
    assert!(first_with > 0, "W2 had asked before the message came");
    assert!(
        !mentions(w2_reqs[first_with], "parser/T2.txt"),
        "before W2 wrote its file"
    );
    assert_eq!(
        events
            .iter()
            .filter(|e| e["type"] == "agent_messages_delivered")
            .count(),
        1
    );
}
