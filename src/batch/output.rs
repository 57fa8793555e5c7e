//! The output file: one line per settled row (id, status, attempts, result, error,
//! tokens, cost), CSV or JSON Lines by its extension. Written whole to a file beside it
//! and renamed over it, so a crash leaves the last complete file, never a torn one.

use super::BatchError;
use crate::protocol::RowRecord;
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The output file's columns, in order.
pub const COLUMNS: [&str; 7] = [
    "id", "status", "attempts", "result", "error", "tokens", "cost_usd",
];

/// Where the rows go, and how.
#[derive(Clone, Debug)]
pub struct Output {
    path: PathBuf,
    shown: String,
    csv: bool,
}

impl Output {
    /// `shown` is the path as the user gave it (its extension picks the format).
    pub fn new(path: PathBuf, shown: &str) -> Self {
        let csv = shown.to_ascii_lowercase().ends_with(".csv");
        Self {
            path,
            shown: shown.to_string(),
            csv,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `rows` (settled ones, in the rows file's order) over the file at once.
    pub fn write(&self, rows: &[&RowRecord]) -> Result<(), BatchError> {
        let err = |source| BatchError::Write {
            path: self.shown.clone(),
            source,
        };
        let bytes = if self.csv {
            csv_bytes(rows).map_err(err)?
        } else {
            json_lines(rows)
        };
        write_aside(&self.path, &bytes).map_err(err)
    }
}

/// The result as one cell: text as it is, JSON as its text.
fn cell(result: Option<&Value>) -> String {
    match result {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    }
}

fn csv_bytes(rows: &[&RowRecord]) -> std::io::Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(COLUMNS)?;
    for r in rows {
        w.write_record([
            r.id.clone(),
            r.state.as_str().to_string(),
            r.attempt.to_string(),
            cell(r.result.as_ref()),
            r.error.clone().unwrap_or_default(),
            r.tokens.to_string(),
            format!("{:.6}", r.cost_usd),
        ])?;
    }
    w.into_inner().map_err(|e| e.into_error())
}

fn json_lines(rows: &[&RowRecord]) -> Vec<u8> {
    let mut out = Vec::new();
    for r in rows {
        let line = json!({
            "id": r.id,
            "status": r.state.as_str(),
            "attempts": r.attempt,
            "result": r.result.clone().unwrap_or(Value::Null),
            "error": r.error,
            "tokens": r.tokens,
            "cost_usd": r.cost_usd,
        });
        out.extend_from_slice(line.to_string().as_bytes());
        out.push(b'\n');
    }
    out
}

/// Writes `bytes` to a file beside `path`, synced, then renames it over `path`.
fn write_aside(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".partial");
    let aside = path.with_file_name(name);
    let mut f = std::fs::File::create(&aside)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&aside, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::RowState;

    fn rec(id: &str, state: RowState, result: Option<Value>) -> RowRecord {
        RowRecord {
            id: id.into(),
            state,
            attempt: 2,
            agent: None,
            result,
            error: (state == RowState::Failed).then(|| "bad, \"really\"".to_string()),
            tokens: 1200,
            cost_usd: 0.25,
        }
    }

    #[test]
    fn csv_output_reads_back_with_every_column() {
        let dir = tempfile::tempdir().unwrap();
        let out = Output::new(dir.path().join("o.csv"), "o.csv");
        let a = rec("a", RowState::Done, Some(json!({"label": "x, y"})));
        let b = rec("b", RowState::Failed, None);
        out.write(&[&a, &b]).unwrap();
        let text = std::fs::read_to_string(out.path()).unwrap();
        let rows = crate::batch::rows::parse_csv(&text, "o.csv").unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0][3], ("result".into(), "{\"label\":\"x, y\"}".into()));
        assert_eq!(rows[1][1].1, "failed");
        assert_eq!(rows[1][4].1, "bad, \"really\"");
        assert!(!dir.path().join("o.csv.partial").exists());
    }

    #[test]
    fn json_lines_output_has_a_line_per_row() {
        let dir = tempfile::tempdir().unwrap();
        let out = Output::new(dir.path().join("sub/o.jsonl"), "sub/o.jsonl");
        let a = rec("a", RowState::Done, Some(json!("text")));
        out.write(&[&a]).unwrap();
        let text = std::fs::read_to_string(out.path()).unwrap();
        let v: Value = serde_json::from_str(text.trim()).unwrap();
        assert_eq!(
            (v["id"].as_str(), v["result"].as_str()),
            (Some("a"), Some("text"))
        );
        assert_eq!(v["status"], "done");
    }
}
