//! Plan first, then write (issue 54 part 4): a `plan_first` worker's plan as the events
//! tell it, and where it stands, which the runtime, replay and the front ends fold alike.

use super::AgentId;
use serde::{Deserialize, Serialize};

/// `plan_submitted`: the worker keeps only its reading tools until it is decided.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanSubmitted {
    pub plan_id: u64,
    pub plan: String,
}

/// `plan_decided`: approved (the worker's writing tools come back) or rejected with
/// `reason`, which the worker reads; `by` the supervisor that decided, none for the user.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanDecision {
    pub plan_id: u64,
    pub approved: bool,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<AgentId>,
}

/// Where a worker's plan is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlanState {
    /// Submitted; its supervisor or the user decides.
    Awaiting { plan_id: u64, plan: String },
    /// Rejected with `reason`: the worker revises and submits again.
    Rejected {
        plan_id: u64,
        plan: String,
        reason: String,
    },
    /// Approved: its writing tools are back.
    Approved { plan_id: u64 },
}

impl PlanState {
    pub fn plan_id(&self) -> u64 {
        match self {
            Self::Awaiting { plan_id, .. }
            | Self::Rejected { plan_id, .. }
            | Self::Approved { plan_id } => *plan_id,
        }
    }

    /// The state after `ev` on `prior` (none: nothing submitted yet); `None` when `ev`
    /// is neither plan event or decides a plan that is not the one awaiting.
    pub fn after(prior: Option<&Self>, ev: &super::EventKind) -> Option<Self> {
        if let super::EventKind::PlanSubmitted(s) = ev {
            return Some(Self::Awaiting {
                plan_id: s.plan_id,
                plan: s.plan.clone(),
            });
        }
        let super::EventKind::PlanDecided(d) = ev else {
            return None;
        };
        let Some(Self::Awaiting { plan_id, plan }) = prior else {
            return None;
        };
        if *plan_id != d.plan_id {
            return None;
        }
        Some(if d.approved {
            Self::Approved { plan_id: d.plan_id }
        } else {
            Self::Rejected {
                plan_id: d.plan_id,
                plan: plan.clone(),
                reason: d.reason.clone(),
            }
        })
    }
}

impl PlanSubmitted {
    /// One line for progress and ACP.
    pub fn line(&self) -> String {
        let plan: String = one_line(&self.plan).chars().take(200).collect();
        format!("plan submitted, awaiting approval: {plan}")
    }
}

impl PlanDecision {
    /// One line for progress and ACP.
    pub fn line(&self) -> String {
        let by = if self.by.is_some() {
            "its supervisor"
        } else {
            "the user"
        };
        if self.approved {
            format!("plan approved by {by}: writing tools back")
        } else {
            format!("plan rejected by {by}: {}", one_line(&self.reason))
        }
    }
}

/// `text` on one line, its runs of white space one space.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
