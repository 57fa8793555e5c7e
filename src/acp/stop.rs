//! How a prompt ended: squad's turn ends, stops and budgets, in ACP's stop reasons.

pub use agent_client_protocol::v1::schema::StopReason;

use crate::protocol::TurnEnd;

/// What decides a prompt's stop reason.
#[derive(Debug, Default)]
pub struct TurnState {
    pub started: bool,
    pub cancelled: bool,
    pub last_end: Option<TurnEnd>,
    /// The session's budget stopped the team: said in the last message.
    pub refused: Option<String>,
    pub last_error: Option<String>,
}

impl TurnState {
    /// The stop reason, and what to say in the last message first: `end_turn`;
    /// `cancelled` (session/cancel, or the turn interrupted); `max_tokens` (the answer cut
    /// at the model's output limit); `max_turn_requests` (`limits.max_iterations`);
    /// `refusal` for a budget or loop stop, or any other failed turn, with its reason.
    pub fn stop_reason(&self) -> (StopReason, Option<String>) {
        if self.cancelled {
            return (StopReason::Cancelled, None);
        }
        if let Some(why) = &self.refused {
            return (StopReason::Refusal, Some(why.clone()));
        }
        match self.last_end {
            Some(TurnEnd::MaxTokens) => (
                StopReason::MaxTokens,
                Some("the model's answer reached its output limit (finish_reason: length)".into()),
            ),
            Some(TurnEnd::MaxIterations) => (StopReason::MaxTurnRequests, self.last_error.clone()),
            Some(TurnEnd::Cancelled | TurnEnd::Interrupted) => (StopReason::Cancelled, None),
            Some(TurnEnd::Error) => (
                StopReason::Refusal,
                Some(
                    self.last_error
                        .clone()
                        .unwrap_or_else(|| "the turn failed".into()),
                ),
            ),
            Some(TurnEnd::Completed | TurnEnd::Returned) | None => (StopReason::EndTurn, None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ended(end: TurnEnd) -> TurnState {
        TurnState {
            started: true,
            last_end: Some(end),
            ..TurnState::default()
        }
    }

    #[test]
    fn each_turn_end_has_its_stop_reason() {
        assert_eq!(
            ended(TurnEnd::Completed).stop_reason().0,
            StopReason::EndTurn
        );
        assert_eq!(
            ended(TurnEnd::MaxTokens).stop_reason().0,
            StopReason::MaxTokens
        );
        assert_eq!(
            ended(TurnEnd::MaxIterations).stop_reason().0,
            StopReason::MaxTurnRequests
        );
        assert_eq!(
            ended(TurnEnd::Interrupted).stop_reason().0,
            StopReason::Cancelled
        );
        let (reason, why) = ended(TurnEnd::Error).stop_reason();
        assert_eq!(reason, StopReason::Refusal);
        assert_eq!(why.as_deref(), Some("the turn failed"));
    }

    #[test]
    fn cancel_and_a_budget_stop_win_over_the_turn_end() {
        let mut t = ended(TurnEnd::Completed);
        t.refused = Some("session budget reached".into());
        assert_eq!(t.stop_reason().0, StopReason::Refusal);
        t.cancelled = true;
        assert_eq!(t.stop_reason(), (StopReason::Cancelled, None));
    }
}
