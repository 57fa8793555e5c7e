//! Claims on the shared board (`claim_task`): taken under the board's lock, so a claim
//! and a supervisor's spawn of one task never both win; a claimed task whose worker ended
//! without finishing is given back; a kept worker that claimed is offered the next ready
//! task when it has none.

use super::{Inner, TaskBoard, publish};
use crate::protocol::{AgentId, TaskStatus};
use crate::runtime::board::{BoardError, ClaimRefused, PlannedTask};
use crate::runtime::team::{AgentInput, Team};
use crate::sync::lock;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How often a wait for a lease looks again, besides the team's changes.
pub const LEASE_RECHECK: Duration = Duration::from_millis(500);

impl TaskBoard {
    /// Gives `agent` (of `role`) the task `id`, or the first ready one it may take; returns
    /// the task's id.
    pub fn claim(
        &self,
        team: &Team,
        agent: AgentId,
        role: &str,
        id: Option<&str>,
    ) -> Result<String, ClaimRefused> {
        let mut inner = lock(&self.inner);
        let (id, changes) = inner.board.claim(agent, role, id)?;
        if !inner.claimers.contains(&agent) {
            inner.claimers.push(agent);
        }
        publish(&mut inner, team, agent, changes, false);
        Ok(id)
    }

    /// The task `agent` claimed and still runs, given back as ready with `why` it was
    /// left; true if there was one. Tasks a supervisor assigned stay as they are.
    pub fn give_back(&self, team: &Team, agent: AgentId, why: &str) -> bool {
        let mut inner = lock(&self.inner);
        let claimed = inner.board.task_of(agent).is_some_and(|t| t.claimed);
        if !claimed {
            return false;
        }
        let note = format!("given back by worker {}: {why}", agent.short());
        let changes = inner.board.give_back(agent, &note);
        publish(&mut inner, team, agent, changes, true);
        offer_to(&inner, team, Some(agent));
        true
    }

    /// Checks that the task `id` can be given to a worker a supervisor spawns for it: its
    /// lease free, or, when the task says `wait`, once it is (another task's worker ending
    /// frees it). Refused naming the holder otherwise, or when `cancel` ends the wait.
    pub async fn assignable_when_free(
        &self,
        team: &Team,
        id: &str,
        cancel: &CancellationToken,
    ) -> Result<(), String> {
        let mut changes = team.subscribe();
        loop {
            match self.check_assignable(id) {
                Err(ClaimRefused::Overlap { wait: true, .. }) => {
                    tokio::select! {
                        _ = changes.changed() => {}
                        _ = tokio::time::sleep(LEASE_RECHECK) => {}
                        _ = cancel.cancelled() => {
                            return Err("interrupted while waiting for the task's paths to be free".into());
                        }
                    }
                }
                other => return other.map_err(|e| e.to_string()),
            }
        }
    }

    /// The task `agent` runs now, if any.
    pub fn running_task(&self, agent: AgentId) -> Option<crate::protocol::Task> {
        lock(&self.inner).board.task_of(agent).cloned()
    }

    /// Checks that a plan would be taken, without taking it (before its hooks hear it).
    pub fn check_plan(&self, tasks: &[PlannedTask]) -> Result<(), BoardError> {
        let mut trial = lock(&self.inner).board.clone();
        trial.plan(tasks.to_vec()).map(|_| ())
    }

    /// The paths the task `agent` runs declared, with its id; none when it declared none.
    pub fn lease_of(&self, agent: AgentId) -> Option<(String, Vec<String>)> {
        let inner = lock(&self.inner);
        let t = inner.board.task_of(agent)?;
        (!t.paths.is_empty()).then(|| (t.id.clone(), t.paths.clone()))
    }

    /// On resume: tasks whose worker's result is on record after it took them, the log
    /// ending before the board heard of it (`ReplayedSession::returned`), are finished as
    /// that result says, as its turn's end would have: not held for ever by a worker at
    /// rest (`tests/team_crash.rs` found one, the board never done).
    pub fn finish_returned(&self, team: &Team, returned: &[(String, AgentId)]) {
        for (task, agent) in returned {
            let holds = self.running_task(*agent).is_some_and(|t| t.id == *task);
            let Some(result) = team.result(*agent).filter(|_| holds) else {
                continue;
            };
            let ok = result.status == crate::protocol::ResultStatus::Success
                && result.verification.as_ref().is_none_or(|v| v.passed);
            self.worker_finished(team, *agent, ok, Some(result.summary));
        }
    }

