//! A change that did not pass its checks never merges on its own: when its worker ends
//! any other way than with a result that passed (a correction answered in words, the
//! corrections spent, a failure, the iteration limit, an error, a despawn) the change is
//! committed on the worker's branch `squad/<short id>` and stays out of the workspace.
//! Its supervisor is told why and where it is; the tree says `unmerged (failed checks)`.
//! Only the user merges it as it is (`Op::MergeWorker`: `/merge`, `squad merge`, ACP's
//! `/merge`), or the worker, spoken to again, returns a result that passes.

use super::error::MergeRefused;
use super::merge::{describe, merge, merged, merged_paths, tell_supervisor};
use super::worker::{WorkerIsolation, branch_of};
use crate::isolation::MergeOutcome;
use crate::protocol::{AgentId, EventKind, MergeReport, MergeState, Verdict};
use crate::runtime::agent_tools::Checked;
use crate::runtime::team::Team;

impl WorkerIsolation {
    /// Remembers the verdict of a result just checked, for the end of the worker's turn.
    pub fn note_checked(&self, agent: AgentId, checked: &Checked) {
        let mut verdicts = crate::sync::lock(&self.verdicts);
        match checked {
            Checked::Unchecked => verdicts.remove(&agent),
            Checked::Deliver(v) | Checked::Correct { verdict: v, .. } => {
                verdicts.insert(agent, v.clone())
            }
            // A hook kept the task open: the verdict noted before it stands.
            Checked::Kept(_) => None,
        };
    }

    /// The verdict of `agent`'s latest checked result.
    pub(super) fn last_verdict(&self, agent: AgentId) -> Option<Verdict> {
        crate::sync::lock(&self.verdicts).get(&agent).cloned()
    }

    /// Whether `agent` holds a change that is not in the workspace: in its worktree, or
    /// kept on its branch after its worktree went.
    pub async fn holds_unmerged(&self, agent: AgentId) -> bool {
        match (self.state(agent), self.worktrees.as_ref()) {
            (Some(state), _) => state.unmerged(),
            (None, Some(w)) if !self.has_own(agent) => w.holds_kept(branch_of(agent)).await,
            _ => false,
        }
    }

    /// Keeps `agent`'s change unmerged on its branch because `why`; the report says so.
    pub(super) async fn keep(&self, team: &Team, agent: AgentId, why: &str) -> MergeReport {
        let branch = branch_of(agent);
        let kept = match self.worktrees.as_ref() {
            Some(w) => w.keep(agent, format!("Not merged: {why}.")).await,
            None => Ok(false),
        };
        let place = match kept {
            Ok(_) => format!("it is kept on branch {branch}"),
            Err(e) => {
                team.emit(
                    agent,
                    EventKind::Error {
                        message: format!("could not commit the change on {branch}: {e}"),
                    },
                );
                "it stays in its worktree".to_string()
            }
        };
        self.set_state(agent, Some(MergeState::FailedChecks));
        kept_report(agent, why, &place)
    }

    /// A worker with an unmerged change is going (despawned, released): the change is
    /// kept on its branch, and its supervisor told unless it was already. False when it
    /// could not be kept: then the worktree stays too.
    pub(super) async fn keep_gone(&self, team: &Team, agent: AgentId) -> bool {
        let told = self.state(agent) == Some(MergeState::FailedChecks);
        let why = "its worker was let go before a result of it passed its checks";
        let Some(worktrees) = self.worktrees.as_ref() else {
            return false;
        };
        if let Err(e) = worktrees.keep(agent, format!("Not merged: {why}.")).await {
            team.emit(
                agent,
                EventKind::Error {
                    message: format!(
                        "could not keep the change on {}: {e}; its worktree stays",
                        branch_of(agent)
                    ),
                },
            );
            return false;
        }
        if !told {
            self.set_state(agent, Some(MergeState::FailedChecks));
            let report = kept_report(
                agent,
                why,
                &format!("it is kept on branch {}", branch_of(agent)),
            );
            team.emit(agent, EventKind::MergeReport(report.clone()));
            tell_supervisor(team, agent, &describe(&report));
        }
        true
    }

    /// `Op::MergeWorker`: merges `agent`'s change because the user asked, whatever its
    /// checks said: from its worktree while it has one, else from its kept branch.
    /// Returns the files written in the workspace (absolute paths).
    pub async fn merge_on_purpose(
        &self,
        team: &Team,
        agent: AgentId,
    ) -> Result<Vec<String>, MergeRefused> {
        let worktrees = self.worktrees.as_ref().ok_or(MergeRefused::Shared)?;
        let (short, branch) = (agent.short(), branch_of(agent));
        let report = if self.has_own(agent) {
            merge(team, self, worktrees, agent).await
        } else {
            let outcome = (worktrees.merge_kept(branch.clone()).await)
                .map_err(|source| MergeRefused::Git {
                    branch: branch.clone(),
                    source,
                })?
                .ok_or_else(|| MergeRefused::NoChange {
                    short: short.clone(),
                    branch: branch.clone(),
                })?;
            from_branch(team, agent, outcome)
        };
        let report = report.ok_or(MergeRefused::AlreadyIn(short))?;
        team.emit(agent, EventKind::MergeReport(report.clone()));
        tell_supervisor(
            team,
            agent,
            &format!("the user merged it on purpose: {}", describe(&report)),
        );
        Ok(merged_paths(worktrees, &report))
    }
}

/// The report of a change kept unmerged because `why`, found at `place`.
fn kept_report(agent: AgentId, why: &str, place: &str) -> MergeReport {
    let short = agent.short();
    MergeReport {
        state: MergeState::FailedChecks,
        files: Vec::new(),
        conflicts: Vec::new(),
        note: format!(
            "its change failed its checks ({why}) and is not merged: {place}. \
             speak_to_agent {short} to have it fix the change and return a result that \
             passes (that result merges); the user can merge it as it is on purpose \
             (/merge {short} or `squad merge {short}`)"
        ),
    }
}

/// What merging a kept branch did, told as a merge from a worktree is.
fn from_branch(team: &Team, agent: AgentId, outcome: MergeOutcome) -> Option<MergeReport> {
    match outcome {
        MergeOutcome::Unchanged => None,
        MergeOutcome::Merged { files, record } => Some(merged(team, agent, files, record)),
        MergeOutcome::Conflict { conflicts } => {
            let files = super::unmerge::conflict_files(&conflicts);
            let listed = files.iter().map(ToString::to_string).collect();
            team.emit(agent, EventKind::MergeConflict { conflicts: files });
            Some(MergeReport {
                state: MergeState::Conflict,
                files: Vec::new(),
                conflicts: listed,
                note: format!(
                    "nothing of it reached the workspace; it stays on {}",
                    branch_of(agent)
                ),
            })
        }
    }
}
