//! The team's own news over ACP (issue 54 part 5): a worker's message to a sibling, a
//! claim and its lease, a plan submitted, rejected with a reason and approved each reach
//! the client's `session/update`s naming their agent, with subagents (child sessions)
//! and without (one session), live and in a loaded session. The real `squad acp`
//! binary on its stdio, the mock model over HTTP.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::acp::Client;
use common::agents::*;
use common::*;
use serde_json::{Value, json};

fn roles(sb: &Sandbox) {
    sb.write(
        ".squad/roles/planner.toml",
        "name = \"planner\"\ndescription = \"writes once its plan is approved\"\n\
         system_prompt = \"Plan, then do it.\"\nplan_first = true\n",
    );
    sb.write(
        ".squad/roles/lead.toml",
        "name = \"lead\"\nsystem_prompt = \"Lead the team.\"\n\
         enabled_agents = [\"planner\", \"agentic_coder\"]\n",
    );
}

fn mentions(body: &Value, needle: &str) -> bool {
    transcript(body).iter().any(|(_, c)| c.contains(needle))
}

fn tool(name: &str, args: Value) -> MockResponse {
    MockResponse::tool_call(&format!("{name}-call"), name, &args.to_string())
}

/// Alpha claims T1 (its lease lexer/**), messages beta, then returns.
fn alpha(body: &Value) -> MockResponse {
    match tool_count(body) {
        0 => tool("claim_task", json!({"task_id": "T1"})),
        1 => tool(
            "message_agent",
            json!({"to": "beta", "text": "PING-FROM-ALPHA: Token::Ident is now Token::Name\nsee lexer/token.rs"}),
        ),
        _ => tool("return_results", good_result("alpha done")),
    }
}

/// Beta (plan_first): a first plan, a second once told why the first was rejected, then
/// its result. Read from its tool results, wherever alpha's message falls among them.
fn beta(body: &Value) -> MockResponse {
    let told = |needle: &str| tool_messages(body).iter().any(|(_, c)| c.contains(needle));
    if told("Plan approved") {
        // Its result only once alpha's message reached it, however late alpha is.
        if !mentions(body, "PING-FROM-ALPHA") {
            return tool("run_command", json!({"command": "sleep 0.3"}));
        }
        return tool("return_results", good_result("beta done"));
    }
    if told("Plan rejected") {
        return tool(
            "submit_plan",
            json!({"plan": "PLAN-B: the lexer tests only"}),
        );
    }
    tool("submit_plan", json!({"plan": "PLAN-A: rewrite everything"}))
}

/// The lead plans T1, spawns beta (the planner) then alpha, rejects beta's first plan
/// with a reason and approves its second.
fn team(mock: &MockServer) {
    mock.set_responder(|body| {
        if is_worker(body) {
            return if mentions(body, "ALPHA TASK") {
                alpha(body)
            } else {
                beta(body)
            };
        }
        let beta_id = spawned_ids(body).first().cloned().unwrap_or_default();
        // Decided so far, whatever else the lead was told in between.
        let reviews = tool_messages(body)
            .iter()
            .filter(|(id, _)| id == "review_plan-call")
            .count();
        let review = |approve: bool, reason: &str| {
            tool(
                "review_plan",
                json!({"agent_id": beta_id, "approve": approve, "reason": reason}),
            )
        };
        match tool_count(body) {
            0 => tool(
                "plan_tasks",
                json!({"tasks": [{"id": "T1", "title": "the lexer", "paths": ["lexer/**"]}]}),
            ),
            1 => MockResponse::tool_calls(vec![
                call(
                    "s1",
                    "spawn_agent",
                    json!({"role_name": "planner", "name": "beta", "task_prompt": "BETA TASK"}),
                ),
                call(
                    "s2",
                    "spawn_agent",
                    json!({"role_name": "agentic_coder", "name": "alpha", "task_prompt": "ALPHA TASK: claim T1"}),
                ),
            ]),
            _ if reviews == 0 && mentions(body, "PLAN-A") => {
                review(false, "REASON-X: only the lexer tests")
            }
            _ if reviews == 1 && mentions(body, "PLAN-B") => review(true, ""),
            _ => MockResponse::text("waiting for the team"),
        }
    });
}

/// Runs the team's prompt to its end on a client, with or without subagents.
async fn run(sb: &Sandbox, mock: &MockServer, subagents: bool) -> (Client, String) {
    let mut c = Client::start(sb, mock, &["--approval", "auto", "--role", "lead"]);
    let caps = if subagents {
        json!({"subagents": {}})
    } else {
        json!({})
    };
    c.request(
        0,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": caps}),
    )
    .await;
    c.response(0).await;
    let session = c.new_session(sb).await;
    c.prompt(2, &session, "split the work").await;
    let done = c.response(2).await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    (c, session)
}

/// Every update with the session it was sent on.
fn updates(c: &Client) -> Vec<(String, Value)> {
    c.seen
        .iter()
        .filter(|m| m["method"] == "session/update")
        .map(|m| {
            (
                m["params"]["sessionId"].as_str().unwrap().to_string(),
                m["params"]["update"].clone(),
            )
        })
        .collect()
}

