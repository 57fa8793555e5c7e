//! Temporary, kept and ad-hoc workers against the mock server: a worker whose result was
//! delivered frees its slot of `max_live_agents`; `[team] release_after_s` later it is
//! released and `speak_to_agent` says so, unless it was spawned with `keep: true`;
//! `spawn_agent`'s `tools` narrow what the worker's requests offer (and a wider list is
//! refused), its `instructions` join the worker's system prompt; `Op::SaveRole` writes a
//! role file that loads back; `--resume` reads all of it back.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use ::squad::protocol::{AgentId, ApprovalPolicy, Event, EventKind, Op};
use common::agents::*;
use common::engine::*;
use common::*;
use serde_json::{Value, json};
use std::time::Duration;

fn returns(summary: &str) -> MockResponse {
    MockResponse::tool_call("ret", "return_results", &good_result(summary).to_string())
}

fn wait_all() -> MockResponse {
    MockResponse::tool_call("w", "wait_for_agents", "{}")
}

fn root_turn_finished(root: AgentId) -> impl Fn(&Event) -> bool {
    move |e| e.agent_id == root && matches!(e.kind, EventKind::TurnFinished { .. })
}

/// The names of the tools a request offers.
fn offered(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The output of the tool call `call_id` in the request that carries it.
fn output_of(reqs: &[RecordedRequest], call_id: &str) -> String {
    reqs.iter()
        .flat_map(|r| tool_messages(&r.body))
        .find(|(id, _)| id == call_id)
        .map(|(_, out)| out)
        .unwrap_or_else(|| panic!("no result for call {call_id}"))
}

/// A speak_to_agent call to the `n`th worker the supervisor spawned.
fn speak_to(body: &Value, n: usize, call_id: &str, message: &str) -> MockResponse {
    let ids = spawned_ids(body);
    MockResponse::tool_calls(vec![call(
        call_id,
        "speak_to_agent",
        json!({"agent_id": ids[n], "message": message}),
    )])
}

#[tokio::test(flavor = "multi_thread")]
async fn a_delivered_worker_no_longer_counts_against_max_live_agents() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_worker(body) {
            return returns("looked");
        }
        match tool_count(body) {
            0 => spawn("code_reviewer", "first look"),
            // The first one has finished, maybe, but its result was not delivered: full.
            1 => MockResponse::tool_calls(vec![call(
                "full",
                "spawn_agent",
                json!({"role_name": "code_reviewer", "task_prompt": "too many"}),
            )]),
            2 => wait_all(),
            // Delivered: its slot is free for another.
            3 => MockResponse::tool_calls(vec![call(
                "again",
                "spawn_agent",
                json!({"role_name": "code_reviewer", "task_prompt": "second look"}),
            )]),
            4 => wait_all(),
            _ => MockResponse::text("two looks taken"),
        }
    });
    // The persona and one worker.
    let mut h = start_engine_with(&mock, &sb, ApprovalPolicy::Auto, |c| {
        c.limits.max_live_agents = 2;
    })
    .await;
    let root = h.info.root_agent;
    let mut seen = Vec::new();
    say(&h, "look twice");
    next_event(&mut h, &mut seen, |e| {
        e.agent_id == root && matches!(&e.kind, EventKind::ItemAdded { item: ::squad::protocol::HistoryItem::Assistant { text, .. } } if text == "two looks taken")
    })
    .await;
    let reqs = mock.requests();
    let full = output_of(&reqs, "full");
    assert!(
        full.contains("live agent limit reached (2 of max_live_agents = 2"),
        "{full}"
    );
    let again = output_of(&reqs, "again");
    assert!(again.contains("\"agent_id\""), "{again}");
    let tasks: Vec<String> = reqs
        .iter()
        .filter(|r| is_worker(&r.body))
        .map(|r| transcript(&r.body)[1].1.clone())
        .collect();
    assert_eq!(tasks, ["first look", "second look"]);
    // Not released: that is [team] release_after_s later (300 s by default).
    assert!(!seen.iter().any(|e| matches!(e.kind, EventKind::Released)));
    h.ops.send(Op::Shutdown).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn spawns_of_one_response_together_stay_within_max_live_agents() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    mock.set_responder(|body| {
        if is_worker(body) {
            return returns("looked");
        }
        match tool_count(body) {
            // Each reads a file for its worker first: all three are under way at once.
            0 => MockResponse::tool_calls(
                ["s1", "s2", "s3"]
                    .iter()
                    .map(|id| {
                        call(
                            id,
                            "spawn_agent",
                            json!({"role_name": "code_reviewer", "task_prompt": id, "files": ["a.txt"]}),
                        )
                    })
                    .collect(),
            ),
            3 => wait_all(),
            _ => MockResponse::text("done"),
        }
    });
    // The persona and one worker.
    let mut h = start_engine_with(&mock, &sb, ApprovalPolicy::Auto, |c| {
        c.limits.max_live_agents = 2;
    })
    .await;
    let root = h.info.root_agent;
    let mut seen = Vec::new();
    say(&h, "look three times");
    next_event(&mut h, &mut seen, root_turn_finished(root)).await;
    let reqs = mock.requests();
    let outputs: Vec<String> = ["s1", "s2", "s3"]
        .iter()
        .map(|id| output_of(&reqs, id))
        .collect();
    let started = outputs
        .iter()
        .filter(|o| o.contains("\"agent_id\""))
        .count();
    assert_eq!(started, 1, "{outputs:?}");
    assert_eq!(
        outputs
            .iter()
            .filter(|o| o.contains("live agent limit reached"))
            .count(),
        2,
        "{outputs:?}"
    );
    h.ops.send(Op::Shutdown).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_temporary_worker_is_released_and_says_so_and_a_kept_one_takes_follow_ups() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_worker(body) {
            return match tool_count(body) {
                0 => returns("first answer"),
                _ => MockResponse::text("kept and still here"),
            };
        }
        match tool_count(body) {
            0 => MockResponse::tool_call(
                "k",
                "spawn_agent",
                &json!({"role_name": "code_reviewer", "task_prompt": "kept task", "keep": true})
                    .to_string(),
            ),
            1 => spawn("code_reviewer", "temporary task"),
            2 => wait_all(),
            // Past release_after_s (1 s) for both.
            3 => speak_to(body, 1, "to_temp", "one more thing")
                .with_delay(Duration::from_millis(1_500)),
            4 => speak_to(body, 0, "to_kept", "one more thing"),
            _ => MockResponse::text("done"),
        }
    });
    let mut h = start_engine_with(&mock, &sb, ApprovalPolicy::Auto, |c| {
        c.team.release_after_s = 1;
    })
    .await;
    let root = h.info.root_agent;
    let mut seen = Vec::new();
    say(&h, "two workers");
    next_event(&mut h, &mut seen, |e| {
        e.agent_id == root && matches!(&e.kind, EventKind::ItemAdded { item: ::squad::protocol::HistoryItem::Assistant { text, .. } } if text == "done")
    })
    .await;
    let reqs = mock.requests();
    let ids = spawned_ids(&reqs.last().unwrap().body);
    let (kept, temp) = (ids[0].clone(), ids[1].clone());

    let refused = output_of(&reqs, "to_temp");
    assert!(
        refused.contains(&format!(
            "worker {} was released: its result was delivered and it was not kept",
            &temp[..8]
        )) && refused.contains("Spawn a new worker"),
        "{refused}"
    );
    let reply = output_of(&reqs, "to_kept");
    assert!(reply.contains("kept and still here"), "{reply}");
    let released: Vec<String> = seen
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Released))
        .map(|e| e.agent_id.to_string())
        .collect();
    assert_eq!(released, [temp.as_str()], "only the temporary worker");
    // The temporary worker got no request after its first; the kept one answered again.
    let by_task = |task: &str| {
        reqs.iter()
            .filter(|r| is_worker(&r.body) && transcript(&r.body)[1].1 == task)
            .count()
    };
    assert_eq!((by_task("temporary task"), by_task("kept task")), (1, 2));
    // The spawn of the kept worker said so in its options.
    assert!(seen.iter().any(|e| e.agent_id.to_string() == kept
        && matches!(&e.kind, EventKind::AgentOptions(o) if o.keep)));
    h.ops.send(Op::Shutdown).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn ad_hoc_tools_and_instructions_shape_the_workers_requests_and_save_as_a_role() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_worker(body) {
            return returns("one word");
        }
        match tool_count(body) {
            0 => MockResponse::tool_calls(vec![call(
                "narrow",
                "spawn_agent",
                json!({
                    "role_name": "agentic_coder",
                    "task_prompt": "name the crate",
                    "instructions": "Answer in one word.\nNever write files.",
                    "tools": ["list_files", "read_file"]
                }),
            )]),
            1 => wait_all(),
            _ => MockResponse::text("done"),
        }
    });
    let mut h = start_engine(&mock, &sb, ApprovalPolicy::Auto).await;
    let root = h.info.root_agent;
    let mut seen = Vec::new();
    say(&h, "narrow worker");
    next_event(&mut h, &mut seen, root_turn_finished(root)).await;

    let reqs = mock.requests();
    let worker = reqs.iter().find(|r| is_worker(&r.body)).unwrap();
    // Its role's order, with what it needs to report; nothing else of agentic_coder's.
    assert_eq!(
        offered(&worker.body),
        [
            "read_file",
            "list_files",
            "return_results",
            "message_supervisor"
        ]
    );
    let prompt = system(&worker.body);
    let coder_prompt_start = "You are";
    assert!(prompt.starts_with(coder_prompt_start), "{prompt}");
    assert!(
        prompt.contains(
            "\n\n# Instructions for this task, from your supervisor\nAnswer in one word.\nNever write files."
        ),
        "{prompt}"
    );
    let worker_id = seen
        .iter()
        .find(|e| {
            matches!(
                e.kind,
                EventKind::AgentSpawned {
                    parent_id: Some(_),
                    ..
                }
            )
        })
        .unwrap()
        .agent_id;

    // Saved as a role: the file loads back with the instructions and the tools.
    h.ops
        .send(Op::SaveRole {
            agent_id: worker_id,
            name: "one_word".into(),
        })
        .unwrap();
    let saved = next_event(&mut h, &mut seen, |e| {
        matches!(
            e.kind,
            EventKind::RoleSaved { .. } | EventKind::Error { .. }
        )
    })
    .await;
    let EventKind::RoleSaved { name, path } = saved.kind else {
        panic!("{saved:?}");
    };
    assert_eq!(name, "one_word");
    assert_eq!(path, sb.ws().join(".squad/roles/one_word.toml"));
    let roles = ::squad::roles::load_roles(sb.ws()).unwrap();
    assert!(roles.warnings.is_empty(), "{:?}", roles.warnings);
    let role = roles.get("one_word").unwrap();
    assert!(
        role.system_prompt
            .ends_with("Answer in one word.\nNever write files.\n")
    );
    assert_eq!(
        role.tools.as_deref().unwrap(),
        [
            "read_file",
            "list_files",
            "return_results",
            "message_supervisor"
        ]
    );
    assert!(
        role.enabled_agents.is_empty(),
        "narrowed without spawn_agent"
    );

    // The same name again, or a built-in's, is refused and nothing is overwritten.
    for taken in ["one_word", "copilot"] {
        h.ops
            .send(Op::SaveRole {
                agent_id: worker_id,
                name: taken.into(),
            })
            .unwrap();
        let refused = next_event(&mut h, &mut seen, |e| {
            matches!(
                e.kind,
                EventKind::RoleSaved { .. } | EventKind::Error { .. }
            )
        })
        .await;
        assert!(
            matches!(&refused.kind, EventKind::Error { message } if message.contains(&format!("a role named `{taken}` exists"))),
            "{refused:?}"
        );
    }
    h.ops.send(Op::Shutdown).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wider_tool_list_is_refused_naming_the_tools_and_what_is_allowed() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| match tool_count(body) {
        0 => MockResponse::tool_calls(vec![call(
            "wide",
            "spawn_agent",
            json!({
                "role_name": "code_reviewer",
                "task_prompt": "review",
                "tools": ["read_file", "write_file", "run_command"]
            }),
        )]),
        _ => MockResponse::text("refused"),
    });
    let mut h = start_engine(&mock, &sb, ApprovalPolicy::Auto).await;
    let root = h.info.root_agent;
    let mut seen = Vec::new();
    say(&h, "wide worker");
    next_event(&mut h, &mut seen, root_turn_finished(root)).await;
    let refused = output_of(&mock.requests(), "wide");
    assert_eq!(
        refused,
        "tools: `write_file`, `run_command` not allowed: a worker gets only tools of both its \
         role `code_reviewer` and yours (`copilot`); allowed: read_file, list_files, \
         search_files, message_agent, claim_task, ask_user"
    );
    assert!(
        !seen.iter().any(|e| matches!(
            e.kind,
            EventKind::AgentSpawned {
                parent_id: Some(_),
                ..
            }
        )),
        "no worker started"
    );
    h.ops.send(Op::Shutdown).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn resume_reads_released_and_ad_hoc_workers_back() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config("[team]\nrelease_after_s = 0\n");
    mock.set_responder(|body| {
        if is_worker(body) {
            return match tool_count(body) {
                0 => returns("first answer"),
                _ => MockResponse::text("kept, narrowed and still here"),
            };
        }
        let resumed = transcript(body).iter().any(|(_, c)| c == "follow up");
        match (resumed, tool_count(body)) {
            (false, 0) => MockResponse::tool_call(
                "k",
                "spawn_agent",
                &json!({"role_name": "code_reviewer", "task_prompt": "kept task", "keep": true,
                        "instructions": "Say where you are.", "tools": ["read_file"]})
                .to_string(),
            ),
            (false, 1) => spawn("code_reviewer", "temporary task"),
            (false, 2) => wait_all(),
            (false, _) => MockResponse::text("both answered"),
            (true, 3) => speak_to(body, 1, "to_temp", "again?"),
            (true, 4) => speak_to(body, 0, "to_kept", "again?"),
            (true, _) => MockResponse::text("done"),
        }
    });
    let first = sb.exec(&mock, &["--json", "two workers"]).await;
    first.assert_ok();
    let events = first.events();
    let released = of_type(&events, "released");
    assert_eq!(released.len(), 1, "{}", first.stdout);
    let temp = released[0]["agent_id"].as_str().unwrap().to_string();

    let second = sb
        .exec(&mock, &["--json", "--resume", "last", "follow up"])
        .await;
    second.assert_ok();
    let reqs = mock.requests();
    let refused = output_of(&reqs, "to_temp");
    assert!(
        refused.contains(&format!("worker {} was released", &temp[..8])),
        "{refused}"
    );
    // The kept worker came back with the tools and instructions its spawn gave it.
    let last_kept = reqs
        .iter()
        .rfind(|r| is_worker(&r.body) && transcript(&r.body)[1].1 == "kept task")
        .unwrap();
    assert!(
        transcript(&last_kept.body)
            .iter()
            .any(|(_, c)| c.contains("again?"))
    );
    assert_eq!(
        offered(&last_kept.body),
        ["read_file", "return_results", "message_supervisor"]
    );
    assert!(system(&last_kept.body).contains("from your supervisor\nSay where you are."));
    assert!(output_of(&reqs, "to_kept").contains("kept, narrowed and still here"));
    assert!(
        of_type(&second.events(), "released").is_empty(),
        "nothing new to release"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_empty_tools_list_leaves_the_worker_its_reporting_and_the_reply_says_so() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_worker(body) {
            return returns("reported");
        }
        match tool_count(body) {
            0 => MockResponse::tool_calls(vec![call(
                "none",
                "spawn_agent",
                json!({"role_name": "agentic_coder", "task_prompt": "say hi", "tools": []}),
            )]),
            1 => wait_all(),
            _ => MockResponse::text("done"),
        }
    });
    let mut h = start_engine(&mock, &sb, ApprovalPolicy::Auto).await;
    let root = h.info.root_agent;
    let mut seen = Vec::new();
    say(&h, "an empty list");
    next_event(&mut h, &mut seen, root_turn_finished(root)).await;

    let reqs = mock.requests();
    let worker = reqs.iter().find(|r| is_worker(&r.body)).unwrap();
    assert_eq!(
        offered(&worker.body),
        ["return_results", "message_supervisor"]
    );
    let after = reqs
        .iter()
        .find(|r| !is_worker(&r.body) && tool_count(&r.body) == 1)
        .unwrap();
    let (_, output) = tool_messages(&after.body).remove(0);
    let spawned: Value = serde_json::from_str(&output).unwrap();
    assert_eq!(
        spawned["tools_note"],
        "tools: [] gives the worker none of its role's tools, only return_results, \
         message_supervisor; leave tools out to give it all of them"
    );
}
