//! Rewinding a session from its log, with no session running (`squad exec --resume ID
//! --rewind N`): the files back to their checkpoint before the user's Nth message, and/or
//! the persona's conversation as it was then. The rewind is appended to the log as a
//! `rewound` event, which a resume replays like a compaction.

use super::{CheckpointError, CheckpointId, CheckpointStore, Restored};
use crate::protocol::{AgentId, Event, EventKind, HistoryItem};
use crate::session::{read_events, replay};
use std::io::Write;
use std::path::{Path, PathBuf};

/// What a rewind puts back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RewindWhat {
    pub files: bool,
    pub conversation: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum RewindError {
    #[error("cannot read the session log {path}: {source}")]
    Log {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the session log {0} has no persona or no workspace")]
    Foreign(PathBuf),
    #[error(
        "this session has no user message {asked} with a checkpoint (it has {have}: 1 to {have})"
    )]
    NoSuchMessage { asked: u32, have: u32 },
    #[error("no checkpoint of the files was taken before message {message}: {why}")]
    NoFiles { message: u32, why: String },
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
}

/// What a rewind did. With `files.refused()` nothing at all was changed.
#[derive(Debug)]
pub struct Rewound {
    pub message: u32,
    pub files: Option<Restored>,
    /// The persona's history items kept, when the conversation was rewound.
    pub conversation: Option<usize>,
    /// The number the state just before the rewind is listed under (none when refused).
    pub before: Option<u32>,
}

/// A user message the session can go back to, as its log has it.
#[derive(Clone, Debug)]
pub struct Point {
    pub message: u32,
    /// The index of its `checkpoint_started` in the events: the conversation before it.
    pub started: usize,
    /// What the user wrote.
    pub text: String,
    /// The files' checkpoint, or why there is none.
    pub files: Result<CheckpointId, String>,
}

/// The persona's messages with a checkpoint, in the order they came.
pub fn points(events: &[Event], root: AgentId) -> Vec<Point> {
    let mut list: Vec<Point> = Vec::new();
    for (i, e) in events.iter().enumerate() {
        // Only checkpoints and the persona's messages make the list.
        if let EventKind::CheckpointStarted { message, label, .. } = &e.kind
            && e.agent_id == root
        {
            list.push(Point {
                message: *message,
                started: i,
                text: label.clone().unwrap_or_default(),
                files: Err("the session stopped before it was taken".into()),
            });
        } else if let EventKind::CheckpointTaken {
            message,
            checkpoint,
            error,
            ..
        } = &e.kind
        {
            if let Some(p) = list.iter_mut().rev().find(|p| p.message == *message) {
                p.files = match (checkpoint, error) {
                    (Some(id), _) => Ok(CheckpointId(id.clone())),
                    (None, why) => Err(why.clone().unwrap_or_else(|| "it failed".into())),
                };
            }
        } else if let EventKind::ItemAdded {
            item: HistoryItem::User { text },
        } = &e.kind
            && e.agent_id == root
            && let Some(p) = list.last_mut().filter(|p| p.text.is_empty())
        {
            p.text = text.clone();
        }
    }
    list
}

/// Rewinds the session logged at `log` to before the user's `message`th message.
pub fn rewind(
    log: &Path,
    data: &Path,
    message: u32,
    what: RewindWhat,
    force: bool,
) -> Result<Rewound, RewindError> {
    let (events, _) = read_events(log).map_err(|source| RewindError::Log {
        path: log.to_path_buf(),
        source,
    })?;
    let session = replay(&events).ok_or_else(|| RewindError::Foreign(log.to_path_buf()))?;
    let workspace = (session.workspace.clone()).ok_or_else(|| RewindError::Foreign(log.into()))?;
    let root = session.root;
    let store = what
        .files
        .then(|| CheckpointStore::open(data, &workspace))
        .transpose()?;
    let (done, kinds) = rewind_events(&events, root, store.as_ref(), message, what, force)?;
    for (k, kind) in kinds.into_iter().enumerate() {
        append(log, session.last_seq + 1 + k as u64, root, kind)?;
    }
    Ok(done)
}

