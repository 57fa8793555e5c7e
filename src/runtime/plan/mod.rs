//! Plan first, then write (issue 54 part 4): a `plan_first` role's workers keep only their
//! reading tools until the plan they submit (`submit_plan`) is approved by their
//! supervisor (`review_plan`) or the user (`Op::DecidePlan`); a rejection goes back with
//! its reason. And the persona's coordinate-only mode (`/lead`, Ctrl+L, or its role's
//! `coordinate_only`, which a persona brings when it takes the session). This file keeps the
//! states, each change a durable event (`plan_submitted`, `plan_decided`,
//! `coordinate_only`) that replay reads back; `gate.rs` fits an agent's tools to them.

mod gate;

pub use gate::{Fit, fit};

use super::inbox::Notice;
use super::team::Team;
use crate::protocol::{AgentId, EventKind, PlanDecision, PlanState, PlanSubmitted, Priority};
use crate::roles::Role;
use crate::sync::lock;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::oneshot;

/// A decision as the waiting worker reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub approved: bool,
    pub reason: String,
    /// The supervisor that decided; none for the user.
    pub by: Option<AgentId>,
}

/// What a submission came to.
pub enum Submitted {
    /// Decided already (approved, or this very plan rejected): no need to wait.
    Decided(Decision),
    /// Waits for the decision.
    Waiting(oneshot::Receiver<Decision>),
}

/// Why a decision was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlanRefused {
    #[error("agent {0} has no plan awaiting approval")]
    NothingAwaiting(String),
    #[error("a rejection needs a reason the worker can act on")]
    NoReason,
}

#[derive(Default)]
struct Entry {
    state: Option<PlanState>,
    waiter: Option<oneshot::Sender<Decision>>,
}

/// The session's plans and the persona's coordinate-only switch.
#[derive(Default)]
pub struct Plans {
    inner: Mutex<Inner>,
    coordinate_only: AtomicBool,
}

#[derive(Default)]
struct Inner {
    next_id: u64,
    agents: HashMap<AgentId, Entry>,
}

impl Plans {
    /// Whether `agent`'s plan was approved.
    pub fn approved(&self, agent: AgentId) -> bool {
        matches!(self.state(agent), Some(PlanState::Approved { .. }))
    }

    pub fn state(&self, agent: AgentId) -> Option<PlanState> {
        lock(&self.inner).agents.get(&agent)?.state.clone()
    }

    /// Worker `agent` submits `plan`: recorded (`plan_submitted`, with its notice to the
    /// supervisor under the team's lock) unless it is the plan already awaiting, whose
    /// notice is posted again only when nobody waited on it (a resumed worker asking again).
    /// An approved plan, or this very plan rejected, is answered at once.
    pub fn submit(&self, team: &Team, agent: AgentId, plan: &str) -> Submitted {
        let (tx, rx) = oneshot::channel();
        let mut inner = lock(&self.inner);
        inner.next_id += 1;
        let next = inner.next_id;
        let entry = inner.agents.entry(agent).or_default();
        let (plan_id, record, notify) = match &entry.state {
            Some(PlanState::Approved { .. }) => {
                return Submitted::Decided(Decision {
                    approved: true,
                    reason: String::new(),
                    by: None,
                });
            }
            Some(PlanState::Rejected {
                plan: rejected,
                reason,
                ..
            }) if rejected == plan => {
                return Submitted::Decided(Decision {
                    approved: false,
                    reason: reason.clone(),
                    by: None,
                });
            }
            Some(PlanState::Awaiting { plan_id, plan: p }) if p == plan => {
                (*plan_id, false, entry.waiter.is_none())
            }
            _ => (next, true, true),
        };
        entry.state = Some(PlanState::Awaiting {
            plan_id,
            plan: plan.to_string(),
        });
        entry.waiter = Some(tx);
        if notify && let Some(supervisor) = team.parent(agent) {
            let role = team.role(agent).unwrap_or_default();
            let notice = Notice::new(Priority::High, review_notice(agent, &role, plan));
            let told = record.then(|| {
                let plan = plan.to_string();
                (
                    agent,
                    EventKind::PlanSubmitted(PlanSubmitted { plan_id, plan }),
                )
            });
            team.post_notice(supervisor, notice, told);
        } else if record {
            let plan = plan.to_string();
            team.emit(
                agent,
                EventKind::PlanSubmitted(PlanSubmitted { plan_id, plan }),
            );
        }
        Submitted::Waiting(rx)
    }