/// The agent id of the worker whose task mentions `task`, as the client was told of it:
/// its child session (`<session>/<agent id>`) or the tool call standing for it
/// (`agent-<agent id>`).
fn worker_id(all: &[(String, Value)], task: &str) -> String {
    let has = |v: &Value| v.as_str().is_some_and(|t| t.contains(task));
    all.iter()
        .find_map(|(_, u)| {
            if u["sessionUpdate"] == "subagent_update" && has(&u["description"]) {
                return u["sessionId"]
                    .as_str()?
                    .rsplit('/')
                    .next()
                    .map(str::to_string);
            }
            if u["sessionUpdate"] == "tool_call" && has(&u["rawInput"]["task"]) {
                return u["toolCallId"]
                    .as_str()?
                    .strip_prefix("agent-")
                    .map(str::to_string);
            }
            None
        })
        .unwrap_or_else(|| panic!("no worker for {task}: {all:?}"))
}

/// Claims and leases: the last plan names T1's owner, that it claimed it and its lease,
/// in the entry's text and its `_meta`.
fn assert_claim_and_lease(all: &[(String, Value)], root: &str, alpha: &str) {
    let claimed = all
        .iter()
        .filter(|(s, u)| s == root && u["sessionUpdate"] == "plan")
        .filter_map(|(_, u)| {
            u["entries"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["_meta"]["squad/task"]["owner"] == alpha)
                .cloned()
        })
        .next()
        .unwrap_or_else(|| panic!("no plan entry owned by alpha: {all:?}"));
    let short = &alpha[..8];
    assert_eq!(
        claimed["content"],
        format!("the lexer · agentic_coder {short} claimed · lease lexer/**"),
        "{claimed}"
    );
    let facts = &claimed["_meta"]["squad/task"];
    assert_eq!(facts["id"], "T1");
    assert_eq!(facts["claimed"], true);
    assert_eq!(facts["lease"], true);
    assert_eq!(facts["paths"], json!(["lexer/**"]));
    assert_eq!(facts["ownerName"], format!("agentic_coder {short}"));
}

/// Plan decisions: a tool call of beta's plan in its supervisor's session, pending, then
/// failed with the reason; the second completed; each naming beta and who decided.
fn assert_plan_decisions(all: &[(String, Value)], root: &str, beta: &str) {
    let on_root = |kind: &str, id: &str| -> Vec<Value> {
        all.iter()
            .filter(|(s, u)| s == root && u["sessionUpdate"] == kind && u["toolCallId"] == id)
            .map(|(_, u)| u.clone())
            .collect()
    };
    let short = &beta[..8];
    let first = format!("plan-{beta}-1");
    let asked = on_root("tool_call", &first);
    assert_eq!(asked.len(), 1, "{all:?}");
    assert_eq!(asked[0]["_meta"]["squad/team"]["agentId"], beta);
    assert_eq!(asked[0]["_meta"]["squad/team"]["event"], "plan_submitted");
    assert!(
        asked[0]["title"].as_str().unwrap().starts_with(&format!(
            "▤ plan of planner {short} awaiting approval: PLAN-A"
        )),
        "{}",
        asked[0]
    );
    let rejected = on_root("tool_call_update", &first);
    assert_eq!(rejected.len(), 1, "{rejected:?}");
    assert_eq!(rejected[0]["status"], "failed");
    assert_eq!(
        rejected[0]["title"],
        format!("▤ plan of planner {short} rejected by lead: REASON-X: only the lexer tests")
    );
    let facts = &rejected[0]["_meta"]["squad/team"];
    assert_eq!(
        (
            &facts["agentId"],
            &facts["approved"],
            &facts["reason"],
            &facts["byName"]
        ),
        (
            &json!(beta),
            &json!(false),
            &json!("REASON-X: only the lexer tests"),
            &json!("lead")
        )
    );
    let second = format!("plan-{beta}-2");
    let approved = on_root("tool_call_update", &second);
    let plans: Vec<&Value> = all
        .iter()
        .map(|(_, u)| u)
        .filter(|u| {
            u["toolCallId"]
                .as_str()
                .is_some_and(|t| t.starts_with("plan-"))
        })
        .collect();
    assert_eq!(approved.len(), 1, "{plans:#?}");
    assert_eq!(approved[0]["status"], "completed");
    assert_eq!(approved[0]["_meta"]["squad/team"]["approved"], true);
}

