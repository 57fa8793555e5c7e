//! Bringing an isolated worker's change into the workspace when its result goes up:
//! through the merge queue (one at a time, in the order results come), told to the front
//! ends (`merged`, `merge_conflict`) and to its supervisor with the result.

use super::worker::WorkerIsolation;
use crate::isolation::{Conflict, MergeOutcome};
use crate::protocol::{
    AgentId, AgentResult, ConflictFile, ConflictHunk, EventKind, LineRange, MergeReport,
    MergeState, ResultStatus, TurnEnd, Verdict,
};
use crate::runtime::inbox::Notice;
use crate::runtime::team::Team;

/// A worker's turn ended (`end`). When it has a worktree of its own and its result is
/// accepted, its change is merged into the workspace; a conflict changes nothing there.
/// Accepted: a returned result that is no failure and passed its checks, or, where checks
/// are off for its role (`checked` false), an answer too. Anything else keeps the change
/// unmerged on its branch (`kept.rs`). Its supervisor reads what happened in the
/// result's `merge` (or, for a worker that answered without `return_results`, in a
/// notice beside its answer). Returns the files a merge wrote in the workspace, as
/// absolute paths.
impl WorkerIsolation {
    pub async fn settle(
        &self,
        team: &Team,
        agent: AgentId,
        end: TurnEnd,
        checked: bool,
    ) -> Vec<String> {
        settle(self, team, agent, end, checked).await
    }
}

async fn settle(
    iso: &WorkerIsolation,
    team: &Team,
    agent: AgentId,
    end: TurnEnd,
    checked: bool,
) -> Vec<String> {
    iso.forget_base(agent);
    let Some(worktrees) = iso.worktrees.clone().filter(|_| iso.has_own(agent)) else {
        return Vec::new();
    };
    if let Some(p) = crate::sync::lock(&iso.own).get_mut(&agent) {
        p.settled = true;
    }
    let result = team.result(agent).filter(|_| end == TurnEnd::Returned);
    let verdict = iso.last_verdict(agent);
    let refused = refusal(end, result.as_ref(), checked, verdict.as_ref());
    let report = match refused {
        Some(why) if iso.state(agent).is_some_and(MergeState::unmerged) => {
            Some(iso.keep(team, agent, &why).await)
        }
        Some(_) => None,
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
        None => tell_supervisor(team, agent, &describe(&report)),
    }
    merged
}

/// Why the worker's change is not merged, if it is not: only an accepted result is.
fn refusal(
    end: TurnEnd,
    result: Option<&AgentResult>,
    checked: bool,
    verdict: Option<&Verdict>,
) -> Option<String> {
    let failed = verdict.filter(|v| !v.passed);
    match (end, result) {
        (TurnEnd::Returned, Some(r)) if r.status == ResultStatus::Failure => {
            Some("its result says it failed".into())
        }
        (TurnEnd::Returned, Some(r)) => (r.verification.as_ref())
            .filter(|v| !v.passed)
            .map(|v| format!("its last result failed {}", findings(v))),
        (TurnEnd::Returned, None) => None,
        (TurnEnd::Completed, _) if let Some(v) = failed => Some(format!(
            "its result failed {}; it answered the correction in words without returning a \
             result again",
            findings(v)
        )),
        (TurnEnd::Completed, _) if checked => Some(
            "it answered in words without returning a result, so nothing checked its change".into(),
        ),
        (TurnEnd::Completed, _) => None,
        (TurnEnd::Error, _) => Some("it failed with an error".into()),
        (TurnEnd::MaxIterations, _) => Some("it reached its iteration limit".into()),
        _ => Some("its turn was cut short".into()),
    }
}

/// What a failed verdict found, in a line: each error's check and its first line.
fn findings(v: &Verdict) -> String {
    let each: Vec<String> = (v.failures.iter())
        .map(|f| {
            let first = f.message.lines().next().unwrap_or_default();
            format!("[{}] {}", f.rule, crate::text::clip(first, 160))
        })
        .collect();
    match each.is_empty() {
        true => "its checks".to_string(),
        false => format!("its checks: {}", each.join("; ")),
    }
}

/// The files a merge wrote, as absolute paths; none when it did not merge.
pub(super) fn merged_paths(
    worktrees: &crate::isolation::Worktrees,
    report: &MergeReport,
) -> Vec<String> {
    if report.state != MergeState::Merged {
        return Vec::new();
    }
    let top = &worktrees.repo().top;
    (report.files.iter())
        .map(|f| top.join(f).to_string_lossy().into_owned())
        .collect()
}

/// Merges the worker's change; `None` when it changed nothing.
pub(super) async fn merge(
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
            Some(merged(team, agent, files, record))
        }
        MergeOutcome::Conflict { conflicts } => Some(conflicted(team, iso, agent, &conflicts)),
    }
}