    /// Decides `agent`'s plan awaiting approval (`by`: its supervisor, none for the user);
    /// the event is the record, the waiting `submit_plan` call reads the decision.
    pub fn decide(
        &self,
        team: &Team,
        agent: AgentId,
        approved: bool,
        reason: &str,
        by: Option<AgentId>,
    ) -> Result<(), PlanRefused> {
        let reason = reason.trim();
        if !approved && reason.is_empty() {
            return Err(PlanRefused::NoReason);
        }
        let mut inner = lock(&self.inner);
        let entry = inner.agents.get_mut(&agent);
        let Some(entry) = entry.filter(|e| matches!(e.state, Some(PlanState::Awaiting { .. })))
        else {
            return Err(PlanRefused::NothingAwaiting(agent.short()));
        };
        let Some(PlanState::Awaiting { plan_id, plan }) = entry.state.take() else {
            return Err(PlanRefused::NothingAwaiting(agent.short()));
        };
        entry.state = Some(if approved {
            PlanState::Approved { plan_id }
        } else {
            PlanState::Rejected {
                plan_id,
                plan,
                reason: reason.to_string(),
            }
        });
        let kind = EventKind::PlanDecided(PlanDecision {
            plan_id,
            approved,
            reason: reason.to_string(),
            by,
        });
        team.emit(agent, kind);
        if let Some(tx) = entry.waiter.take() {
            let reason = reason.to_string();
            let _ = tx.send(Decision {
                approved,
                reason,
                by,
            });
        }
        drop(inner);
        team.bump();
        Ok(())
    }

    /// The worker stopped waiting (cancelled): a later decision finds nobody waiting.
    pub fn stop_waiting(&self, agent: AgentId) {
        if let Some(e) = lock(&self.inner).agents.get_mut(&agent) {
            e.waiter = None;
        }
    }

    /// On resume: the plans as the log left them (one awaiting is still awaiting).
    pub fn restore(&self, states: impl IntoIterator<Item = (AgentId, PlanState)>) {
        let mut inner = lock(&self.inner);
        for (agent, state) in states {
            inner.next_id = inner.next_id.max(state.plan_id());
            inner.agents.entry(agent).or_default().state = Some(state);
        }
    }

    /// Whether the persona coordinates only (`/lead`).
    pub fn coordinate_only(&self) -> bool {
        self.coordinate_only.load(Ordering::Relaxed)
    }

    /// A persona taking the session (at a new session's start, a handoff, `/role`) brings
    /// its own mode: its role's `coordinate_only`, told only when it changes the mode, so a
    /// persona without the option starts a session as it always did.
    pub fn follow_persona(&self, team: &Team, role: &Role) {
        if self.coordinate_only() != role.coordinate_only {
            self.set_coordinate_only(team, role.coordinate_only, true);
        }
    }

    /// The user's `/lead` (or the log's last word on it, `tell` false on resume).
    pub fn set_coordinate_only(&self, team: &Team, on: bool, tell: bool) {
        self.coordinate_only.store(on, Ordering::Relaxed);
        if tell {
            team.emit(team.root(), EventKind::CoordinateOnly { on });
        }
    }
}

/// The supervisor's notice of a plan to review: the plan, and the one way to answer.
fn review_notice(agent: AgentId, role: &str, plan: &str) -> String {
    format!(
        "Plan from your worker {} ({role}), which has only its reading tools until you \
         decide: call review_plan (approve, or reject with a reason it can act on).\n{plan}",
        agent.short()
    )
}

#[cfg(test)]
mod tests;
