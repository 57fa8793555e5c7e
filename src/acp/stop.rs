//! How a prompt ended: squad's turn ends, stops and budget, in ACP's stop reasons.

use crate::protocol::TurnEnd;

/// How a prompt ended, in ACP's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    EndTurn,
    MaxTurnRequests,
    Refusal,
    Cancelled,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::EndTurn => "end_turn",
            Self::MaxTurnRequests => "max_turn_requests",
            Self::Refusal => "refusal",
            Self::Cancelled => "cancelled",
        }
    }
}

/// What decides a prompt's stop reason.
#[derive(Debug, Default)]
pub struct TurnState {
    pub started: bool,
    pub cancelled: bool,
    pub last_end: Option<TurnEnd>,
    pub refused: Option<String>,
    pub last_error: Option<String>,
}

impl TurnState {
    /// The stop reason; a refusal's reason is said in the last message first.
    pub fn stop_reason(&self) -> (StopReason, Option<String>) {
        if self.cancelled {
            return (StopReason::Cancelled, None);
        }
        if let Some(why) = &self.refused {
            return (StopReason::Refusal, Some(why.clone()));
        }
        match self.last_end {
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
            _ => (StopReason::EndTurn, None),
        }
    }
}