/// Rewinds to before `message` as `events` tell the session: the files (in `store`) and
/// the conversation. Returns what was done and the events to log: the checkpoint of the
/// state before the rewind (`checkpoint_started`, `checkpoint_taken`), then `rewound`;
/// none when the files were refused (nothing changed).
pub fn rewind_events(
    events: &[Event],
    root: AgentId,
    store: Option<&CheckpointStore>,
    message: u32,
    what: RewindWhat,
    force: bool,
) -> Result<(Rewound, Vec<EventKind>), RewindError> {
    let all = points(events, root);
    // The state before the rewind is listed after every checkpoint so far.
    let next = all.iter().map(|p| p.message).max().unwrap_or(0) + 1;
    let Some(point) = all.iter().find(|p| p.message == message) else {
        let have = all.iter().map(|p| p.message).max().unwrap_or(0);
        return Err(RewindError::NoSuchMessage {
            asked: message,
            have,
        });
    };
    let mut done = Rewound {
        message,
        files: None,
        conversation: None,
        before: None,
    };
    if let (true, Some(store)) = (what.files, store) {
        let id = (point.files.clone()).map_err(|why| RewindError::NoFiles { message, why })?;
        let restored = store.restore(&id, force)?;
        let refused = restored.refused();
        done.files = Some(restored);
        if refused {
            return Ok((done, Vec::new()));
        }
    }
    let history = what
        .conversation
        .then(|| history_before(&events[..point.started], root));
    done.conversation = history.as_ref().map(Vec::len);
    let (files, removed) = done
        .files
        .as_ref()
        .map_or_else(Default::default, |r| (r.written.clone(), r.removed.clone()));
    let rewound = EventKind::Rewound {
        message,
        files,
        removed,
        history,
    };
    let before = done.files.as_ref().and_then(|r| r.undo.clone());
    let mut kinds = before_rewind(events, root, message, next, before);
    kinds.push(rewound);
    done.before = Some(next);
    Ok((done, kinds))
}

/// The checkpoint of the state just before a rewind: the conversation as it stands and,
/// when files were put back, the files as they were.
fn before_rewind(
    events: &[Event],
    root: AgentId,
    message: u32,
    next: u32,
    files: Option<CheckpointId>,
) -> Vec<EventKind> {
    let started = EventKind::CheckpointStarted {
        message: next,
        history_len: history_before(events, root).len(),
        label: Some(format!("(before the rewind to message {message})")),
    };
    let (checkpoint, error) = match files {
        Some(id) => (Some(id.0), None),
        None => (None, Some("that rewind left the files as they were".into())),
    };
    let taken = EventKind::CheckpointTaken {
        message: next,
        checkpoint,
        error,
        millis: 0,
    };
    vec![started, taken]
}

/// The persona's history as the log had it before `events` ended.
pub fn history_before(events: &[Event], root: AgentId) -> Vec<HistoryItem> {
    replay(events)
        .and_then(|s| s.agents.into_iter().find(|a| a.id == root))
        .map(|a| a.history)
        .unwrap_or_default()
}

fn append(log: &Path, seq: u64, agent_id: AgentId, kind: EventKind) -> Result<(), RewindError> {
    let ts = chrono::Utc::now().timestamp_millis();
    let event = Event {
        seq,
        ts: u64::try_from(ts).unwrap_or(0),
        agent_id,
        kind,
    };
    let line = serde_json::to_string(&event).map_err(std::io::Error::other);
    crate::session::SessionLog::open(log)
        .and_then(|l| line.map(|line| (l, line)))
        .and_then(|(l, line)| writeln!(l.into_file(), "{line}"))
        .map_err(|source| RewindError::Log {
            path: log.to_path_buf(),
            source,
        })
}
