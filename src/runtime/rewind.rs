//! The user taking back what squad did, in a running session: `/rewind` (the files and/or
//! the persona's conversation back to before one of the user's messages) and `/undo` of
//! one worker's merged change. Both read what to go back to from the session's log, so
//! they work as well on what a resumed session did before, and neither overwrites the
//! user's own edits unless told to (`force`): they are named first (`rewind_refused`,
//! `undo_refused`).

use super::session::Session;
use super::stop::stop;
use crate::checkpoint::{CheckpointStore, RewindWhat, points, rewind_events};
use crate::protocol::{AgentId, CheckpointSummary, Event, EventKind, MergeRecord, Op};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How long a rewind waits for the team to stop before it touches the files.
const SETTLE: Duration = Duration::from_secs(10);

/// `Op::ListCheckpoints`, `Op::Rewind` and `Op::UndoMerge`; each runs off the ops loop.
pub fn serve(session: &Arc<Session>, op: Op) {
    match op {
        Op::ListCheckpoints => list(session),
        Op::Rewind {
            message,
            files,
            conversation,
            force,
        } => {
            let what = RewindWhat {
                files,
                conversation,
            };
            rewind(session, message, what, force);
        }
        Op::UndoMerge { agent_id, force } => undo_merge(session, agent_id, force),
        _ => {}
    }
}

/// `Op::ListCheckpoints`: the user's messages, with what changed since each.
fn list(session: &Arc<Session>) {
    let session = session.clone();
    tokio::spawn(async move {
        let root = session.root();
        let listed = match parts(&session).await {
            Ok((events, store)) => tokio::task::spawn_blocking(move || summaries(&events, &store))
                .await
                .map_err(|e| e.to_string())
                .and_then(|listed| listed),
            Err(e) => Err(e),
        };
        match listed {
            Ok(list) => session.team.emit(root, EventKind::Checkpoints { list }),
            Err(message) => session.team.emit(root, EventKind::Error { message }),
        }
    });
}

fn summaries(events: &[Event], store: &CheckpointStore) -> Result<Vec<CheckpointSummary>, String> {
    let Some(root) = events.first().map(|e| e.agent_id) else {
        return Ok(Vec::new());
    };
    let points = points(events, root);
    let ids: Vec<_> = points.iter().filter_map(|p| p.files.clone().ok()).collect();
    let mut since = (store.changes_since_each(&ids))
        .map_err(|e| format!("cannot compare the workspace with its checkpoints: {e}"))?
        .into_iter();
    let mut list: Vec<CheckpointSummary> = points
        .into_iter()
        .map(|p| CheckpointSummary {
            message: p.message,
            text: p.text.lines().take(3).collect::<Vec<_>>().join("\n"),
            changes: p.files.and_then(|_| {
                let changed = since.next().unwrap_or(Ok(Vec::new()));
                changed.map_err(|e| format!("cannot compare: {e}"))
            }),
        })
        .collect();
    list.sort_by_key(|s| s.message);
    Ok(list)
}

/// The log's events and the workspace's checkpoints, or why there are none.
async fn parts(session: &Session) -> Result<(Vec<Event>, Arc<CheckpointStore>), String> {
    let checkpoints = (session.checkpoints.as_ref()).ok_or(
        "this session keeps no checkpoints (it has no data dir), so there is nothing to rewind",
    )?;
    let log = checkpoints
        .log()
        .ok_or("this session keeps no log to rewind")?;
    let store = checkpoints.store().await?;
    // What was said last (a merge, an undo) must be in the log read back.
    session.team.events().on_disk().await;
    Ok((read(log)?, store))
}

fn read(log: PathBuf) -> Result<Vec<Event>, String> {
    crate::session::read_events(&log)
        .map(|(events, _)| events)
        .map_err(|e| format!("cannot read the session log {}: {e}", log.display()))
}

