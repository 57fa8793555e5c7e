//! Agent definitions written for Claude Code (`.claude/agents/*.md`, front matter and a
//! prompt, as its subagent docs describe them) are squad roles: listed by `squad roles`
//! with their file, their tools mapped (an unknown one named), and a worker can be
//! spawned as one by the default persona.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::*;
use common::*;
use serde_json::Value;

const DOC_WRITER: &str = "---
name: doc-writer
description: Writes and updates documentation. Use after features land.
tools: Read, Grep, Glob, Write, Edit, WebSearch
model: inherit
---

You are a technical writer. MARKER-DOC-WRITER: keep every page short.
";

fn offered(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str())
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_claude_agent_file_is_a_role_a_worker_can_be_spawned_as() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write(".claude/agents/doc-writer.md", DOC_WRITER);

    let listed = sb.run(None, &["roles"]).await;
    listed.assert_ok();
    let line = listed
        .stdout
        .lines()
        .find(|l| l.starts_with("doc-writer"))
        .unwrap_or_else(|| panic!("doc-writer listed:\n{}", listed.stdout));
    assert!(line.contains(".claude/agents/doc-writer.md"), "{line}");
    assert!(line.contains("Writes and updates documentation"), "{line}");
    assert!(listed.stderr.contains("WebSearch"), "{}", listed.stderr);

    mock.set_responder(|body| {
        if is_worker(body) {
            return MockResponse::tool_call(
                "r",
                "return_results",
                &good_result("documented").to_string(),
            );
        }
        match tool_count(body) {
            0 => spawn("doc-writer", "document the CLI"),
            1 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            _ => MockResponse::text("done"),
        }
    });
    let run = sb
        .exec(&mock, &["--json", "--approval", "auto", "write the docs"])
        .await;
    run.assert_ok();
    let reqs = mock.requests();
    let worker = reqs
        .iter()
        .find(|r| is_worker(&r.body))
        .expect("a worker of the agent file's role ran");
    assert!(system(&worker.body).contains("MARKER-DOC-WRITER"));
    assert!(is_role(&worker.body, "doc-writer"));
    let tools = offered(&worker.body);
    for t in [
        "read_file",
        "search_files",
        "list_files",
        "write_file",
        "edit_file",
    ] {
        assert!(tools.contains(&t.to_string()), "{t}: {tools:?}");
    }
    assert!(!tools.contains(&"run_command".to_string()), "{tools:?}");
}
