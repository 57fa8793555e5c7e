//! The prompts a person typed, across sessions, for Up/Down recall in the composer: one
//! JSON string per line in `<data dir>/prompts.jsonl`, appended as they are sent. Best
//! effort: a history that cannot be read or written is no reason to stop a session.

use std::io::Write;
use std::path::{Path, PathBuf};

/// How many prompts are kept and loaded.
pub const PROMPT_HISTORY_CAP: usize = 1_000;

/// The file of earlier prompts in squad's data dir.
#[derive(Clone, Debug)]
pub struct PromptHistory {
    file: PathBuf,
    cap: usize,
}

impl PromptHistory {
    pub fn new(data_dir: &Path) -> Self {
        Self {
            file: data_dir.join("prompts.jsonl"),
            cap: PROMPT_HISTORY_CAP,
        }
    }

    /// A smaller cap, so tests can reach it.
    pub fn with_cap(mut self, cap: usize) -> Self {
        self.cap = cap.max(1);
        self
    }

    pub fn path(&self) -> &Path {
        &self.file
    }

    /// The last `cap` prompts, oldest first, the same prompt twice in a row once. Lines
    /// that do not read back are skipped. A
    /// file grown past twice the cap is cut back to the cap here, once per session start,
    /// so appending stays one write.
    pub fn load(&self) -> Vec<String> {
        let Ok(text) = std::fs::read_to_string(&self.file) else {
            return Vec::new();
        };
        let lines: Vec<&str> = text.lines().collect();
        let mut prompts: Vec<String> = lines
            .iter()
            .skip(lines.len().saturating_sub(self.cap))
            .filter_map(|l| serde_json::from_str::<String>(l).ok())
            .collect();
        if lines.len() > 2 * self.cap {
            self.rewrite(&prompts);
        }
        prompts.dedup();
        let start = prompts.len().saturating_sub(self.cap);
        prompts.drain(..start);
        prompts
    }

    /// Adds one prompt (blank ones are not kept).
    pub fn append(&self, prompt: &str) {
        if prompt.trim().is_empty() {
            return;
        }
        let Ok(line) = serde_json::to_string(prompt) else {
            return;
        };
        if let Some(dir) = self.file.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.file)
            // One write per line: sessions appending side by side do not interleave.
            .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()));
        if let Err(e) = written {
            tracing::warn!("cannot keep the prompt in {}: {e}", self.file.display());
        }
    }

    fn rewrite(&self, prompts: &[String]) {
        let mut text = String::new();
        for p in prompts {
            if let Ok(line) = serde_json::to_string(p) {
                text.push_str(&line);
                text.push('\n');
            }
        }
        let tmp = self.file.with_extension("jsonl.tmp");
        let done = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, &self.file));
        if let Err(e) = done {
            tracing::warn!("cannot trim {}: {e}", self.file.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_come_back_oldest_first_multiline_included() {
        let dir = tempfile::tempdir().unwrap();
        let h = PromptHistory::new(dir.path());
        assert!(h.load().is_empty());
        h.append("first");
        h.append("two\nlines");
        h.append("   ");
        h.append("two\nlines");
        assert_eq!(
            PromptHistory::new(dir.path()).load(),
            ["first", "two\nlines"]
        );
    }

    #[test]
    fn the_cap_keeps_the_newest_and_trims_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let h = PromptHistory::new(dir.path()).with_cap(3);
        for i in 0..7 {
            h.append(&format!("p{i}"));
        }
        assert_eq!(h.load(), ["p4", "p5", "p6"]);
        let lines = std::fs::read_to_string(h.path()).unwrap().lines().count();
        assert_eq!(lines, 3, "trimmed to the cap once past twice the cap");
        h.append("p7");
        assert_eq!(h.load(), ["p5", "p6", "p7"]);
    }

    #[test]
    fn a_damaged_line_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let h = PromptHistory::new(dir.path());
        std::fs::write(h.path(), "\"ok\"\nnot json\n\"also\"\n").unwrap();
        assert_eq!(h.load(), ["ok", "also"]);
    }
}
