//! Fan-in: which workers' outcomes a supervisor is owed, handing them over, and marking
//! them delivered (an event each, which resume reads).

use super::Team;
use crate::protocol::{AgentId, AgentResult, AgentStatus, EventKind};

/// A worker's outcome as its supervisor is told it.
pub struct Outcome {
    pub id: AgentId,
    pub role: String,
    pub status: AgentStatus,
    pub result: Option<AgentResult>,
    pub failure: Option<String>,
    pub last_message: Option<String>,
}

/// A worker still at work, for reports that list who is still running.
pub struct StillRunning {
    pub id: AgentId,
    pub role: String,
    pub status: AgentStatus,
}

/// Where an agent's workers stand.
#[derive(Debug, PartialEq)]
pub enum FanIn {
    /// Time for a notice batch: every worker has finished and these have outcomes not yet
    /// given to the agent, or something urgent came (a worker failed, a question) while
    /// the workers in `running` still work.
    Ready {
        done: Vec<AgentId>,
        running: Vec<AgentId>,
    },
    /// Workers are still running, and nothing urgent waits.
    Waiting,
    Nothing,
}

impl Team {
    /// `id`'s outcome goes to squad, which asked for it (a `/review` reviewer), not to its
    /// supervisor: no notice batch waits for it or tells of it.
    pub fn answer_to_squad(&self, id: AgentId) {
        if let Some(a) = self.lock().get_mut(&id) {
            a.for_squad = true;
        }
    }

    /// Where `id`'s workers stand. Only looks: outcomes are marked delivered when they are
    /// taken with [`Team::take_outcomes`].
    pub fn owed_results(&self, id: AgentId) -> FanIn {
        let agents = self.lock();
        let Some(me) = agents.get(&id) else {
            return FanIn::Nothing;
        };
        let mut running = false;
        let mut failed = false;
        let mut owed = Vec::new();
        let children = me.children.iter().filter_map(|c| agents.get(c));
        for child in children.filter(|c| !c.for_squad) {
            if child.is_busy() {
                running = true;
            } else if child.owes_outcome() {
                owed.push(child.id);
                failed |= child.status == AgentStatus::Failed;
            }
        }
        let urgent = failed || me.notices.iter().any(|n| n.priority.wakes());
        if urgent {
            let running = if running {
                me.children
                    .iter()
                    .filter(|c| agents.get(c).is_some_and(|a| a.is_busy() && !a.for_squad))
                    .copied()
                    .collect()
            } else {
                Vec::new()
            };
            FanIn::Ready {
                done: owed,
                running,
            }
        } else if running {
            FanIn::Waiting
        } else if owed.is_empty() {
            FanIn::Nothing
        } else {
            FanIn::Ready {
                done: owed,
                running: Vec::new(),
            }
        }
    }

    /// `id`'s workers that failed and whose failure it has not been given.
    pub fn owed_failures(&self, id: AgentId) -> Vec<AgentId> {
        let agents = self.lock();
        let Some(me) = agents.get(&id) else {
            return Vec::new();
        };
        me.children
            .iter()
            .filter(|c| {
                agents
                    .get(c)
                    .is_some_and(|a| a.owes_outcome() && a.status == AgentStatus::Failed)
            })
            .copied()
            .collect()
    }

