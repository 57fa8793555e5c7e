//! `ask_user`: put a question to the user and wait for the answer (seed 003's escalation).
//! Where nobody can answer, the model is told to go on with its best judgment.

use super::{AgentTool, Call, Done, Failure, card, non_empty, parse};
use crate::model::ToolSpec;
use crate::protocol::{AgentStatus, Declined};
use crate::roles::Audience;
use crate::runtime::questions::{Question, Reply};
use crate::tools::{Reach, ToolFacts, ToolKind};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

/// Most options a question may offer: one digit picks each in the dialog.
const MAX_OPTIONS: usize = 9;

pub struct AskUser;

#[derive(Deserialize)]
struct Args {
    question: String,
    #[serde(default)]
    options: Vec<String>,
}

#[async_trait]
impl AgentTool for AskUser {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "ask_user".into(),
            description: "Ask the user what only they can decide, and wait for the answer.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "question": {"type": "string"},
                    "options": {"type": "array", "items": {"type": "string"}}
                },
                "required": ["question"]
            }),
            freeform: None,
        }
    }

    fn audience(&self) -> Audience {
        Audience::Everyone
    }

    /// A question to the user, as a front end shows it.
    fn facts(&self, _args: &Value) -> ToolFacts {
        ToolFacts::new(ToolKind::Think, Reach::Team)
    }

    async fn call(&self, cx: &Call<'_>, args: Value) -> Result<Done, Failure> {
        let args: Args = parse(&self.spec(), args)?;
        non_empty("question", &args.question)?;
        let options: Vec<String> = args
            .options
            .iter()
            .map(|o| o.trim().to_string())
            .filter(|o| !o.is_empty())
            .collect();
        if options.len() > MAX_OPTIONS {
            return Err(Failure::Fixable(format!(
                "at most {MAX_OPTIONS} options; you gave {}",
                options.len()
            )));
        }
        let me = card(cx)?;
        let questions = cx.shared.questions;
        let question = Question {
            agent_id: cx.caller,
            role: &me.role,
            question: args.question.trim(),
            options: &options,
        };
        // While the user is asked the agent waits on them, as for an approval.
        let asks = questions.can_ask();
        if asks {
            cx.team.set_status(cx.caller, AgentStatus::Waiting, None);
        }
        let asked = questions.ask(question, cx.team.events(), cx.cancel);
        let reply = if asks {
            // The user's `notification` hooks run while the question waits.
            let message = format!("squad has a question: {}", args.question.trim());
            let told = cx.host.notify("elicitation_dialog", &message);
            tokio::join!(asked, told).0
        } else {
            asked.await
        };
        if asks {
            cx.team.set_status(cx.caller, AgentStatus::Running, None);
        }
        let mut text = reply_text(&reply);
        if matches!(reply, Reply::Declined(Declined::NoUser)) && cx.caller == cx.team.root() {
            text.push_str(
                " Do not ask again. Once your workers' results are in, your next step is your \
                 final answer to the user's request, with what they reported.",
            );
        }
        Ok(Done::output(text))
    }
}

/// What the model reads back.
fn reply_text(reply: &Reply) -> String {
    match reply {
        Reply::Answer(text) => format!("The user answered: {text}"),
        Reply::Declined(Declined::User) => "The user declined to answer. Do not ask again; \
            proceed with your best judgment and state the assumption you made."
            .into(),
        Reply::Declined(Declined::NoUser) => "Nobody can answer: this run has no user. Proceed \
            with your best judgment and state the assumption you made in your answer."
            .into(),
        Reply::Declined(Declined::Cancelled) => {
            "The question was withdrawn: you were stopped before the user answered.".into()
        }
    }
}
