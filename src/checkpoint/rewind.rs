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
    let started = events.iter().position(|e| {
        e.agent_id == root
            && matches!(e.kind, EventKind::CheckpointStarted { message: m, .. } if m == message)
    });
    let Some(started) = started else {
        return Err(RewindError::NoSuchMessage {
            asked: message,
            have: messages(&events, root),
        });
    };
    let mut done = Rewound {
        message,
        files: None,
        conversation: None,
    };
    if what.files {
        let id = files_checkpoint(&events, message)?;
        let store = CheckpointStore::open(data, &workspace)?;
        let restored = store.restore(&id, force)?;
        let refused = restored.refused();
        done.files = Some(restored);
        if refused {
            return Ok(done);
        }
    }
    let history = what
        .conversation
        .then(|| history_before(&events[..started], root));
    done.conversation = history.as_ref().map(Vec::len);
    let (files, removed) = done
        .files
        .as_ref()
        .map_or_else(Default::default, |r| (r.written.clone(), r.removed.clone()));
    let kind = EventKind::Rewound {
        message,
        files,
        removed,
        history,
    };
    append(log, session.last_seq + 1, root, kind)?;
    Ok(done)
}

/// The highest message number with a checkpoint.
fn messages(events: &[Event], root: AgentId) -> u32 {
    let numbers = events.iter().filter(|e| e.agent_id == root);
    let numbers = numbers.filter_map(|e| match e.kind {
        EventKind::CheckpointStarted { message, .. } => Some(message),
        _ => None,
    });
    numbers.max().unwrap_or(0)
}

fn files_checkpoint(events: &[Event], message: u32) -> Result<CheckpointId, RewindError> {
    let taken = events.iter().find_map(|e| match &e.kind {
        EventKind::CheckpointTaken {
            message: m,
            checkpoint,
            error,
            ..
        } if *m == message => Some((checkpoint.clone(), error.clone())),
        _ => None,
    });
    match taken {
        Some((Some(id), _)) => Ok(CheckpointId(id)),
        Some((None, why)) => Err(RewindError::NoFiles {
            message,
            why: why.unwrap_or_else(|| "it failed".into()),
        }),
        None => Err(RewindError::NoFiles {
            message,
            why: "the session stopped before it was done".into(),
        }),
    }
}

/// The persona's history as the log had it before `events` ended.
fn history_before(events: &[Event], root: AgentId) -> Vec<HistoryItem> {
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
