//! How urgent a notice to an agent is, and the kinds of message a worker sends its
//! supervisor. The runtime's inbox (`runtime/inbox.rs`) hands notices over most urgent
//! first; anything that tells an agent something (results, board news, messages, later
//! budget stops) takes one of these priorities.

use serde::{Deserialize, Serialize};

/// Most urgent first: the derived order sorts `Critical` before `Low`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    /// A worker failed, the task board deadlocked, a budget stopped an agent.
    Critical,
    /// A worker's question.
    High,
    /// Workers' results, tasks that became ready.
    Normal,
    /// A worker's progress update.
    Low,
}

impl Priority {
    /// Whether a notice of this priority wakes an agent that waits for its workers (or
    /// reaches a running one at its next model call); lower ones ride along with the next
    /// batch that is delivered anyway.
    pub fn wakes(self) -> bool {
        self <= Self::High
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Critical => "critical",
            Self::High => "high",
            Self::Normal => "normal",
            Self::Low => "low",
        }
    }
}

/// What a worker's `message_supervisor` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageKind {
    /// Something the worker needs to know: wakes a waiting supervisor.
    Question,
    /// Progress: rides along with the supervisor's next notice batch.
    Update,
}

impl MessageKind {
    pub fn priority(self) -> Priority {
        match self {
            Self::Question => Priority::High,
            Self::Update => Priority::Low,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Question => "question",
            Self::Update => "update",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn critical_sorts_first_and_only_critical_and_high_wake() {
        let mut all = vec![
            Priority::Low,
            Priority::Normal,
            Priority::Critical,
            Priority::High,
        ];
        all.sort();
        assert_eq!(
            all,
            [
                Priority::Critical,
                Priority::High,
                Priority::Normal,
                Priority::Low
            ]
        );
        let waking: Vec<_> = all.into_iter().filter(|p| p.wakes()).collect();
        assert_eq!(waking, [Priority::Critical, Priority::High]);
        assert_eq!(MessageKind::Question.priority(), Priority::High);
        assert_eq!(MessageKind::Update.priority(), Priority::Low);
    }
}
