//! Writes the session log on a thread of its own, so no agent waits on the disk: the
//! async path only numbers and encodes an event and hands the line over. The thread
//! writes whatever has queued up in one go and flushes when the queue is empty, so the
//! log trails the live events by at most the lines in flight; a crash can lose those and
//! at worst leave a torn last line, which [`super::read_events`] skips.

use super::SessionLog;
use crate::protocol::Event;
use crate::sync::lock;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;

enum Job {
    Line(Vec<u8>),
    /// Answer once every line sent before this one is written and flushed.
    Sync(mpsc::Sender<()>),
}

pub struct LogWriter {
    path: PathBuf,
    jobs: Option<mpsc::Sender<Job>>,
    failed: Arc<AtomicBool>,
    /// The first write error, taken once by whoever reports it.
    failure: Arc<Mutex<Option<String>>>,
    thread: Option<JoinHandle<()>>,
}

impl LogWriter {
    /// Starts the writer thread for `log`.
    pub fn spawn(log: SessionLog) -> io::Result<Self> {
        let path = log.path().to_path_buf();
        let (tx, rx) = mpsc::channel::<Job>();
        let failed = Arc::new(AtomicBool::new(false));
        let failure = Arc::new(Mutex::new(None));
        let thread = {
            let (failed, failure) = (failed.clone(), failure.clone());
            std::thread::Builder::new()
                .name("squad-log".into())
                .spawn(move || write_loop(log, rx, &failed, &failure))?
        };
        Ok(Self {
            path,
            jobs: Some(tx),
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
        let mut line = Vec::with_capacity(256);
        if let Err(e) = serde_json::to_writer(&mut line, event) {
            self.fail(format!("cannot encode event {}: {e}", event.seq));
            return;
        }
        line.push(b'\n');
        if let Some(jobs) = &self.jobs
            && jobs.send(Job::Line(line)).is_err()
        {
            self.fail("the log writer stopped".into());
        }
    }

    /// Blocks until every line queued so far is on disk (written and flushed).
    pub fn sync(&self) {
        let (tx, rx) = mpsc::channel();
        if let Some(jobs) = &self.jobs
            && jobs.send(Job::Sync(tx)).is_ok()
        {
            let _ = rx.recv();
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
        self.jobs.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn write_loop(
    log: SessionLog,
    rx: mpsc::Receiver<Job>,
    failed: &AtomicBool,
    failure: &Mutex<Option<String>>,
) {
    let path = log.path().display().to_string();
    let mut out = BufWriter::with_capacity(64 * 1024, log.into_file());
    let mut broken = false;
    while let Ok(first) = rx.recv() {
        let mut waiting = Vec::new();
        let mut job = Some(first);
        while let Some(j) = job {
            match j {
                Job::Line(line) if !broken => {
                    if let Err(e) = out.write_all(&line) {
                        broken = true;
                        record_failure(failed, failure, format!("{path}: {e}"));
                    }
                }
                Job::Line(_) => {}
                Job::Sync(done) => waiting.push(done),
            }
            job = rx.try_recv().ok();
        }
        if !broken && let Err(e) = out.flush() {
            broken = true;
            record_failure(failed, failure, format!("{path}: {e}"));
        }
        for done in waiting {
            let _ = done.send(());
        }
    }
    let _ = out.flush();
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
