//! `/undo` of one worker's merged change (`Op::UndoMerge`), and a merged worker's diff for
//! `Op::ShowDiff`: both read the worker's merges from the session's log, so they work as
//! well on what a resumed session did before. An undo never overwrites the user's own
//! edits unless told to (`force`): they are named first (`undo_refused`).

use super::IsolationPolicy;
use super::error::UndoFailed;
use crate::protocol::{AgentId, Event, EventKind, MergeRecord};
use crate::runtime::policies::checkpoint::rewind::read;
use crate::runtime::session::Session;
use std::sync::Arc;

/// `Op::ShowDiff`, off the ops loop: reading a large change must not hold other requests.
pub fn show_diff(session: &Arc<Session>, p: &IsolationPolicy, agent_id: AgentId) {
    let (session, p) = (session.clone(), p.clone());
    tokio::spawn(async move {
        let mut text = p.isolation.diff_text(&session.team, agent_id).await;
        // No change in a worktree (a placeholder, never a diff, starts with `(`): once
        // merged, its change is what the merge brought into the workspace.
        if text.starts_with('(')
            && let Some(merged) = merged_diff(&session, &p, agent_id).await
        {
            text = merged;
        }
        session.team.emit(agent_id, EventKind::Diff { text });
    });
}

/// `Op::UndoMerge`: takes the worker's merged change(s) back out, newest first.
pub fn undo_merge(session: &Arc<Session>, p: &IsolationPolicy, agent: AgentId, force: bool) {
    let (session, p) = (session.clone(), p.clone());
    tokio::spawn(async move {
        if let Err(e) = undo_now(&session, &p, agent, force).await {
            let message = e.to_string();
            session.team.emit(agent, EventKind::Error { message });
        }
    });
}

async fn undo_now(
    session: &Session,
    p: &IsolationPolicy,
    agent: AgentId,
    force: bool,
) -> Result<(), UndoFailed> {
    let log = (p.checkpoints.as_ref())
        .and_then(|c| c.log())
        .ok_or(UndoFailed::NoLog)?;
    session.team.events().on_disk().await;
    let records = merges(&read(log)?, agent);
    if records.is_empty() {
        return Err(UndoFailed::NoMerge(agent.short()));
    }
    let (mut files, mut undone) = (Vec::new(), false);
    for record in records.into_iter().rev() {
        match p.isolation.unmerge(record, force).await? {
            crate::isolation::UnmergeOutcome::Undone { files: f } => {
                undone = true;
                files.extend(f);
            }
            crate::isolation::UnmergeOutcome::Unchanged => {}
            crate::isolation::UnmergeOutcome::Conflict { conflicts } => {
                let conflicts = super::unmerge::conflict_files(&conflicts);
                session
                    .team
                    .emit(agent, EventKind::UndoRefused { conflicts });
                return Ok(());
            }
        }
    }
    if !undone {
        return Err(UndoFailed::NothingLeft(agent.short()));
    }
    files.sort();
    files.dedup();
    let top = p.isolation.repo_top();
    if let (Some(c), Some(top)) = (p.checkpoints.as_ref(), top) {
        let absolute: Vec<String> = (files.iter())
            .map(|f| top.join(f).to_string_lossy().into_owned())
            .collect();
        c.note_written(session.workspace.root(), &absolute).await;
    }
    session.team.emit(agent, EventKind::MergeUndone { files });
    Ok(())
}

/// What a worker's merges brought into the workspace (each record's `before`..`after`,
/// read from the log), for `d` once its worktree is gone or empty; `None` when it has no
/// merge (or the session keeps no log or repository to read it from).
async fn merged_diff(session: &Session, p: &IsolationPolicy, agent: AgentId) -> Option<String> {
    let log = p.checkpoints.as_ref().and_then(|c| c.log())?;
    let top = p.isolation.repo_top()?;
    session.team.events().on_disk().await;
    let records = merges(&read(log).ok()?, agent);
    if records.is_empty() {
        return None;
    }
    let diff = tokio::task::spawn_blocking(move || {
        let git = crate::isolation::Git::new(&top);
        let texts: Vec<String> = (records.iter())
            .map(|r| {
                let (from, to) = (r.before.as_str(), r.after.as_str());
                let args = [
                    "diff",
                    "--no-color",
                    "--no-ext-diff",
                    "--no-textconv",
                    from,
                    to,
                ];
                match git.text(&args) {
                    Ok(text) => text,
                    Err(e) => format!("(could not read its merge {to}: {e})"),
                }
            })
            .collect();
        texts.join("\n")
    });
    diff.await.ok()
}

/// The worker's merges since its last undo, in the order they were made.
fn merges(events: &[Event], agent: AgentId) -> Vec<MergeRecord> {
    let mut list = Vec::new();
    for e in events.iter().filter(|e| e.agent_id == agent) {
        // Only merges and undos change the list.
        if let EventKind::Merged {
            record: Some(r), ..
        } = &e.kind
        {
            list.push(r.clone());
        } else if matches!(e.kind, EventKind::MergeUndone { .. }) {
            list.clear();
        }
    }
    list
}
