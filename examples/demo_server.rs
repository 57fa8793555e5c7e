//! A scripted OpenAI-compatible server for trying squad without an API key, and for
//! recording screenshots: `cargo run --example demo_server` then, in another terminal,
//! `squad --base-url http://127.0.0.1:8787/v1`. It is the tests' mock server with a
//! responder that plays a small team session:
//! - a message containing "team" makes the supervisor spawn two workers and wait for them;
//! - a message containing "plan" makes it plan three tasks on the board (T2 and T3 need
//!   T1), run T1, then T2 and T3 side by side (`/tasks` and `/timeline` show them);
//! - a message containing "write" makes it write `demo.txt` (an approval in `ask` mode);
//! - a message containing "merge" (in a git repository) starts three writers side by
//!   side, each in its own worktree: two write different files and merge, the third
//!   writes the first one's file differently and is reported as a conflict;
//! - anything else gets a streamed markdown answer.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/common/mock_server.rs"]
mod mock_server;

use mock_server::{MockResponse, MockServer, MockToolCall, split_text};
use serde_json::{Value, json};
use std::time::Duration;

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => String::new(),
    }
}

/// Messages after the last user message, and that message.
fn since_last_user(body: &Value) -> (String, Vec<Value>) {
    let msgs = body["messages"].as_array().cloned().unwrap_or_default();
    let i = msgs.iter().rposition(|m| m["role"] == "user").unwrap_or(0);
    (text_of(&msgs[i]["content"]), msgs[i + 1..].to_vec())
}

fn stream(text: &str) -> MockResponse {
    MockResponse::text_deltas(split_text(text, 6))
        .with_chunk_delay(Duration::from_millis(30))
        .with_usage(900, 120)
}

fn respond(body: &Value) -> MockResponse {
    let system = text_of(&body["messages"][0]["content"]);
    let (user, after) = since_last_user(body);
    let tools_done = after.iter().filter(|m| m["role"] == "tool").count();
    // The environment part of every worker's system prompt says so (`runtime/session.rs`).
    if system.contains("You are a worker (role") {
        // "Write FILE: CONTENT" (the `merge` script): write it, then report it.
        if let Some((file, content)) = user
            .strip_prefix("Write ")
            .and_then(|rest| rest.split_once(": "))
        {
            return match tools_done {
                0 => MockResponse::tool_call(
                    "w",
                    "write_file",
                    &json!({"path": file, "content": format!("{content}\n")}).to_string(),
                )
                .with_delay(Duration::from_millis(800))
                .with_usage(700, 40),
                _ => {
                    let result = json!({"result": {
                        "status": "success",
                        "summary": format!("Wrote {file}"),
                        "artifacts": [{"file_path": file, "description": "written", "change_type": "created"}],
                        "known_issues": []
                    }});
                    MockResponse::tool_call("r", "return_results", &result.to_string())
                        .with_delay(Duration::from_millis(600))
                        .with_usage(820, 90)
                }
            };
        }
        return match tools_done {
            0 => MockResponse::tool_call("l", "list_files", r#"{"depth":1}"#)
                .with_delay(Duration::from_millis(600))
                .with_usage(700, 40),
            _ => {
                let result = json!({"result": {
                    "status": "success",
                    "summary": format!("Looked at the workspace for: {}", user.lines().next().unwrap_or("")),
                    "artifacts": [{"file_path": ".", "description": "listed the files", "change_type": "referenced"}],
                    "known_issues": []
                }});
                MockResponse::tool_call("r", "return_results", &result.to_string())
                    .with_delay(Duration::from_millis(900))
                    .with_usage(820, 90)
            }
        };
    }
    if user.starts_with("[squad]") {
        return stream(
            "Both workers reported back. The **survey** is done:\n\n- the coder listed the files\n- the reviewer found nothing alarming",
        );
    }
    if user.contains("team") {
        return match tools_done {
            0 => MockResponse::tool_calls(vec![
                MockToolCall::new("s1", "spawn_agent", json!({"role_name": "agentic_coder", "task_prompt": "Survey the source files and summarise the layout"}).to_string()),
                MockToolCall::new("s2", "spawn_agent", json!({"role_name": "code_reviewer", "task_prompt": "Skim the code for obvious problems"}).to_string()),
            ])
            .with_usage(1200, 80),
            2 => MockResponse::tool_call("w", "wait_for_agents", "{}").with_usage(1300, 20),
            _ => stream("Both workers are done. The layout is tidy and the review found nothing alarming."),
        };
    }
    if user.contains("merge") {
        let writer = |id: &str, task: &str| {
            MockToolCall::new(
                id,
                "spawn_agent",
                json!({"role_name": "agentic_coder", "task_prompt": task}).to_string(),
            )
        };
        return match tools_done {
            0 => MockResponse::tool_calls(vec![
                writer("s1", "Write greeting.txt: hello from the first writer"),
                writer("s2", "Write notes.txt: notes from the second writer"),
                writer("s3", "Write greeting.txt: a different hello from the third"),
            ])
            .with_usage(1200, 80),
            3 => MockResponse::tool_call("w", "wait_for_agents", "{}").with_usage(1300, 20),
            _ => stream(
                "Two changes are merged into the workspace; the third writer's greeting.txt conflicts with the first's and was left in its worktree.",
            ),
        };
    }
    if user.contains("plan") {
        let spawn = |id: &str, task: &str, prompt: &str| {
            MockToolCall::new(
                id,
                "spawn_agent",
                json!({"role_name": "agentic_coder", "task_prompt": prompt, "task_id": task})
                    .to_string(),
            )
        };
        return match tools_done {
            0 => MockResponse::tool_call(
                "p",
                "plan_tasks",
                &json!({"tasks": [
                    {"id": "T1", "title": "Survey the source files"},
                    {"id": "T2", "title": "Review the parser", "depends_on": ["T1"]},
                    {"id": "T3", "title": "Review the CLI", "depends_on": ["T1"]}
                ]})
                .to_string(),
            )
            .with_usage(1100, 60),
            1 => MockResponse::tool_calls(vec![spawn("s1", "T1", "Survey the source files")])
                .with_usage(1200, 40),
            2 | 5 => MockResponse::tool_call("w", "wait_for_agents", "{}").with_usage(1300, 20),
            3 => MockResponse::tool_calls(vec![
                spawn("s2", "T2", "Review the parser"),
                spawn("s3", "T3", "Review the CLI"),
            ])
            .with_usage(1400, 60),
            _ => stream(
                "The plan is done: T1 surveyed the files, T2 and T3 reviewed the parser and the CLI side by side.",
            ),
        };
    }
    if user.contains("write") {
        return match tools_done {
            0 => MockResponse::tool_call(
                "w1",
                "write_file",
                &json!({"path": "demo.txt", "content": "written by squad's demo\n"}).to_string(),
            ),
            _ => stream("Wrote `demo.txt`."),
        };
    }
    stream(&format!(
        "## You said\n\n> {user}\n\nThis is the **demo server**: say `team` to see workers, `plan` to see the task board, or `write` to see an approval.\n\n```rust\nfn main() {{ println!(\"hello\"); }}\n```"
    ))
}

#[tokio::main]
async fn main() {
    let port: u16 = std::env::args()
        .skip_while(|a| a != "--port")
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(8787);
    let server = MockServer::start_on(port).await;
    server.set_responder(respond);
    eprintln!(
        "demo model server on {} (Ctrl+C stops it)",
        server.base_url()
    );
    let _ = tokio::signal::ctrl_c().await;
}
