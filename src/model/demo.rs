//! The demo model (`--demo`): a scripted model inside squad, so a machine with no model
//! server and no key can see a session work — the supervisor, two workers in the tree,
//! an approval, a streamed answer. It reads the request as a server would and answers by
//! the user's words: "team" spawns two workers that look at the workspace and report,
//! "write" writes `demo.txt`, anything else gets an answer that says what to try. It never
//! leaves the process and costs nothing; it is no model, and says so.

use super::{ChatRequest, ChatResponse, ModelClient, ModelError, ModelProgress, TokenUsage};
use crate::protocol::{HistoryItem, ToolCall};
use async_trait::async_trait;
use serde_json::json;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The model name a demo session shows.
pub const DEMO_MODEL: &str = "squad-demo";

/// How long each streamed piece of text waits, so the answer is seen arriving.
const PIECE_DELAY: Duration = Duration::from_millis(15);

pub struct DemoModel;

/// What the agent asked and how far it got: the user's (or its task's) words and the
/// tool results since.
fn progress_of(history: &[HistoryItem]) -> (String, usize) {
    let start = history
        .iter()
        .rposition(|i| matches!(i, HistoryItem::User { text } if !text.starts_with("[squad]")));
    let asked = match start.map(|i| &history[i]) {
        Some(HistoryItem::User { text }) => text.to_lowercase(),
        _ => String::new(),
    };
    let after = start.map_or(history, |i| &history[i + 1..]);
    let results = after
        .iter()
        .filter(|i| matches!(i, HistoryItem::ToolResult { .. }))
        .count();
    (asked, results)
}

fn call(id: &str, name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall {
        id: format!("demo-{id}"),
        name: name.into(),
        arguments: args.to_string(),
    }
}

enum Reply {
    Text(String),
    Calls(Vec<ToolCall>),
}

fn worker(results: usize) -> Reply {
    match results {
        0 => Reply::Calls(vec![call("l", "list_files", json!({"depth": 1}))]),
        _ => Reply::Calls(vec![call(
            "r",
            "return_results",
            json!({"result": {
                "status": "success",
                "summary": "Looked at the workspace's top level; nothing to change.",
                "artifacts": [],
                "known_issues": []
            }}),
        )]),
    }
}

fn persona(asked: &str, results: usize) -> Reply {
    if asked.contains("team") {
        return match results {
            0 => Reply::Calls(
                [
                    ("top level", "survey the top-level files"),
                    ("docs", "survey the docs"),
                ]
                .iter()
                .enumerate()
                .map(|(i, (name, task))| {
                    let args = json!({"role_name": "code_reviewer", "name": name,
                                      "task_prompt": task});
                    call(&format!("s{i}"), "spawn_agent", args)
                })
                .collect(),
            ),
            2 => Reply::Calls(vec![call("w", "wait_for_agents", json!({}))]),
            _ => Reply::Text(
                "Both workers are done: each looked at the workspace and found nothing to \
                 change. (This is squad's demo model; connect a real one to get real work.)"
                    .into(),
            ),
        };
    }
    if asked.contains("write") {
        return match results {
            0 => Reply::Calls(vec![call(
                "wf",
                "write_file",
                json!({"path": "demo.txt", "content": "written by squad's demo model\n"}),
            )]),
            _ => Reply::Text("Wrote `demo.txt`.".into()),
        };
    }
    Reply::Text(
        "This is **squad's demo model**, built in: no server, no key, no real answers. Say \
         `team` to watch a supervisor spawn two workers and wait for them, or `write` to see \
         a file change (and its approval). For real work, start a local server (llama.cpp, \
         Ollama, LM Studio) or set OPENAI_API_KEY, then run squad without `--demo`."
            .into(),
    )
}

#[async_trait]
impl ModelClient for DemoModel {
    /// The demo is its one model.
    async fn list_models(&self) -> Result<Vec<String>, ModelError> {
        Ok(vec![DEMO_MODEL.to_string()])
    }

    async fn stream_chat(
        &self,
        request: &ChatRequest,
        progress: &(dyn Fn(ModelProgress) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<ChatResponse, ModelError> {
        let (asked, results) = progress_of(&request.history);
        let reply = if request.system_prompt.contains("You are a worker (role") {
            worker(results)
        } else {
            persona(&asked, results)
        };
        // Roughly what a server would count: 4 bytes a token.
        let prompt = request
            .history
            .iter()
            .map(|i| serde_json::to_string(i).map_or(0, |s| s.len()))
            .sum::<usize>()
            + request.system_prompt.len();
        let (text, tool_calls) = match reply {
            Reply::Text(text) => {
                for piece in text.split_inclusive(' ') {
                    if cancel.is_cancelled() {
                        return Err(ModelError::Cancelled);
                    }
                    progress(ModelProgress::TextDelta(piece.to_string()));
                    tokio::time::sleep(PIECE_DELAY).await;
                }
                (text, Vec::new())
            }
            Reply::Calls(calls) => (String::new(), calls),
        };
        let output = text.len() + tool_calls.iter().map(|c| c.arguments.len()).sum::<usize>();
        Ok(ChatResponse {
            finish_reason: Some(
                if tool_calls.is_empty() {
                    "stop"
                } else {
                    "tool_calls"
                }
                .into(),
            ),
            text,
            tool_calls,
            usage: Some(TokenUsage {
                prompt_tokens: (prompt / 4) as u64,
                completion_tokens: (output / 4).max(1) as u64,
                cached_tokens: 0,
            }),
            reasoning: Vec::new(),
        })
    }
}
