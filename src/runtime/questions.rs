//! Questions agents put to the user (`ask_user`). Like the approval gate, a question goes
//! out as an event and the asking agent waits for the front end's `Op::Answer`; the front
//! end queues questions from several agents and shows one at a time. Where nobody can
//! answer (`exec`) the question is still told, and settled at once.

use super::events::EventSink;
use crate::protocol::{AgentId, Declined, EventKind};
use crate::sync::lock;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

pub struct Questions {
    /// Whether a front end can answer (the same flag the approval gate has).
    can_ask: bool,
    pending: Mutex<HashMap<u64, oneshot::Sender<Option<String>>>>,
    next_id: AtomicU64,
}

/// One question, as the asking agent puts it.
pub struct Question<'a> {
    pub agent_id: AgentId,
    pub role: &'a str,
    pub question: &'a str,
    pub options: &'a [String],
}

/// How a question was settled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    Answer(String),
    Declined(Declined),
}

impl Questions {
    pub fn new(can_ask: bool) -> Self {
        Self {
            can_ask,
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
        }
    }

    /// Whether someone can answer: the caller waits on the user only then.
    pub fn can_ask(&self) -> bool {
        self.can_ask
    }

    /// Tells the question and waits for the answer, or until `cancel` withdraws it. Every
    /// `question_asked` is followed by exactly one `question_answered`.
    pub async fn ask(
        &self,
        q: Question<'_>,
        events: &EventSink,
        cancel: &CancellationToken,
    ) -> Reply {
        let request_id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let rx = self.can_ask.then(|| {
            let (tx, rx) = oneshot::channel();
            lock(&self.pending).insert(request_id, tx);
            rx
        });
        events.emit(
            q.agent_id,
            EventKind::QuestionAsked {
                request_id,
                role: q.role.to_string(),
                question: q.question.to_string(),
                options: q.options.to_vec(),
            },
        );
        let reply = match rx {
            None => Reply::Declined(Declined::NoUser),
            Some(rx) => tokio::select! {
                answer = rx => match answer {
                    Ok(Some(text)) => Reply::Answer(text),
                    Ok(None) => Reply::Declined(Declined::User),
                    // Dropped unanswered: the session is going away.
                    Err(_) => Reply::Declined(Declined::Cancelled),
                },
                _ = cancel.cancelled() => Reply::Declined(Declined::Cancelled),
            },
        };
        lock(&self.pending).remove(&request_id);
        let (answer, declined) = match &reply {
            Reply::Answer(text) => (Some(text.clone()), None),
            Reply::Declined(why) => (None, Some(*why)),
        };
        events.emit(
            q.agent_id,
            EventKind::QuestionAnswered {
                request_id,
                answer,
                declined,
            },
        );
        reply
    }

    /// The user's reply (`None` declines). Unknown ids (already settled) are ignored.
    pub fn answer(&self, request_id: u64, answer: Option<String>) -> bool {
        match lock(&self.pending).remove(&request_id) {
            Some(tx) => tx.send(answer).is_ok(),
            None => false,
        }
    }
}

#[cfg(test)]
mod tests;
