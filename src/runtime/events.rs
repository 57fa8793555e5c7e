use crate::protocol::{AgentId, Event, EventKind, TaskMetrics, TaskTally};
use crate::session::LogWriter;
use std::sync::Mutex;
use std::time::Instant;
use tokio::sync::mpsc;

/// Numbers events, queues the durable ones for the session log, then hands each to the
/// front end. One lock covers numbering and queueing so the log's order is the `seq`
/// order; the disk write itself happens on the log's own thread ([`LogWriter`]). Task
/// figures are folded from the same events, so they count what the log tells.
pub struct EventSink {
    inner: Mutex<Inner>,
    tx: mpsc::UnboundedSender<Event>,
}

struct Inner {
    seq: u64,
    log: Option<LogWriter>,
    tasks: TaskTally,
}

impl EventSink {
    pub fn new(log: Option<LogWriter>, first_seq: u64, tx: mpsc::UnboundedSender<Event>) -> Self {
        Self {
            inner: Mutex::new(Inner {
                seq: first_seq,
                log,
                tasks: TaskTally::default(),
            }),
            tx,
        }
    }

    pub fn emit(&self, agent_id: AgentId, kind: EventKind) {
        self.record(agent_id, kind, false);
    }

    /// Emits the session's last event once everything before it, and it, is on disk, so
    /// a front end that exits on it leaves a complete log behind.
    pub fn emit_last(&self, agent_id: AgentId, kind: EventKind) {
        self.record(agent_id, kind, true);
    }

    /// Numbers the event, queues it for the log (and with `sync` waits until it is on
    /// disk), then sends it to the front end.
    fn record(&self, agent_id: AgentId, kind: EventKind, sync: bool) {
        let (event, warn) = {
            let mut inner = self.lock();
            inner.seq += 1;
            let event = Event {
                seq: inner.seq,
                agent_id,
                kind,
            };
            inner.tasks.observe(&event, Some(Instant::now()));
            let mut warn = None;
            if let Some(log) = &inner.log {
                if !event.kind.is_live_only() {
                    log.push(&event);
                }
                if sync {
                    log.sync();
                }
                warn = log.take_failure().map(|e| {
                    format!(
                        "cannot write the session log {}: {e}; this session will not be resumable",
                        log.path().display()
                    )
                });
            }
            (event, warn)
        };
        // A front end that went away is not the core's problem: keep working, keep logging.
        let _ = self.tx.send(event);
        if let Some(message) = warn {
            self.emit(agent_id, EventKind::Error { message });
        }
    }

    /// Counts the tasks of a resumed session's log (untimed: the log has no clock).
    pub fn observe_replayed(&self, events: &[Event]) {
        let mut inner = self.lock();
        for ev in events {
            inner.tasks.observe(ev, None);
        }
    }

    /// Task figures of one agent (`Some`) or the session.
    pub fn task_metrics(&self, id: Option<AgentId>) -> TaskMetrics {
        let inner = self.lock();
        match id {
            Some(id) => inner.tasks.of(id),
            None => inner.tasks.total(),
        }
    }

    /// Sends an already-numbered event (a replay of the log) to the front end only.
    pub fn forward(&self, event: Event) {
        let _ = self.tx.send(event);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        crate::sync::lock(&self.inner)
    }
}
