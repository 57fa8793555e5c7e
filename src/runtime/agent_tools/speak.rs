//! `speak_to_agent`: a follow-up to a worker that finished, and its reply; or a message to
//! a worker mid-turn, which it takes up at its next model call (the supervisor is not held
//! for the worker's whole turn: the call returns once the message is taken up).

use super::{AgentTool, Call, Done, Failure, non_empty, parse, resolve_child};
use crate::model::ToolSpec;
use crate::protocol::{AgentId, AgentResult, AgentStatus};
use crate::roles::Audience;
use crate::runtime::team::{AgentInput, Steer};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::oneshot;

/// The tool's name, for the code that must tell its calls apart.
pub const SPEAK_TO_AGENT: &str = "speak_to_agent";

pub struct SpeakToAgent;

#[derive(Deserialize)]
struct Args {
    agent_id: String,
    message: String,
}

#[async_trait]
impl AgentTool for SpeakToAgent {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: SPEAK_TO_AGENT.into(),
            description: "Message a worker of yours. A finished one replies; a running one \
                takes it up at its next step."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "agent_id": {"type": "string"},
                    "message": {"type": "string"}
                },
                "required": ["agent_id", "message"]
            }),
            freeform: None,
        }
    }

    fn audience(&self) -> Audience {
        Audience::Supervisors
    }

    async fn call(&self, cx: &Call<'_>, args: Value) -> Result<Done, Failure> {
        let args: Args = parse(&self.spec(), args)?;
        non_empty("agent_id", &args.agent_id)?;
        non_empty("message", &args.message)?;
        let team = cx.team;
        let id = resolve_child(team, cx.caller, &args.agent_id)?;
        if team.release_if_due(id, std::time::Instant::now()) {
            return Err(Failure::Fixable(released(id)));
        }
        let status = team.status(id).ok_or("worker is gone".to_string())?;
        match status {
            AgentStatus::Completed | AgentStatus::Inactive | AgentStatus::Interrupted => {}
            AgentStatus::Running | AgentStatus::Waiting | AgentStatus::Paused => {
                if let Some(steered) = steer(cx, id, &args.message).await {
                    return steered;
                }
            }
            AgentStatus::Failed | AgentStatus::Cancelled => {
                return Err(Failure::Fixable(format!(
                    "worker {} is {status} and cannot take messages; spawn a new worker with the \
                     task (and what went wrong) instead",
                    id.short()
                )));
            }
        }
        // A worker that returned its result reads a follow-up as one: small models took
        // an acknowledgement for a new task, reported it, were checked and corrected.
        let was_done = status == AgentStatus::Completed;
        let text = if was_done {
            follow_up(&args.message)
        } else {
            args.message
        };
        let (text, status, result) = exchange(cx, id, text).await?;
        Ok(Done::output(answer(id, text, status, result, was_done)))
    }
}

/// A message for a worker in its turn, taken up at its next model call; `None` when the
/// worker is not in a turn (resting while its own workers run): the message then starts
/// its next turn, and the reply comes as for a finished worker.
async fn steer(cx: &Call<'_>, id: AgentId, message: &str) -> Option<Result<Done, Failure>> {
    let (taken, rx) = oneshot::channel();
    let steer = Steer {
        text: message.to_string(),
        taken: Some(taken),
    };
    cx.team.steer(id, steer).ok()?;
    Some(tokio::select! {
        r = rx => match r {
            Ok(()) => Ok(Done::output(json!({
                "agent_id": id.to_string(),
                "status": "running",
                "taken_up": true,
                "note": "the worker took the message up at its next step and goes on; \
                         its result comes as usual (wait_for_agents)"
            }).to_string())),
            Err(_) => Err(Failure::Fixable("the worker stopped before taking the message up".to_string())),
        },
        _ = cx.cancel.cancelled() => Err(Failure::Fixable(
            "interrupted before the worker took the message up".to_string(),
        )),
    })
}

/// Gives a worker out of its turn the message and waits, marked waiting, for its reply;
/// the reply, and the worker's status and result once the reply is delivered.
async fn exchange(
    cx: &Call<'_>,
    id: AgentId,
    text: String,
) -> Result<(String, AgentStatus, Option<AgentResult>), Failure> {
    let team = cx.team;
    let (tx, rx) = oneshot::channel();
    let input = AgentInput::Message {
        text,
        reply: Some(tx),
    };
    if !team.deliver(id, input) {
        return Err(Failure::Fixable("the worker has stopped".to_string()));
    }
    team.set_status(cx.caller, AgentStatus::Waiting, None);
    let reply = tokio::select! {
        r = rx => r.unwrap_or_else(|_| Err("the worker stopped before answering".to_string())),
        _ = cx.cancel.cancelled() => Err("interrupted while waiting for the worker's reply".to_string()),
    };
    team.set_status(cx.caller, AgentStatus::Running, None);
    let (status, result) = team.mark_delivered(id);
    Ok((reply?, status, result))
}

/// The call's output: the worker's answer, with its result if this turn completed it.
fn answer(
    id: AgentId,
    text: String,
    status: AgentStatus,
    result: Option<AgentResult>,
    was_done: bool,
) -> String {
    // Seed 000's name for the worker's answer.
    let mut out =
        json!({"agent_id": id.to_string(), "status": status.as_str(), "agent_response": text});
    match result {
        Some(r) if status == AgentStatus::Completed => {
            out["result"] = serde_json::to_value(r).unwrap_or(Value::Null);
        }
        _ if was_done => {
            out["note"] = json!("it had already finished and only replied; its result stands");
        }
        _ => {}
    }
    out.to_string()
}

/// A message to a worker that already returned its result, as it reads it.
fn follow_up(message: &str) -> String {
    format!(
        "[squad] A follow-up from your supervisor, after you returned your result:\n\n\
         {message}\n\n[squad] If it asks you for more work or a fix, do it, then call \
         return_results again. If it asks for nothing (it only acknowledges or thanks you), \
         answer in one short sentence and call no tool: your result stands."
    )
}

/// Why a released worker takes no message, and what to do instead.
pub(super) fn released(id: crate::protocol::AgentId) -> String {
    format!(
        "worker {} was released: its result was delivered and it was not kept, so it takes no \
         more messages. Spawn a new worker for the follow-up (with keep: true to keep one)",
        id.short()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::agent_tools::return_results::validate_result;

    #[test]
    fn an_answer_carries_the_result_its_turn_completed_or_says_the_old_one_stands() {
        let id = AgentId::new();
        let out = answer(id, "hi".into(), AgentStatus::Inactive, None, true);
        let out: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(out["agent_response"], "hi");
        assert!(out["note"].is_string() && out.get("result").is_none());
        let result = validate_result(&json!({"status": "success", "summary": "s"})).unwrap();
        let out = answer(id, "hi".into(), AgentStatus::Completed, Some(result), false);
        let out: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(out["result"]["status"], "success");
        assert!(out.get("note").is_none());
        let out = answer(id, "hi".into(), AgentStatus::Inactive, None, false);
        let out: Value = serde_json::from_str(&out).unwrap();
        assert!(out.get("note").is_none() && out.get("result").is_none());
    }
}
