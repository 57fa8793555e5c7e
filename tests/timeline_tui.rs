//! `/timeline` on the real binary in a pseudo-terminal (issue 54 part 7): after a worker
//! claimed a task of the board and messaged its sibling, the timeline has a line for the
//! claim (with its lease) and one for the message (sender → recipient, its first line).
//! The mock model over HTTP.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::*;
use common::pty::Tui;
use common::*;
use serde_json::{Value, json};
use std::time::Duration;

fn mentions(body: &Value, needle: &str) -> bool {
    transcript(body).iter().any(|(_, c)| c.contains(needle))
}

fn tool(name: &str, args: Value) -> MockResponse {
    MockResponse::tool_call(&format!("{name}-call"), name, &args.to_string())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_timeline_lists_a_claim_and_a_message_between_workers() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_responder(|body| {
        if is_worker(body) {
            if mentions(body, "ALPHA TASK") {
                return match tool_count(body) {
                    0 => tool("claim_task", json!({"task_id": "T1"})),
                    1 => tool(
                        "message_agent",
                        json!({"to": "beta", "text": "PING-FROM-ALPHA: Token::Ident is now Token::Name\nmore"}),
                    ),
                    _ => tool("return_results", good_result("alpha done")),
                };
            }
            // Beta works until alpha's message reached it, however late alpha is.
            if !mentions(body, "PING-FROM-ALPHA") {
                return tool("run_command", json!({"command": "sleep 0.3"}));
            }
            return tool("return_results", good_result("beta done"));
        }
        match tool_count(body) {
            0 => tool(
                "plan_tasks",
                json!({"tasks": [{"id": "T1", "title": "the lexer", "paths": ["lexer/**"]}]}),
            ),
            1 => MockResponse::tool_calls(vec![
                call(
                    "s1",
                    "spawn_agent",
                    json!({"role_name": "agentic_coder", "name": "beta", "task_prompt": "BETA TASK"}),
                ),
                call(
                    "s2",
                    "spawn_agent",
                    json!({"role_name": "agentic_coder", "name": "alpha", "task_prompt": "ALPHA TASK: claim T1"}),
                ),
            ]),
            // Three results so far: the plan and the two spawns.
            3 => tool("wait_for_agents", json!({})),
            _ => MockResponse::text("TEAM-DONE"),
        }
    });
    let tui = Tui::spawn(&sb, &mock.base_url(), &["--approval", "auto"], 40, 130);
    tui.wait_text("copilot").await;
    tui.type_text("split the work").await;
    tui.enter().await;
    tui.wait_text("TEAM-DONE").await;
    tui.type_text("/timeline").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    tui.enter().await;
    let screen = tui
        .wait_for("the team's lines in the timeline", |s| {
            s.contains("timeline") && s.contains("PING-FROM-ALPHA")
        })
        .await;
    // The timeline's own lines (its frame inside the screen's), not the conversation's.
    let line = |needle: &str| {
        screen
            .lines()
            .find(|l| l.starts_with("││") && l.contains(needle))
            .unwrap_or_else(|| panic!("no line with {needle}:\n{screen}"))
            .to_string()
    };
    let message = line("PING-FROM-ALPHA");
    assert!(
        message.contains("✉ agentic_coder ")
            && message.contains(" → agentic_coder ")
            && message.contains("PING-FROM-ALPHA: Token::Ident is now Token::Name…"),
        "{screen}"
    );
    // At its time since the session's start (`0s`, `1s`, …).
    assert!(
        message
            .split_whitespace()
            .any(|w| w.ends_with('s') && w.trim_end_matches('s').parse::<u64>().is_ok()),
        "{message}"
    );
    let claim = line("claimed T1");
    assert!(
        claim.contains("⚑ agentic_coder ")
            && claim.contains("claimed T1 the lexer · lease lexer/**"),
        "{screen}"
    );
}