/// `Op::Rewind`: stops the team, then puts back what was asked.
fn rewind(session: &Arc<Session>, message: u32, what: RewindWhat, force: bool) {
    let session = session.clone();
    tokio::spawn(async move {
        let root = session.root();
        if let Err(message) = rewind_now(&session, message, what, force).await {
            session.team.emit(root, EventKind::Error { message });
        }
        session.team.announce_if_idle();
    });
}

async fn rewind_now(
    session: &Arc<Session>,
    message: u32,
    what: RewindWhat,
    force: bool,
) -> Result<(), String> {
    let (events, store) = parts(session).await?;
    quiet(session).await?;
    let root = session.root();
    let (done, kinds) = tokio::task::spawn_blocking(move || {
        rewind_events(&events, root, Some(&store), message, what, force)
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(|e| e.to_string())?;
    if kinds.is_empty() {
        let conflicts = done.files.map(|f| f.conflicts).unwrap_or_default();
        let refused = EventKind::RewindRefused { message, conflicts };
        session.team.emit(root, refused);
        return Ok(());
    }
    if let (Some(c), Some(before)) = (&session.checkpoints, done.before) {
        c.numbered(before);
    }
    for kind in kinds {
        if let EventKind::Rewound {
            history: Some(history),
            ..
        } = &kind
        {
            session.team.restore_history(root, history.clone());
        }
        session.team.emit(root, kind);
    }
    Ok(())
}

/// Stops whatever runs and waits for the team to rest: files are put back only when no
/// tool of squad's can write them any more.
async fn quiet(session: &Session) -> Result<(), String> {
    let busy = |s: &Session| !s.team.with_status_where(|st| !st.is_idle()).is_empty();
    if !busy(session) {
        return Ok(());
    }
    // Every status change bumps the team's version: wait on it, not on a clock.
    let mut changes = session.team.subscribe();
    stop(session);
    let rested = async {
        while busy(session) {
            if changes.changed().await.is_err() {
                break;
            }
        }
    };
    tokio::time::timeout(SETTLE, rested).await.map_err(|_| {
        format!(
            "the team did not stop within {}s; nothing was rewound, try again",
            SETTLE.as_secs()
        )
    })
}

/// `Op::UndoMerge`: takes the worker's merged change(s) back out, newest first.
fn undo_merge(session: &Arc<Session>, agent: AgentId, force: bool) {
    let session = session.clone();
    tokio::spawn(async move {
        if let Err(message) = undo_now(&session, agent, force).await {
            session.team.emit(agent, EventKind::Error { message });
        }
    });
}

async fn undo_now(session: &Session, agent: AgentId, force: bool) -> Result<(), String> {
    let log = (session.checkpoints.as_ref())
        .and_then(|c| c.log())
        .ok_or("this session keeps no log, so it knows no merge to undo")?;
    session.team.events().on_disk().await;
    let records = merges(&read(log)?, agent);
    if records.is_empty() {
        return Err(format!(
            "worker {} has no merged change to undo (none, or it was undone)",
            agent.short()
        ));
    }
    let (mut files, mut undone) = (Vec::new(), false);
    for record in records.into_iter().rev() {
        match session.isolation.unmerge(record, force).await? {
            crate::isolation::UnmergeOutcome::Undone { files: f } => {
                undone = true;
                files.extend(f);
            }
            crate::isolation::UnmergeOutcome::Unchanged => {}
            crate::isolation::UnmergeOutcome::Conflict { conflicts } => {
                let conflicts = super::policies::isolation::unmerge::conflict_files(&conflicts);
                session
                    .team
                    .emit(agent, EventKind::UndoRefused { conflicts });
                return Ok(());
            }
        }
    }
    if !undone {
        return Err(format!(
            "nothing of worker {}'s merged change is left in the workspace: nothing to undo",
            agent.short()
        ));
    }
    files.sort();
    files.dedup();
    let top = session.isolation.repo_top();
    if let (Some(c), Some(top)) = (session.checkpoints.as_ref(), top) {
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
pub async fn merged_diff(session: &Session, agent: AgentId) -> Option<String> {
    let log = session.checkpoints.as_ref().and_then(|c| c.log())?;
    let top = session.isolation.repo_top()?;
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
