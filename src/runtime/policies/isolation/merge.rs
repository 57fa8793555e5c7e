//! Bringing an isolated worker's change into the workspace when its result goes up:
//! through the merge queue (one at a time, in the order results come), told to the front
//! ends (`merged`, `merge_conflict`) and to its supervisor with the result.

use super::worker::WorkerIsolation;
use crate::isolation::{Conflict, MergeOutcome};
use crate::protocol::{
    AgentId, ConflictFile, ConflictHunk, EventKind, LineRange, MergeReport, MergeState,
    ResultStatus, TurnEnd,
};
use crate::runtime::inbox::Notice;
use crate::runtime::team::Team;

/// A worker's turn ended (`end`). When it has a worktree of its own and its result is
/// accepted (an answer, or a returned result that is no failure and passed its checks),
/// its change is merged into the workspace; a conflict changes nothing there. Its
/// supervisor reads what happened in the result's `merge` (or, for a worker that
/// answered without `return_results`, in a notice beside its answer).
/// Returns the files a merge wrote in the workspace, as absolute paths.
impl WorkerIsolation {
    pub async fn settle(&self, team: &Team, agent: AgentId, end: TurnEnd) -> Vec<String> {
        settle(self, team, agent, end).await
    }
}

async fn settle(iso: &WorkerIsolation, team: &Team, agent: AgentId, end: TurnEnd) -> Vec<String> {
    iso.forget_base(agent);
    let Some(worktrees) = iso.worktrees.clone().filter(|_| iso.has_own(agent)) else {
        return Vec::new();
    };
    if let Some(p) = crate::sync::lock(&iso.own).get_mut(&agent) {
        p.settled = true;
    }
    let result = team.result(agent).filter(|_| end == TurnEnd::Returned);
    let refused = refusal(end, result.as_ref());
    let short = agent.short();
    let report = match refused {
        Some(why) => iso
            .state(agent)
            .is_some_and(MergeState::unmerged)
            .then(|| MergeReport {
                state: MergeState::Pending,
                files: Vec::new(),
                conflicts: Vec::new(),
                note: format!(
                    "its change stays in its worktree, not merged, because {why}: speak_to_agent \
                 {short} to have it finish, or despawn_agent {short} to discard the change"
                ),
            }),
        None => merge(team, iso, &worktrees, agent).await,
    };
    let Some(report) = report else {
        return Vec::new();
    };
    // Logged, so a resumed session knows it too.
    team.emit(agent, EventKind::MergeReport(report.clone()));
    let merged = merged_paths(&worktrees, &report);
    match result {
        Some(mut r) => {
            r.merge = Some(report);
            team.set_result(agent, r);
        }
        None => {
            if let Some(parent) = team.parent(agent) {
                let role = team.role(agent).unwrap_or_default();
                let text = format!("Worker {short} ({role}): {}", describe(&report));
                team.post_notice(
                    parent,
                    Notice::new(crate::protocol::Priority::Normal, text),
                    None,
                );
            }
        }
    }
    merged
}

/// Why the worker's change is not merged, if it is not: only an accepted result is.
fn refusal(end: TurnEnd, result: Option<&crate::protocol::AgentResult>) -> Option<&'static str> {
    match (end, result) {
        (TurnEnd::Returned, Some(r)) if r.status == ResultStatus::Failure => {
            Some("its result is a failure")
        }
        (TurnEnd::Returned, Some(r)) if r.verification.as_ref().is_some_and(|v| !v.passed) => {
            Some("its result did not pass its checks")
        }
        (TurnEnd::Returned | TurnEnd::Completed, _) => None,
        (TurnEnd::Error, _) => Some("it failed"),
        _ => Some("its turn was cut short"),
    }
}

/// The files a merge wrote, as absolute paths; none when it did not merge.
fn merged_paths(worktrees: &crate::isolation::Worktrees, report: &MergeReport) -> Vec<String> {
    if report.state != MergeState::Merged {
        return Vec::new();
    }
    let top = &worktrees.repo().top;
    (report.files.iter())
        .map(|f| top.join(f).to_string_lossy().into_owned())
        .collect()
}

