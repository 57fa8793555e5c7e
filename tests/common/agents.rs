//! Reading and answering requests of a team session: which agent is asking, what it has
//! been told, and scripted tool calls for it.
#![allow(dead_code)]

use super::{MockResponse, MockToolCall, content_text, tool_messages};
use serde_json::{Value, json};

/// The request's system prompt.
pub fn system(body: &Value) -> String {
    content_text(&body["messages"][0]["content"])
}

/// Whether a worker (not the session's persona) sent this request.
pub fn is_worker(body: &Value) -> bool {
    system(body).contains("You are worker agent")
}

/// Whether a worker of `role` sent this request.
pub fn is_role(body: &Value, role: &str) -> bool {
    is_worker(body) && system(body).contains(&format!("(role `{role}`"))
}

/// How many tool results the request carries.
pub fn tool_count(body: &Value) -> usize {
    tool_messages(body).len()
}

/// A scripted tool call with JSON arguments.
pub fn call(id: &str, name: &str, args: Value) -> MockToolCall {
    MockToolCall::new(id, name, args.to_string())
}

/// The agent ids that the supervisor's spawn calls returned, in order.
pub fn spawned_ids(body: &Value) -> Vec<String> {
    tool_messages(body)
        .iter()
        .filter_map(|(_, c)| serde_json::from_str::<Value>(c).ok())
        .filter_map(|v| v["agent_id"].as_str().map(str::to_string))
        .collect()
}

/// `return_results` arguments for a successful task that changed no file (so the check
/// against the workspace passes).
pub fn good_result(summary: &str) -> Value {
    json!({"result": {
        "status": "success",
        "summary": summary,
        "artifacts": [],
        "known_issues": []
    }})
}

/// A model answer that spawns one worker of `role` with `task`.
pub fn spawn(role: &str, task: &str) -> MockResponse {
    MockResponse::tool_call(
        "spawn",
        "spawn_agent",
        &json!({"role_name": role, "task_prompt": task}).to_string(),
    )
}

/// The workspace root a worker's system prompt names (its worktree when isolated).
pub fn root_of(body: &Value) -> std::path::PathBuf {
    let system = system(body);
    let rest = system
        .split("Workspace root: ")
        .nth(1)
        .expect("the prompt names the root");
    std::path::PathBuf::from(rest.split(". Every path").next().unwrap_or_default())
}
