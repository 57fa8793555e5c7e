//! `message_supervisor`: a worker tells its supervisor something without ending its turn.
//! A `question` is high priority (it wakes a supervisor that waits for its workers); an
//! `update` is low (it rides along with the supervisor's next notice batch).

use super::{AgentTool, Call, Done, Failure, non_empty, parse};
use crate::model::ToolSpec;
use crate::protocol::MessageKind;
use crate::roles::Audience;
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

pub struct MessageSupervisor;

#[derive(Deserialize)]
struct Args {
    text: String,
    kind: MessageKind,
}

/// Longest message kept; a supervisor's context is shared by all its workers.
const MAX_BYTES: usize = 2000;

#[async_trait]
impl AgentTool for MessageSupervisor {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "message_supervisor".into(),
            description: "Tell your supervisor something and keep working: `question` (it \
                reads it soon) or `update` (progress, read with its next batch). Returns at \
                once with a confirmation; no reply comes in this turn."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "kind": {"type": "string", "enum": ["question", "update"]}
                },
                "required": ["text", "kind"]
            }),
            freeform: None,
        }
    }

    fn audience(&self) -> Audience {
        Audience::Workers
    }

    async fn call(&self, cx: &Call<'_>, args: Value) -> Result<Done, Failure> {
        let args: Args = parse(&self.spec(), args)?;
        non_empty("text", &args.text)?;
        let text = crate::text::clip(args.text.trim(), MAX_BYTES);
        let Some(supervisor) = cx.team.message_supervisor(cx.caller, args.kind, &text) else {
            return Err(Failure::Fixable(
                "you have no supervisor to message; answer in your reply instead".to_string(),
            ));
        };
        let when = match args.kind {
            // Interrupted by the user (or just resumed): nothing wakes it until they speak.
            _ if cx.team.is_held(supervisor) => "it is paused and reads it when next told to go on",
            MessageKind::Question => "it reads it at its next step",
            MessageKind::Update => "it reads it with its next batch of notices",
        };
        let role = cx.team.role(supervisor).unwrap_or_default();
        Ok(Done::output(format!(
            "sent to your supervisor ({role}); {when}. Keep working: no reply comes in this \
             turn, so if you cannot go on without an answer, say so in return_results."
        )))
    }
}