    /// The outcomes of finished workers, marked delivered to their supervisor (an event
    /// each, which resume reads), and the ones in `running` as they stand.
    pub fn take_outcomes(
        &self,
        done: &[AgentId],
        running: &[AgentId],
    ) -> (Vec<Outcome>, Vec<StillRunning>) {
        let mut agents = self.lock();
        let mut outcomes = Vec::with_capacity(done.len());
        let mut delivered = Vec::with_capacity(done.len());
        for id in done {
            let Some(a) = agents.get_mut(id) else {
                continue;
            };
            a.delivered = true;
            delivered.push((a.id, a.parent));
            outcomes.push(Outcome {
                id: a.id,
                role: a.role.clone(),
                status: a.status,
                result: a.result.clone(),
                failure: a.failure.clone(),
                last_message: a.last_message().map(str::to_string),
            });
        }
        let still = running
            .iter()
            .filter_map(|id| agents.get(id))
            .map(|a| StillRunning {
                id: a.id,
                role: a.role.clone(),
                status: a.status,
            })
            .collect();
        let now = std::time::Instant::now();
        let mut queued = false;
        for (id, _) in &delivered {
            queued |= agents.delivered(*id, now);
        }
        drop(agents);
        if queued {
            self.releases_changed();
        }
        for (id, parent) in delivered {
            if let Some(parent) = parent {
                self.emit(id, EventKind::ResultDelivered { parent_id: parent });
            }
        }
        (outcomes, still)
    }

    /// A follow-up's reply carried the worker's outcome to its supervisor.
    pub fn mark_delivered(&self, id: AgentId) -> (AgentStatus, Option<AgentResult>) {
        let found = self.with(id, |a| {
            a.delivered = true;
            (a.status, a.result.clone(), a.parent)
        });
        let Some((status, result, parent)) = found else {
            return (AgentStatus::Failed, None);
        };
        if self.lock().delivered(id, std::time::Instant::now()) {
            self.releases_changed();
        }
        if let Some(parent) = parent {
            self.emit(id, EventKind::ResultDelivered { parent_id: parent });
        }
        (status, result)
    }

    /// On resume: which outcomes reached their supervisors, as the log says.
    pub fn restore_delivery(&self, delivered: impl Fn(AgentId, AgentStatus) -> bool) {
        let mut agents = self.lock();
        for a in agents.values_mut() {
            if a.parent.is_some() {
                a.delivered = delivered(a.id, a.status);
            }
        }
    }

    /// The caller's workers that are at work or owe an outcome (not a `/review`
    /// reviewer: its outcome is squad's).
    pub fn unfinished_children(&self, id: AgentId) -> Vec<AgentId> {
        let agents = self.lock();
        let Some(me) = agents.get(&id) else {
            return Vec::new();
        };
        me.children
            .iter()
            .filter(|c| {
                agents
                    .get(c)
                    .is_some_and(|a| !a.for_squad && (a.is_busy() || a.owes_outcome()))
            })
            .copied()
            .collect()
    }

    /// How many of `ids`, from the start, have finished: the index of the first still at
    /// work, or `ids.len()`. A waiting supervisor keeps its place, so a wait over ten
    /// thousand workers walks each once, not once per status change.
    pub fn finished_prefix(&self, ids: &[AgentId]) -> usize {
        let agents = self.lock();
        ids.iter()
            .position(|id| agents.get(id).is_some_and(|a| a.is_busy()))
            .unwrap_or(ids.len())
    }

    /// Splits `ids` into those that have finished and those still at work.
    pub fn partition_busy(&self, ids: &[AgentId]) -> (Vec<AgentId>, Vec<AgentId>) {
        let agents = self.lock();
        ids.iter()
            .partition(|id| agents.get(id).is_none_or(|a| !a.is_busy()))
    }

    /// At work, or finished with an outcome its supervisor has not been given yet: what
    /// it wrote is still its own (file leases last this long).
    pub fn result_pending(&self, id: AgentId) -> bool {
        self.with(id, |a| {
            !a.cancel.is_cancelled() && (a.is_busy() || a.owes_outcome())
        })
        .unwrap_or(false)
    }

    /// Finished, and its outcome already given to its supervisor, or released: nothing
    /// left to stop.
    pub fn is_settled(&self, id: AgentId) -> bool {
        self.with(id, |a| {
            a.life.released
                || (a.delivered && matches!(a.status, AgentStatus::Completed | AgentStatus::Failed))
        })
        .unwrap_or(false)
    }
}