    /// On resume: a claimed task whose worker did not come back alive is ready again, so
    /// no task is held by nobody; the workers that claimed are known again.
    pub fn reconcile(&self, team: &Team, alive: &dyn Fn(AgentId) -> bool) {
        let holders: Vec<(AgentId, bool)> = {
            let inner = lock(&self.inner);
            (inner.board.tasks().iter())
                .filter(|t| t.status == TaskStatus::Running && t.claimed)
                .filter_map(|t| t.assignee)
                .map(|a| (a, alive(a)))
                .collect()
        };
        for (agent, alive) in holders {
            if alive {
                let mut inner = lock(&self.inner);
                if !inner.claimers.contains(&agent) {
                    inner.claimers.push(agent);
                }
            } else {
                self.give_back(team, agent, "it did not come back after the restart");
            }
        }
    }
}

/// Offers each kept worker that claimed before and holds nothing the ready tasks it may
/// take, as a message that starts its next turn.
///
/// Trigger (the only one): a worker that chose the claim loop (it called `claim_task`),
/// rests with no task, while a task it may claim is ready. A worker that never claimed,
/// or one that rests when nothing is left for it, hears nothing
/// (`tests/capable_models.rs::a_kept_worker_claims_the_only_task_and_hears_nothing_more`).
pub(super) fn offer_next(inner: &Inner, team: &Team) {
    offer_to(inner, team, None);
}

fn offer_to(inner: &Inner, team: &Team, except: Option<AgentId>) {
    // One worker woken per task it could claim now: the others would find nothing left.
    let mut left = inner.board.claimable("").len().max(
        (inner.board.tasks().iter())
            .filter(|t| t.status == TaskStatus::Ready && t.role.is_some())
            .count(),
    );
    for &w in &inner.claimers {
        if left == 0 {
            return;
        }
        if Some(w) == except || inner.board.task_of(w).is_some() || !team.rests_kept(w) {
            continue;
        }
        let role = team.role(w).unwrap_or_default();
        let ready: Vec<String> = (inner.board.claimable(&role).into_iter())
            .map(|t| format!("{} ({})", t.id, t.title))
            .collect();
        if ready.is_empty() {
            continue;
        }
        let text = format!(
            "[squad] Task board: ready: {}. Claim the next with claim_task, or answer in a \
             line if none is for you.",
            ready.join(", ")
        );
        if team.deliver(w, AgentInput::Message { text, reply: None }) {
            left -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::events::EventSink;
    use std::sync::Arc;

    fn planned(id: &str) -> PlannedTask {
        PlannedTask {
            id: id.into(),
            title: format!("task {id}"),
            description: None,
            role: None,
            depends_on: Vec::new(),
            paths: Vec::new(),
            wait: false,
        }
    }

    /// qwen-code#10207: a supervisor's spawn (`assign`) and workers' claims of one task at
    /// the same moment, from many threads: exactly one wins, every round.
    #[test]
    fn a_claim_and_a_spawn_of_one_task_at_once_never_both_win() {
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let team = Arc::new(Team::new(EventSink::new(None, 0, tx), AgentId::new()));
        for round in 0..200 {
            let board = Arc::new(TaskBoard::default());
            let id = format!("T{round}");
            board.plan(&team, team.root(), vec![planned(&id)]).unwrap();
            let start = Arc::new(std::sync::Barrier::new(8));
            let handles: Vec<_> = (0..8)
                .map(|i| {
                    let (board, team, start, id) =
                        (board.clone(), team.clone(), start.clone(), id.clone());
                    std::thread::spawn(move || {
                        start.wait();
                        let worker = AgentId::new();
                        let won = if i % 2 == 0 {
                            board.assign(&team, team.root(), &id, worker).is_ok()
                        } else {
                            board.claim(&team, worker, "coder", Some(&id)).is_ok()
                        };
                        won.then_some(worker)
                    })
                })
                .collect();
            let winners: Vec<AgentId> = (handles.into_iter())
                .filter_map(|h| h.join().unwrap())
                .collect();
            assert_eq!(winners.len(), 1, "round {round}: {} owners", winners.len());
            let view = board.board();
            assert_eq!(view["tasks"][0]["assignee"], winners[0].to_string());
        }
    }
}
