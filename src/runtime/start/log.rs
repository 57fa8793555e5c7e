//! The session's log at start: a new one, or the old one of the session being resumed
//! (read back, replayed, and sent to the front end first when it redraws from it).

use super::RuntimeError;
use crate::protocol::{AgentId, Event};
use crate::runtime::events::EventSink;
use crate::runtime::handle::SessionOptions;
use crate::session::{LogWriter, ReplayedSession, SessionLog, read_events, replay};
use std::path::PathBuf;
use tokio::sync::mpsc;

/// A session read back from its log.
pub struct Resumed {
    pub events: Vec<Event>,
    pub replayed: ReplayedSession,
}

/// The log the session writes to, and who it is.
pub struct Opened {
    pub resumed: Option<Resumed>,
    pub session_id: String,
    pub root: AgentId,
    /// The last `seq` of the old log (0 for a new session).
    pub first_seq: u64,
    pub log_path: Option<PathBuf>,
}

/// Opens the log (`opts.store`; none: no log, no resume) and the sink every event goes
/// through.
pub fn open(
    opts: &SessionOptions,
    events: mpsc::UnboundedSender<Event>,
) -> Result<(Opened, EventSink), RuntimeError> {
    let resumed = read_back(opts)?;
    let (session_id, root, first_seq) = match &resumed {
        Some((_, r)) => (
            r.replayed.session_id.clone(),
            r.replayed.root,
            r.replayed.last_seq,
        ),
        None => (new_session_id(), AgentId::new(), 0),
    };
    let log_path = opts.store.as_ref().map(|s| match &resumed {
        Some((path, _)) => path.clone(),
        None => s.path_for(&session_id),
    });
    let log = match &log_path {
        Some(p) => Some(
            SessionLog::open(p)
                .and_then(LogWriter::spawn)
                .map_err(|source| RuntimeError::Log {
                    path: p.clone(),
                    source,
                })?,
        ),
        None => None,
    };
    let sink = EventSink::new(log, first_seq, events);
    let resumed = resumed.map(|(_, r)| r);
    if let Some(r) = &resumed {
        sink.observe_replayed(&r.events);
        if opts.replay_to_frontend {
            for ev in &r.events {
                sink.forward(ev.clone());
            }
        }
    }
    let opened = Opened {
        resumed,
        session_id,
        root,
        first_seq,
        log_path,
    };
    Ok((opened, sink))
}

/// The session `opts.resume` names, read back from its log.
fn read_back(opts: &SessionOptions) -> Result<Option<(PathBuf, Resumed)>, RuntimeError> {
    let (Some(which), Some(store)) = (&opts.resume, &opts.store) else {
        return Ok(None);
    };
    let meta = store.resolve(which, &opts.workspace)?;
    let (events, _skipped) = read_events(&meta.path).map_err(|source| RuntimeError::Log {
        path: meta.path.clone(),
        source,
    })?;
    let replayed = replay(&events).ok_or_else(|| RuntimeError::EmptyLog(meta.path.clone()))?;
    Ok(Some((meta.path, Resumed { events, replayed })))
}

fn new_session_id() -> String {
    format!(
        "{}-{}",
        chrono::Utc::now().format("%Y%m%d-%H%M%S"),
        &uuid::Uuid::new_v4().simple().to_string()[..6]
    )
}
