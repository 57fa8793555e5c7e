use crate::protocol::{AgentId, Event, EventKind, SpendTally, TaskMetrics, TaskTally};
use crate::session::LogWriter;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc;

/// Numbers and stamps events, queues the durable ones for the session log, then hands each
/// to the front end. One lock covers numbering and queueing so the log's order is the `seq`
/// order; the disk write itself happens on the log's own thread ([`LogWriter`]). Task
/// figures are folded from the same events, so they count what the log tells.
pub struct EventSink {
    inner: Mutex<Inner>,
    tx: mpsc::UnboundedSender<Event>,
}

struct Inner {
    seq: u64,
    /// The last `ts` given: stamps never go back, even when the wall clock does.
    ts: u64,
    log: Option<LogWriter>,
    tasks: TaskTally,
    /// Spend, quotes and waste (`runtime/quote`), folded from the same events.
    spend: SpendTally,
}

impl EventSink {
    pub fn new(log: Option<LogWriter>, first_seq: u64, tx: mpsc::UnboundedSender<Event>) -> Self {
        Self {
            inner: Mutex::new(Inner {
                seq: first_seq,
                ts: 0,
                log,
                tasks: TaskTally::default(),
                spend: SpendTally::default(),
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
            inner.ts = inner.ts.max(now_ms());
            let event = Event {
                seq: inner.seq,
                ts: inner.ts,
                agent_id,
                kind,
            };
            inner.tasks.observe(&event);
            inner.spend.observe(&event);
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

    /// Resolves once every event recorded so far is on disk (at once without a log).
    pub fn on_disk(&self) -> impl std::future::Future<Output = ()> + Send + use<> {
        let waiting = self.lock().log.as_ref().map(LogWriter::on_disk);
        async move {
            if let Some(w) = waiting {
                w.await;
            }
        }
    }

    /// Counts and times the tasks of a resumed session's log by its events' `ts`.
    pub fn observe_replayed(&self, events: &[Event]) {
        let mut inner = self.lock();
        for ev in events {
            inner.ts = inner.ts.max(ev.ts);
            inner.tasks.observe(ev);
            inner.spend.observe(ev);
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

    /// The workers' task figures by role (`get_agents`' `metrics`).
    pub fn task_metrics_by_role(&self) -> std::collections::BTreeMap<String, TaskMetrics> {
        self.lock().tasks.by_role()
    }

    /// Reads the spend fold (`runtime/quote`: quotes, quote against actual, waste).
    pub fn spend<T>(&self, f: impl FnOnce(&SpendTally) -> T) -> T {
        f(&self.lock().spend)
    }

    /// Changes what the spend fold holds beside the events (spawns being quoted).
    pub fn spend_mut<T>(&self, f: impl FnOnce(&mut SpendTally) -> T) -> T {
        f(&mut self.lock().spend)
    }

    /// Sends an already-numbered event (a replay of the log) to the front end only.
    pub fn forward(&self, event: Event) {
        let _ = self.tx.send(event);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        crate::sync::lock(&self.inner)
    }
}

/// Milliseconds since the Unix epoch, UTC: an event's `ts`. A clock set before 1970 reads
/// 0, which the figures treat as no clock.
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
