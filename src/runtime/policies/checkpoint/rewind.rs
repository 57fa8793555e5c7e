//! The user taking back what squad did, in a running session: `/rewind` (the files and/or
//! the persona's conversation back to before one of the user's messages), read from the
//! session's log, so it works as well on what a resumed session did before, and it does
//! not overwrite the user's own edits unless told to (`force`): they are named first
//! (`rewind_refused`). `/undo` of a worker's merge is isolation's (`isolation/undo.rs`).

use super::CheckpointPolicy;
use super::error::{LogUnread, RewindFailed};
use crate::checkpoint::{CheckpointStore, RewindWhat, points, rewind_events};
use crate::protocol::{CheckpointSummary, Event, EventKind, Op};
use crate::runtime::policies::pause::stop::stop;
use crate::runtime::session::Session;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How long a rewind waits for the team to stop before it touches the files.
const SETTLE: Duration = Duration::from_secs(10);

/// `Op::ListCheckpoints` and `Op::Rewind`; each runs off the ops loop.
pub fn serve(session: &Arc<Session>, p: &CheckpointPolicy, op: &Op) {
    match op {
        Op::ListCheckpoints => list(session, p),
        Op::Rewind {
            message,
            files,
            conversation,
            force,
        } => {
            let what = RewindWhat {
                files: *files,
                conversation: *conversation,
            };
            rewind(session, p, *message, what, *force);
        }
        _ => {}
    }
}

/// `Op::ListCheckpoints`: the user's messages, with what changed since each.
fn list(session: &Arc<Session>, p: &CheckpointPolicy) {
    let (session, p) = (session.clone(), p.clone());
    tokio::spawn(async move {
        let root = session.root();
        let listed = match parts(&session, &p).await {
            Ok((events, store)) => tokio::task::spawn_blocking(move || summaries(&events, &store))
                .await
                .map_err(RewindFailed::from)
                .and_then(|listed| listed),
            Err(e) => Err(e),
        };
        match listed {
            Ok(list) => session.team.emit(root, EventKind::Checkpoints { list }),
            Err(e) => {
                let message = e.to_string();
                session.team.emit(root, EventKind::Error { message });
            }
        }
    });
}

fn summaries(
    events: &[Event],
    store: &CheckpointStore,
) -> Result<Vec<CheckpointSummary>, RewindFailed> {
    let Some(root) = events.first().map(|e| e.agent_id) else {
        return Ok(Vec::new());
    };
    let points = points(events, root);
    let ids: Vec<_> = points.iter().filter_map(|p| p.files.clone().ok()).collect();
    let mut since = (store.changes_since_each(&ids))
        .map_err(RewindFailed::Compare)?
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
async fn parts(
    session: &Session,
    p: &CheckpointPolicy,
) -> Result<(Vec<Event>, Arc<CheckpointStore>), RewindFailed> {
    let checkpoints = (p.checkpoints.as_ref()).ok_or(RewindFailed::NoCheckpoints)?;
    let log = checkpoints.log().ok_or(RewindFailed::NoLog)?;
    let store = checkpoints.store().await?;
    // What was said last (a merge, an undo) must be in the log read back.
    session.team.events().on_disk().await;
    Ok((read(log)?, store))
}

pub fn read(log: PathBuf) -> Result<Vec<Event>, LogUnread> {
    match crate::session::read_events(&log) {
        Ok((events, _)) => Ok(events),
        Err(source) => Err(LogUnread { path: log, source }),
    }
}

/// `Op::Rewind`: stops the team, then puts back what was asked.
fn rewind(
    session: &Arc<Session>,
    p: &CheckpointPolicy,
    message: u32,
    what: RewindWhat,
    force: bool,
) {
    let (session, p) = (session.clone(), p.clone());
    tokio::spawn(async move {
        let root = session.root();
        if let Err(e) = rewind_now(&session, &p, message, what, force).await {
            let message = e.to_string();
            session.team.emit(root, EventKind::Error { message });
        }
        session.team.announce_if_idle();
    });
}

async fn rewind_now(
    session: &Arc<Session>,
    p: &CheckpointPolicy,
    message: u32,
    what: RewindWhat,
    force: bool,
) -> Result<(), RewindFailed> {
    let (events, store) = parts(session, p).await?;
    quiet(session, p).await?;
    let root = session.root();
    let (done, kinds) = tokio::task::spawn_blocking(move || {
        rewind_events(&events, root, Some(&store), message, what, force)
    })
    .await??;
    if kinds.is_empty() {
        let conflicts = done.files.map(|f| f.conflicts).unwrap_or_default();
        let refused = EventKind::RewindRefused { message, conflicts };
        session.team.emit(root, refused);
        return Ok(());
    }
    if let (Some(c), Some(before)) = (&p.checkpoints, done.before) {
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
async fn quiet(session: &Session, p: &CheckpointPolicy) -> Result<(), RewindFailed> {
    let busy = |s: &Session| !s.team.with_status_where(|st| !st.is_idle()).is_empty();
    if !busy(session) {
        return Ok(());
    }
    // Every status change bumps the team's version: wait on it, not on a clock.
    let mut changes = session.team.subscribe();
    stop(&session.team, &p.pause);
    let rested = async {
        while busy(session) {
            if changes.changed().await.is_err() {
                break;
            }
        }
    };
    (tokio::time::timeout(SETTLE, rested).await)
        .map_err(|_| RewindFailed::NotStopped(SETTLE.as_secs()))
}