/// A merge that went through (from a worktree or a kept branch): told to the front ends,
/// and its report.
pub(super) fn merged(
    team: &Team,
    agent: AgentId,
    files: Vec<String>,
    record: crate::isolation::MergeRecord,
) -> MergeReport {
    team.emit(
        agent,
        EventKind::Merged {
            files: files.clone(),
            record: Some(record),
        },
    );
    MergeReport {
        state: MergeState::Merged,
        files,
        conflicts: Vec::new(),
        note: String::new(),
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
             have it return its result again (despawn_agent {short} keeps the change \
             unmerged on branch {}, for the user)",
            super::worker::branch_of(agent)
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
    // Which task and worker held which of its files, where tasks declared paths.
    let paths: Vec<String> = files.iter().map(|f| f.path.clone()).collect();
    let leases = (iso.board.get()).and_then(|b| b.leases_on(agent, &paths));
    team.emit(agent, EventKind::MergeConflict { conflicts: files });
    MergeReport {
        state: MergeState::Conflict,
        files: Vec::new(),
        conflicts: listed,
        note: format!(
            "{}nothing of its change reached the workspace. speak_to_agent {short} has it \
             redo the change on the workspace's current state (it settles the conflict \
             markers in its worktree; its next result is merged again); despawn_agent \
             {short} keeps the change unmerged on branch {}, for the user",
            leases.map(|l| format!("{l} ")).unwrap_or_default(),
            super::worker::branch_of(agent)
        ),
    }
}

/// The report in one paragraph, for a notice.
pub(super) fn describe(r: &MergeReport) -> String {
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
        MergeState::Pending | MergeState::Undone | MergeState::FailedChecks => r.note.clone(),
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

/// A notice about `agent`'s change for its supervisor.
pub(super) fn tell_supervisor(team: &Team, agent: AgentId, what: &str) {
    if let Some(parent) = team.parent(agent) {
        let role = team.role(agent).unwrap_or_default();
        let text = format!("Worker {} ({role}): {what}", agent.short());
        team.post_notice(
            parent,
            Notice::new(crate::protocol::Priority::Normal, text),
            None,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Finding, Severity};

    fn result(status: ResultStatus, passed: Option<bool>) -> AgentResult {
        AgentResult {
            completed_at: None,
            status,
            summary: "s".into(),
            artifacts: vec![],
            known_issues: vec![],
            verification: passed.map(verdict),
            merge: None,
        }
    }

    fn verdict(passed: bool) -> Verdict {
        let failed = Finding {
            rule: "tests".into(),
            severity: Severity::Error,
            message: "`cargo test` exited 1\nmore output".into(),
            fix: String::new(),
        };
        Verdict::of(2, 3, if passed { vec![] } else { vec![failed] })
    }

    #[test]
    fn only_a_passed_result_merges_where_checks_are_on_and_an_answer_too_where_they_are_off() {
        use ResultStatus::{Failure, Success};
        let ok = result(Success, Some(true));
        let refused = |end, r: Option<&AgentResult>, checked, v: Option<&Verdict>| {
            refusal(end, r, checked, v)
        };
        assert_eq!(refused(TurnEnd::Returned, Some(&ok), true, None), None);
        // Nothing checked (checks off, or nothing to check): as before.
        let unchecked = result(Success, None);
        assert_eq!(
            refused(TurnEnd::Returned, Some(&unchecked), false, None),
            None
        );
        assert_eq!(refused(TurnEnd::Completed, None, false, None), None);
        // Out of corrections, the failed verdict says why.
        let spent = result(Success, Some(false));
        let why = refused(TurnEnd::Returned, Some(&spent), true, None).unwrap();
        assert!(why.contains("[tests] `cargo test` exited 1"), "{why}");
        assert!(!why.contains("more output"), "{why}");
        assert!(refused(TurnEnd::Returned, Some(&result(Failure, None)), false, None).is_some());
        // A correction answered in words, or an answer with checks on.
        let failed = verdict(false);
        let why = refused(TurnEnd::Completed, None, true, Some(&failed)).unwrap();
        assert!(why.contains("[tests]") && why.contains("in words"), "{why}");
        assert!(refused(TurnEnd::Completed, None, true, None).is_some());
        assert!(refused(TurnEnd::Completed, None, true, Some(&verdict(true))).is_some());
        // Every other end, checks on or off.
        for end in [
            TurnEnd::Error,
            TurnEnd::MaxIterations,
            TurnEnd::Interrupted,
            TurnEnd::MaxTokens,
        ] {
            assert!(refused(end, None, false, None).is_some(), "{end:?}");
        }
    }
}
