//! Writes the session log on a thread of its own, so no agent waits on the disk: the
//! async path only numbers an event and encodes it into a shared buffer. The log is on
//! disk before each model request goes out, and before the tool calls of a reply start:
//! each asks for it ([`LogWriter::on_disk`]) and waits, so a finished tool call's result
//! can never be lost, and a call that may have run is never asked for again as if it had
//! not been made after `--continue` (issue 48). One write and flush per request and per
//! reply with calls, not per event: a wake-up and a write per event cost more CPU than the
//! rest of a request's bookkeeping together (issue 28). Between requests the thread gathers lines for up to [`BATCH_WINDOW`] and writes
//! them then, so the log trails the live events by at most that. A crash can lose those
//! lines (never a result a model has seen) and at worst leave a torn last line, which
//! [`super::read_events`] skips.

use super::SessionLog;
use crate::protocol::Event;
use crate::sync::lock;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long the thread collects lines after the first one wakes it, unless someone waits
/// for the disk sooner. Safety does not rest on it (before a model request the log is
/// written at once, see [`LogWriter::on_disk`]), so it is long enough that a request's
/// events go in the one write that request asks for (a 1 ms window was a race: a
/// finished call's result could miss the disk when squad was killed).
const BATCH_WINDOW: Duration = Duration::from_millis(50);

/// Someone waiting until every line queued before it is written and flushed.
enum Waiter {
    Blocking(mpsc::Sender<()>),
    Async(tokio::sync::oneshot::Sender<()>),
}

impl Waiter {
    fn done(self) {
        match self {
            Waiter::Blocking(tx) => {
                let _ = tx.send(());
            }
            Waiter::Async(tx) => {
                let _ = tx.send(());
            }
        }
    }
}

/// What the async side hands the thread.
#[derive(Default)]
struct Queue {
    /// Encoded lines, in `seq` order.
    lines: Vec<u8>,
    /// Callers to answer once every line queued before them is written and flushed.
    syncs: Vec<Waiter>,
    /// The thread waits for a first line: the next one must wake it.
    idle: bool,
    closed: bool,
}

struct Shared {
    queue: Mutex<Queue>,
    wake: Condvar,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        lock(&self.queue)
    }
}

pub struct LogWriter {
    path: PathBuf,
    shared: Arc<Shared>,
    failed: Arc<AtomicBool>,
    /// The first write error, taken once by whoever reports it.
    failure: Arc<Mutex<Option<String>>>,
    thread: Option<JoinHandle<()>>,
}

impl LogWriter {
    /// Starts the writer thread for `log`.
    pub fn spawn(log: SessionLog) -> io::Result<Self> {
        let path = log.path().to_path_buf();
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
        });
        let failed = Arc::new(AtomicBool::new(false));
        let failure = Arc::new(Mutex::new(None));
        let thread = {
            let (shared, failed, failure) = (shared.clone(), failed.clone(), failure.clone());
            std::thread::Builder::new()
                .name("squad-log".into())
                .spawn(move || write_loop(log, &shared, &failed, &failure))?
        };
        Ok(Self {
            path,
            shared,
            failed,
            failure,
            thread: Some(thread),
        })
    }

    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Encodes `event` as one line and queues it. Lines are written in the order queued.
    pub fn push(&self, event: &Event) {
        if self.failed.load(Ordering::Relaxed) {
            return;
        }
        let mut queue = self.shared.lock();
        let start = queue.lines.len();
        if let Err(e) = serde_json::to_writer(&mut queue.lines, event) {
            queue.lines.truncate(start);
            drop(queue);
            self.fail(format!("cannot encode event {}: {e}", event.seq));
            return;
        }
        queue.lines.push(b'\n');
        if std::mem::take(&mut queue.idle) {
            self.shared.wake.notify_one();
        }
    }

    /// Blocks until every line queued so far is on disk (written and flushed).
    pub fn sync(&self) {
        let (tx, rx) = mpsc::channel();
        {
            let mut queue = self.shared.lock();
            if queue.closed {
                return;
            }
            queue.syncs.push(Waiter::Blocking(tx));
        }
        self.shared.wake.notify_one();
        let _ = rx.recv();
    }

    /// Resolves once every line queued so far is on disk (written and flushed): what a
    /// model request awaits before it goes out. At once when the log is closed or broken.
    pub fn on_disk(&self) -> impl std::future::Future<Output = ()> + Send + use<> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let waiting = {
            let mut queue = self.shared.lock();
            let waiting = !queue.closed && !self.failed.load(Ordering::Relaxed);
            if waiting {
                queue.syncs.push(Waiter::Async(tx));
            }
            waiting
        };
        if waiting {
            self.shared.wake.notify_one();
        }
        async move {
            if waiting {
                let _ = rx.await;
            }
        }
    }

    /// The first write error, once: the caller tells the user, later calls return `None`.
    pub fn take_failure(&self) -> Option<String> {
        if !self.failed.load(Ordering::Relaxed) {
            return None;
        }
        lock(&self.failure).take()
    }

    fn fail(&self, message: String) {
        record_failure(&self.failed, &self.failure, message);
    }
}

