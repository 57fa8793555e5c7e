use crate::protocol::{AgentId, Event, EventKind};
use crate::session::SessionLog;
use std::sync::Mutex;
use tokio::sync::mpsc;

/// Numbers events, writes each to the session log, then hands it to the front end.
/// One lock covers numbering and writing so the log's order is the `seq` order.
pub struct EventSink {
    inner: Mutex<Inner>,
    tx: mpsc::UnboundedSender<Event>,
}

struct Inner {
    seq: u64,
    log: Option<SessionLog>,
    /// Set once a log write failed, so the user is told once, not per event.
    log_failed: bool,
}

impl EventSink {
    pub fn new(log: Option<SessionLog>, first_seq: u64, tx: mpsc::UnboundedSender<Event>) -> Self {
        Self {
            inner: Mutex::new(Inner {
                seq: first_seq,
                log,
                log_failed: false,
            }),
            tx,
        }
    }

    pub fn emit(&self, agent_id: AgentId, kind: EventKind) {
        let mut warn = None;
        let event = {
            let mut inner = match self.inner.lock() {
                Ok(g) => g,
                Err(poisoned) => poisoned.into_inner(),
            };
            inner.seq += 1;
            let event = Event {
                seq: inner.seq,
                agent_id,
                kind,
            };
            let failed_before = inner.log_failed;
            // Streamed text is live only: the `item_added` after it is the durable record,
            // so the log is written once per answer, not once per token.
            let durable = !matches!(event.kind, EventKind::TextDelta { .. });
            if durable
                && let Some(log) = inner.log.as_mut()
                && let Err(e) = log.append(&event)
                && !failed_before
            {
                tracing::error!("session log write failed: {e}");
                warn = Some(format!(
                    "cannot write the session log {}: {e}; this session will not be resumable",
                    log.path().display()
                ));
            }
            if warn.is_some() {
                inner.log_failed = true;
            }
            event
        };
        // A front end that went away is not the core's problem: keep working, keep logging.
        let _ = self.tx.send(event);
        if let Some(message) = warn {
            self.emit(agent_id, EventKind::Error { message });
        }
    }

    /// Sends an already-numbered event (a replay of the log) to the front end only.
    pub fn forward(&self, event: Event) {
        let _ = self.tx.send(event);
    }
}