/// Merges the worker's change; `None` when it changed nothing.
async fn merge(
    team: &Team,
    iso: &WorkerIsolation,
    worktrees: &crate::isolation::Worktrees,
    agent: AgentId,
) -> Option<MergeReport> {
    let outcome = match worktrees.merge(agent).await {
        Ok(o) => o,
        Err(e) => return Some(not_merged(team, iso, agent, e)),
    };
    match outcome {
        MergeOutcome::Unchanged => {
            iso.set_state(agent, None);
            None
        }
        MergeOutcome::Merged { files, record } => {
            iso.set_state(agent, Some(MergeState::Merged));
            team.emit(
                agent,
                EventKind::Merged {
                    files: files.clone(),
                    record: Some(record),
                },
            );
            Some(MergeReport {
                state: MergeState::Merged,
                files,
                conflicts: Vec::new(),
                note: String::new(),
            })
        }
        MergeOutcome::Conflict { conflicts } => Some(conflicted(team, iso, agent, &conflicts)),
    }
}

/// A merge that could not be made: the change stays pending in the worktree, and the
/// report says what the supervisor can do (nothing, when the worktree was tampered with).
fn not_merged(
    team: &Team,
    iso: &WorkerIsolation,
    agent: AgentId,
    e: crate::isolation::IsolationError,
) -> MergeReport {
    let short = agent.short();
    let message = format!("could not merge the worker's change: {e}");
    team.emit(
        agent,
        EventKind::Error {
            message: message.clone(),
        },
    );
    iso.set_state(agent, Some(MergeState::Pending));
    let note = if matches!(e, crate::isolation::IsolationError::Tampered(_)) {
        // Asking the worker again would not help: squad will not run git there.
        format!(
            "{message}. Its result is refused and will not be merged; its worktree \
             is kept as it is for the user"
        )
    } else {
        format!(
            "{message}. The change stays in its worktree: speak_to_agent {short} to \
             have it return its result again, or despawn_agent {short} to discard it"
        )
    };
    MergeReport {
        state: MergeState::Pending,
        files: Vec::new(),
        conflicts: Vec::new(),
        note,
    }
}

/// A merge that conflicts: nothing reached the workspace; the conflicts are told and the
/// report says how the supervisor settles them.
fn conflicted(
    team: &Team,
    iso: &WorkerIsolation,
    agent: AgentId,
    conflicts: &[Conflict],
) -> MergeReport {
    let short = agent.short();
    iso.set_state(agent, Some(MergeState::Conflict));
    let files: Vec<ConflictFile> = conflicts.iter().map(conflict_file).collect();
    let listed = files.iter().map(ToString::to_string).collect();
    team.emit(agent, EventKind::MergeConflict { conflicts: files });
    MergeReport {
        state: MergeState::Conflict,
        files: Vec::new(),
        conflicts: listed,
        note: format!(
            "nothing of its change reached the workspace. speak_to_agent {short} has it \
             redo the change on the workspace's current state (it settles the conflict \
             markers in its worktree; its next result is merged again); despawn_agent \
             {short} discards the change"
        ),
    }
}

/// The report in one paragraph, for a notice.
fn describe(r: &MergeReport) -> String {
    match r.state {
        MergeState::Merged if r.files.is_empty() => {
            "its change was already in the workspace".to_string()
        }
        MergeState::Merged => format!(
            "its change is merged into the workspace: {}",
            r.files.join(", ")
        ),
        MergeState::Conflict => format!(
            "its change conflicts with the workspace:\n- {}\n{}",
            r.conflicts.join("\n- "),
            r.note
        ),
        MergeState::Pending | MergeState::Undone => r.note.clone(),
    }
}

pub(super) fn conflict_file(c: &Conflict) -> ConflictFile {
    let range = |s: crate::isolation::LineSpan| LineRange {
        start: s.start as u64,
        count: s.count as u64,
    };
    ConflictFile {
        path: c.path.clone(),
        kind: c.kind.clone(),
        message: c.message.clone(),
        hunks: c
            .hunks
            .iter()
            .map(|h| ConflictHunk {
                workspace: range(h.workspace),
                worker: range(h.worker),
            })
            .collect(),
    }
}
