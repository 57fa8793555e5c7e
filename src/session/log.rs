use crate::protocol::Event;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

/// A session's `<id>.jsonl`, opened for appending one JSON line per event (the lines are
/// written by [`super::LogWriter`]). A crash can at worst leave a torn last line; opening
/// the log again ends it, so earlier lines stay intact and new ones start cleanly.
pub struct SessionLog {
    path: PathBuf,
    file: File,
}

impl SessionLog {
    /// Opens (creating if needed) the log for appending.
    pub fn open(path: &Path) -> io::Result<Self> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(path)?;
        end_torn_line(&mut file)?;
        Ok(Self {
            path: path.to_path_buf(),
            file,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The open file, for a writer that buffers (see [`super::LogWriter`]).
    pub fn into_file(self) -> File {
        self.file
    }
}

/// A crash mid-write can leave a last line without its newline; end it, so the next event
/// starts a line of its own instead of being glued to (and lost with) the torn one.
fn end_torn_line(file: &mut File) -> io::Result<()> {
    use std::io::{Seek, SeekFrom};
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(());
    }
    file.seek(SeekFrom::Start(len - 1))?;
    let mut last = [0u8; 1];
    file.read_exact(&mut last)?;
    if last[0] != b'\n' {
        file.write_all(b"\n")?;
    }
    Ok(())
}

/// Reads a log back. Lines that do not parse (a torn last line after a crash, or a line
/// written by a newer squad) are skipped and counted, never fatal.
pub fn read_events(path: &Path) -> io::Result<(Vec<Event>, usize)> {
    let reader = BufReader::new(File::open(path)?);
    let mut events = Vec::new();
    let mut skipped = 0;
    for line in reader.lines() {
        let line = match line {
            Ok(l) => l,
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                skipped += 1;
                continue;
            }
            Err(e) => return Err(e),
        };
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Event>(&line) {
            Ok(ev) => events.push(ev),
            Err(_) => skipped += 1,
        }
    }
    Ok((events, skipped))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{AgentId, EventKind, HistoryItem};
    use crate::session::LogWriter;

    #[test]
    fn torn_last_line_is_skipped_and_earlier_lines_survive() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let agent = AgentId::new();
        {
            let log = LogWriter::spawn(SessionLog::open(&path).unwrap()).unwrap();
            for seq in 1..=3 {
                log.push(&Event {
                    seq,
                    ts: 0,
                    agent_id: agent,
                    kind: EventKind::ItemAdded {
                        item: HistoryItem::user(format!("message {seq}")),
                    },
                });
            }
        }
        // Simulate a crash in the middle of writing a fourth line.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(br#"{"seq":4,"agent_id":"#).unwrap();
        let (events, skipped) = read_events(&path).unwrap();
        assert_eq!(events.len(), 3);
        assert_eq!(skipped, 1);
        assert_eq!(events[2].seq, 3);
        // Appending after the crash starts a fresh line: the new event survives.
        let log = LogWriter::spawn(SessionLog::open(&path).unwrap()).unwrap();
        log.push(&Event {
            seq: 5,
            ts: 0,
            agent_id: agent,
            kind: EventKind::Idle,
        });
        drop(log);
        let (events, skipped) = read_events(&path).unwrap();
        assert_eq!((events.len(), skipped), (4, 1));
        assert_eq!(events[3].seq, 5);
    }

    #[test]
    fn a_line_without_ts_still_loads_and_ts_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.jsonl");
        let agent = AgentId::new();
        // As squad wrote events before they carried a clock.
        let old = format!(r#"{{"seq":1,"agent_id":"{agent}","type":"idle"}}"#);
        std::fs::write(&path, format!("{old}\n")).unwrap();
        let log = LogWriter::spawn(SessionLog::open(&path).unwrap()).unwrap();
        log.push(&Event {
            seq: 2,
            ts: 1_767_225_600_123,
            agent_id: agent,
            kind: EventKind::Idle,
        });
        drop(log);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(r#""seq":2,"ts":1767225600123,"#), "{text}");
        let (events, skipped) = read_events(&path).unwrap();
        assert_eq!(skipped, 0);
        assert_eq!(
            events.iter().map(|e| (e.seq, e.ts)).collect::<Vec<_>>(),
            [(1, 0), (2, 1_767_225_600_123)]
        );
    }
}