impl Drop for LogWriter {
    /// Closing the queue lets the thread write what is left and end; wait for it so the
    /// log is complete when the session is dropped.
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.shared.wake.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn write_loop(
    log: SessionLog,
    shared: &Shared,
    failed: &AtomicBool,
    failure: &Mutex<Option<String>>,
) {
    let path = log.path().display().to_string();
    let mut out = BufWriter::with_capacity(64 * 1024, log.into_file());
    let mut broken = false;
    let mut lines = Vec::new();
    loop {
        let (syncs, closed) = {
            let mut queue = shared.lock();
            while queue.lines.is_empty() && queue.syncs.is_empty() && !queue.closed {
                queue.idle = true;
                queue = shared.wake.wait(queue).unwrap_or_else(|p| p.into_inner());
            }
            queue.idle = false;
            // Lines come in bursts (a model call's answer, a tool's result): gather the
            // burst unless someone waits for the disk.
            let until = Instant::now() + BATCH_WINDOW;
            while queue.syncs.is_empty() && !queue.closed {
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                queue = match shared.wake.wait_timeout(queue, left) {
                    Ok((q, _)) => q,
                    Err(p) => p.into_inner().0,
                };
            }
            std::mem::swap(&mut lines, &mut queue.lines);
            (std::mem::take(&mut queue.syncs), queue.closed)
        };
        if !broken && let Err(e) = out.write_all(&lines).and_then(|()| out.flush()) {
            broken = true;
            record_failure(failed, failure, format!("{path}: {e}"));
        }
        lines.clear();
        for waiter in syncs {
            waiter.done();
        }
        // Dropping the writer closes the queue; nothing can be pushed after that.
        if closed {
            break;
        }
    }
}

fn record_failure(failed: &AtomicBool, failure: &Mutex<Option<String>>, message: String) {
    if !failed.swap(true, Ordering::Relaxed) {
        tracing::error!("session log write failed: {message}");
        *lock(failure) = Some(message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{AgentId, EventKind, HistoryItem};
    use crate::session::read_events;

    #[test]
    fn lines_arrive_in_order_and_sync_waits_for_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let writer = LogWriter::spawn(SessionLog::open(&path).unwrap()).unwrap();
        let agent = AgentId::new();
        for seq in 1..=500 {
            writer.push(&Event {
                seq,
                ts: 0,
                agent_id: agent,
                kind: EventKind::ItemAdded {
                    item: HistoryItem::user(format!("message {seq}")),
                },
            });
        }
        writer.sync();
        let (events, skipped) = read_events(&path).unwrap();
        assert_eq!((events.len(), skipped), (500, 0));
        assert!(events.windows(2).all(|w| w[0].seq + 1 == w[1].seq));
        assert!(writer.take_failure().is_none());
    }

    #[test]
    fn dropping_the_writer_writes_what_is_queued() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        {
            let writer = LogWriter::spawn(SessionLog::open(&path).unwrap()).unwrap();
            for seq in 1..=50 {
                writer.push(&Event {
                    seq,
                    ts: 0,
                    agent_id: AgentId::new(),
                    kind: EventKind::Idle,
                });
            }
        }
        assert_eq!(read_events(&path).unwrap().0.len(), 50);
    }

    #[test]
    fn a_write_error_is_reported_once() {
        // /dev/full accepts the open and fails every write with ENOSPC.
        let Ok(log) = SessionLog::open(std::path::Path::new("/dev/full")) else {
            return;
        };
        let writer = LogWriter::spawn(log).unwrap();
        for seq in 1..=3 {
            writer.push(&Event {
                seq,
                ts: 0,
                agent_id: AgentId::new(),
                kind: EventKind::Idle,
            });
        }
        writer.sync();
        let first = writer.take_failure();
        assert!(first.is_some_and(|m| m.contains("/dev/full")));
        assert!(writer.take_failure().is_none());
    }
}