#[tokio::test(flavor = "multi_thread")]
async fn with_subagents_a_message_is_a_session_message_and_claims_leases_plans_name_their_agent() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    roles(&sb);
    team(&mock);
    let (c, root) = run(&sb, &mock, true).await;
    let all = updates(&c);
    let (alpha, beta) = (worker_id(&all, "ALPHA TASK"), worker_id(&all, "BETA TASK"));
    let (alpha_s, beta_s) = (format!("{root}/{alpha}"), format!("{root}/{beta}"));

    // The message: its outgoing view in alpha's session, its incoming view in beta's
    // once delivered, both naming sender and recipient.
    let messages = |session: &str| -> Vec<Value> {
        all.iter()
            .filter(|(s, u)| {
                s == session
                    && u["sessionUpdate"] == "session_message"
                    && u["_meta"]["squad/team"].is_object()
            })
            .map(|(_, u)| u.clone())
            .collect()
    };
    let out = messages(&alpha_s);
    assert_eq!(out.len(), 1, "{all:?}");
    let text = out[0]["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("PING-FROM-ALPHA"), "{text}");
    assert_eq!(out[0]["senderSessionId"], alpha_s.as_str());
    assert_eq!(out[0]["recipientSessionId"], beta_s.as_str());
    let facts = &out[0]["_meta"]["squad/team"];
    assert_eq!(
        (&facts["agentId"], &facts["to"]),
        (&json!(alpha), &json!(beta))
    );
    assert_eq!(facts["toName"], format!("planner {}", &beta[..8]));
    let inbound = messages(&beta_s);
    assert_eq!(inbound.len(), 1, "{all:?}");
    assert_eq!(inbound[0]["senderMessageId"], out[0]["messageId"]);
    assert_eq!(
        inbound[0]["_meta"]["squad/team"]["event"],
        "message_delivered"
    );
    assert_eq!(inbound[0]["_meta"]["squad/team"]["agentId"], alpha.as_str());

    // The claim: a line in alpha's own session, and the plan's entry.
    assert!(
        all.iter().any(|(s, u)| s == &alpha_s
            && u["sessionUpdate"] == "agent_message_chunk"
            && u["content"]["text"]
                .as_str()
                .unwrap()
                .contains("claimed T1 the lexer · lease lexer/**")),
        "{all:?}"
    );
    assert_claim_and_lease(&all, &root, &alpha);
    assert_plan_decisions(&all, &root, &beta);
    c.close().await;

    // Loaded again: the same news, from the log.
    let mut c = Client::start(&sb, &mock, &["--approval", "auto", "--role", "lead"]);
    c.request(
        0,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {"subagents": {}}}),
    )
    .await;
    c.response(0).await;
    c.request(
        3,
        "session/load",
        json!({"sessionId": root, "cwd": sb.ws(), "mcpServers": []}),
    )
    .await;
    let loaded = c.response(3).await;
    assert!(loaded.get("error").is_none(), "{loaded}");
    let all = updates(&c);
    assert!(
        all.iter().any(|(s, u)| s == &alpha_s
            && u["sessionUpdate"] == "session_message"
            && u["_meta"]["squad/team"]["to"] == beta.as_str()),
        "{all:?}"
    );
    assert_claim_and_lease(&all, &root, &alpha);
    assert_plan_decisions(&all, &root, &beta);
    c.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn without_subagents_a_message_is_a_tool_call_until_delivered_and_plans_name_their_agent() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    roles(&sb);
    team(&mock);
    let (c, root) = run(&sb, &mock, false).await;
    let all = updates(&c);
    let (alpha, beta) = (worker_id(&all, "ALPHA TASK"), worker_id(&all, "BETA TASK"));
    assert!(all.iter().all(|(s, _)| s == &root));

    let sent: Vec<&Value> = all
        .iter()
        .map(|(_, u)| u)
        .filter(|u| {
            u["sessionUpdate"] == "tool_call"
                && u["toolCallId"].as_str().unwrap().starts_with("message-")
        })
        .collect();
    assert_eq!(sent.len(), 1, "{all:?}");
    let (a, b) = (&alpha[..8], &beta[..8]);
    assert_eq!(
        sent[0]["title"],
        format!(
            "✉ agentic_coder {a} → planner {b}: PING-FROM-ALPHA: Token::Ident is now Token::Name…"
        )
    );
    assert_eq!(sent[0]["status"], "in_progress");
    assert_eq!(sent[0]["_meta"]["squad/team"]["agentId"], alpha.as_str());
    assert_eq!(sent[0]["_meta"]["squad/team"]["to"], beta.as_str());
    let delivered: Vec<&Value> = all
        .iter()
        .map(|(_, u)| u)
        .filter(|u| {
            u["sessionUpdate"] == "tool_call_update" && u["toolCallId"] == sent[0]["toolCallId"]
        })
        .collect();
    assert_eq!(delivered.len(), 1, "{all:?}");
    assert_eq!(delivered[0]["status"], "completed");

    // The claim: a line of alpha's own tool call, and the plan's entry.
    let progress: String = all
        .iter()
        .map(|(_, u)| u)
        .filter(|u| u["toolCallId"] == format!("agent-{alpha}"))
        .filter_map(|u| u["content"][0]["content"]["text"].as_str())
        .collect();
    assert!(
        progress.contains(&format!(
            "⚑ agentic_coder {a} claimed T1 the lexer · lease lexer/**"
        )),
        "{progress}"
    );
    assert_claim_and_lease(&all, &root, &alpha);
    assert_plan_decisions(&all, &root, &beta);
    c.close().await;
}
