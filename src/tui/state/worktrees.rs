//! Workers' worktrees as the screen shows them: the size of each change and where it
//! stands (pending, merged, conflict), conflicts told in the supervisor's conversation,
//! and the last diff the user asked for.

use super::{EntryKind, SessionState};
use crate::protocol::{AgentId, ConflictFile, DiffStat, MergeReport, MergeState};
use std::path::Path;
use std::time::Instant;

impl SessionState {
    pub(super) fn stale_worktrees_removed(
        &mut self,
        id: AgentId,
        n: usize,
        kept: &[String],
        now: Instant,
    ) {
        self.agent_entry(id, now)
            .conversation
            .push(EntryKind::Notice(crate::protocol::stale_worktrees_message(
                n, kept,
            )));
    }

    pub(super) fn worktree_created(
        &mut self,
        id: AgentId,
        path: &Path,
        branch: &str,
        now: Instant,
    ) {
        let a = self.agent_entry(id, now);
        a.worktree = Some(path.to_path_buf());
        a.conversation.push(EntryKind::Notice(format!(
            "works in its own worktree {} (branch {branch}); its change is merged into the \
             workspace when its result is accepted",
            path.display()
        )));
    }

    pub(super) fn diff_stat(&mut self, id: AgentId, stat: DiffStat, now: Instant) {
        let a = self.agent_entry(id, now);
        if !stat.is_empty() {
            a.diff = Some(stat);
            a.merge = Some(MergeState::Pending);
        } else if a.merge != Some(MergeState::Merged) {
            // Its change was undone: nothing to show.
            a.diff = None;
            a.merge = None;
        }
    }

    pub(super) fn merged(&mut self, id: AgentId, files: &[String], now: Instant) {
        let a = self.agent_entry(id, now);
        a.merge = Some(MergeState::Merged);
        let line = if files.is_empty() {
            "its change was already in the workspace".to_string()
        } else {
            format!("merged into the workspace: {}", files.join(", "))
        };
        a.conversation.push(EntryKind::Notice(line));
    }

    /// A conflict is told where the user reads: the worker's conversation and its
    /// supervisor's.
    pub(super) fn merge_conflict(&mut self, id: AgentId, conflicts: &[ConflictFile], now: Instant) {
        let a = self.agent_entry(id, now);
        a.merge = Some(MergeState::Conflict);
        let who = format!("{} {}", a.role, id.short());
        let parent = a.parent;
        let list: Vec<String> = conflicts.iter().map(|c| format!("  {c}")).collect();
        let text = format!(
            "merge conflict: the change of {who} was not merged; the workspace is unchanged\n{}",
            list.join("\n")
        );
        a.conversation.push(EntryKind::Warning(text.clone()));
        if let Some(p) = parent {
            self.agent_entry(p, now)
                .conversation
                .push(EntryKind::Warning(text));
        }
        self.conflicts += 1;
    }

    pub(super) fn worktree_removed(
        &mut self,
        id: AgentId,
        discarded: bool,
        kept: Option<&str>,
        now: Instant,
    ) {
        let a = self.agent_entry(id, now);
        a.worktree = None;
        a.conversation.push(EntryKind::Notice(match kept {
            Some(branch) => format!(
                "worktree removed; its unmerged change is kept on branch {branch} \
                 (/merge {} merges it)",
                id.short()
            ),
            None if discarded => "worktree removed; its unmerged change was discarded".into(),
            None => "worktree removed".into(),
        }));
    }

    /// A change kept unmerged for failed checks marks the worker; the report joins its
    /// result's card.
    pub(super) fn merge_report(&mut self, id: AgentId, report: &MergeReport, now: Instant) {
        let a = self.agent_entry(id, now);
        if report.state == MergeState::FailedChecks {
            a.merge = Some(report.state);
        }
        if let Some(r) = &mut a.result {
            r.merge = Some(report.clone());
        }
    }
}
