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
    system(body).contains("You are a worker (role")
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

/// Where the worker whose request this is works: its worktree once it has one, else the
/// workspace `ws`. Read from the session logs under `data_dir`, which are on disk before
/// each request goes out (the prompt names no root: it is the same bytes for every
/// request of an agent and its siblings).
pub fn root_of(
    data_dir: &std::path::Path,
    ws: &std::path::Path,
    body: &Value,
) -> std::path::PathBuf {
    let task = super::transcript(body)
        .into_iter()
        .find(|(role, _)| role == "user")
        .map(|(_, text)| text)
        .unwrap_or_default();
    let mut agent = None;
    let mut root = ws.to_path_buf();
    let logs = std::fs::read_dir(data_dir.join("sessions"))
        .into_iter()
        .flatten();
    let mut logs: Vec<_> = logs.flatten().map(|e| e.path()).collect();
    logs.sort();
    for log in logs
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
    {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        for event in text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        {
            let id = event["agent_id"].as_str().map(str::to_string);
            match event["type"].as_str() {
                Some("agent_spawned")
                    if event["parent_id"].is_string()
                        && event["task"]
                            .as_str()
                            .is_some_and(|t| !t.is_empty() && task.contains(t)) =>
                {
                    agent = id
                }
                Some("worktree_created") if agent.is_some() && id == agent => {
                    root = std::path::PathBuf::from(event["path"].as_str().unwrap_or_default())
                }
                _ => {}
            }
        }
    }
    root
}
