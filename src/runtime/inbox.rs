//! The priority inbox, pure: what a notice is and how a batch of them is ordered. An agent
//! is told things (its workers' outcomes, the board's news, its workers' messages) at a
//! model-call boundary, all that is pending in one batch, most urgent first; notices of
//! equal priority keep the order they came in. The team keeps each agent's waiting
//! notices (`team/inbox.rs`); `report.rs` puts a batch together.

use crate::protocol::{AgentId, MessageKind, Priority};

#[derive(Clone, Debug, PartialEq)]
pub struct Notice {
    pub priority: Priority,
    pub text: String,
}

impl Notice {
    pub fn new(priority: Priority, text: impl Into<String>) -> Self {
        Self {
            priority,
            text: text.into(),
        }
    }

    /// A worker's `message_supervisor` as its supervisor reads it.
    pub fn message(from: AgentId, role: &str, kind: MessageKind, text: &str) -> Self {
        let who = format!("your worker {} ({role})", from.short());
        let text = match kind {
            MessageKind::Question => format!(
                "Question from {who}, which keeps working: {text}\n(Answer it with \
                 speak_to_agent once it has finished, or despawn_agent it and spawn a new \
                 worker with the answer.)"
            ),
            MessageKind::Update => format!("Update from {who}: {text}"),
        };
        Self::new(kind.priority(), text)
    }
}

/// The notices as one text, most urgent first (a stable sort: equal priorities keep their
/// order). `None` when there are none.
pub fn join(mut notices: Vec<Notice>) -> Option<String> {
    if notices.is_empty() {
        return None;
    }
    notices.sort_by_key(|n| n.priority);
    let texts: Vec<String> = notices.into_iter().map(|n| n.text).collect();
    Some(texts.join("\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_puts_the_most_urgent_first_and_keeps_arrival_order_within_a_priority() {
        let batch = join(vec![
            Notice::new(Priority::Low, "progress 1"),
            Notice::new(Priority::Normal, "results"),
            Notice::new(Priority::High, "question 1"),
            Notice::new(Priority::Critical, "worker failed"),
            Notice::new(Priority::High, "question 2"),
            Notice::new(Priority::Low, "progress 2"),
            Notice::new(Priority::Critical, "deadlock"),
        ])
        .unwrap();
        let order: Vec<&str> = batch.split("\n\n").collect();
        assert_eq!(
            order,
            [
                "worker failed",
                "deadlock",
                "question 1",
                "question 2",
                "results",
                "progress 1",
                "progress 2"
            ]
        );
    }

    #[test]
    fn an_empty_inbox_makes_no_batch() {
        assert_eq!(join(Vec::new()), None);
    }

    #[test]
    fn a_message_names_its_worker_and_takes_its_kinds_priority() {
        let from = AgentId::new();
        let q = Notice::message(from, "tester", MessageKind::Question, "which port?");
        assert_eq!(q.priority, Priority::High);
        assert!(
            q.text.starts_with(&format!(
                "Question from your worker {} (tester)",
                from.short()
            )) && q.text.contains("which port?"),
            "{}",
            q.text
        );
        let u = Notice::message(from, "tester", MessageKind::Update, "half done");
        assert_eq!(u.priority, Priority::Low);
        assert!(u.text.ends_with(": half done"), "{}", u.text);
    }
}
