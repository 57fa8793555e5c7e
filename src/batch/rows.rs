//! The rows of a batch: a CSV file with a header row, or JSON Lines (one object a line),
//! each row a map from column to text, named by its id column.

use super::BatchError;
use serde_json::{Map, Value};
use std::path::Path;

/// One row: its id and its columns, in the file's order.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub id: String,
    pub columns: Vec<(String, String)>,
}

impl Row {
    pub fn get(&self, column: &str) -> Option<&str> {
        self.columns
            .iter()
            .find(|(c, _)| c == column)
            .map(|(_, v)| v.as_str())
    }
}

/// The rows and the columns they have.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rows {
    pub columns: Vec<String>,
    pub rows: Vec<Row>,
}

/// JSON Lines by its extension (`.jsonl`, `.ndjson`), else CSV.
pub fn is_json_lines(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    lower.ends_with(".jsonl") || lower.ends_with(".ndjson")
}

/// Reads the rows of `path` (shown as `shown` in errors), keyed by `id_column`.
pub fn read(path: &Path, shown: &str, id_column: &str) -> Result<Rows, BatchError> {
    let text = std::fs::read_to_string(path).map_err(|source| BatchError::Read {
        path: shown.to_string(),
        source,
    })?;
    let rows = if is_json_lines(shown) {
        parse_json_lines(&text, shown)?
    } else {
        parse_csv(&text, shown)?
    };
    keyed(rows, shown, id_column)
}

/// A CSV text's rows (its first record is the header).
pub fn parse_csv(text: &str, shown: &str) -> Result<Vec<Vec<(String, String)>>, BatchError> {
    let mut reader = csv::ReaderBuilder::new()
        .flexible(false)
        .from_reader(text.as_bytes());
    let bad = |e: csv::Error| BatchError::Row {
        path: shown.to_string(),
        line: e
            .position()
            .map_or("somewhere".to_string(), |p| format!("line {}", p.line())),
        message: e.to_string(),
    };
    let header: Vec<String> = reader
        .headers()
        .map_err(bad)?
        .iter()
        .map(|h| h.trim().to_string())
        .collect();
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(bad)?;
        let row = header
            .iter()
            .cloned()
            .zip(record.iter().map(str::to_string))
            .collect();
        rows.push(row);
    }
    Ok(rows)
}

/// A JSON Lines text's rows: each non-blank line one object; a value that is not a string
/// is kept as its JSON text.
pub fn parse_json_lines(text: &str, shown: &str) -> Result<Vec<Vec<(String, String)>>, BatchError> {
    let mut rows = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |message: String| BatchError::Row {
            path: shown.to_string(),
            line: format!("line {}", n + 1),
            message,
        };
        let obj: Map<String, Value> = match serde_json::from_str(line) {
            Ok(Value::Object(obj)) => obj,
            Ok(other) => return Err(bad(format!("a row must be a JSON object, got {other}"))),
            Err(e) => return Err(bad(e.to_string())),
        };
        let row = obj
            .into_iter()
            .map(|(k, v)| match v {
                Value::String(s) => (k, s),
                other => (k, other.to_string()),
            })
            .collect();
        rows.push(row);
    }
    Ok(rows)
}

/// Names each row by `id_column`, which every row must have, once.
fn keyed(
    raw: Vec<Vec<(String, String)>>,
    shown: &str,
    id_column: &str,
) -> Result<Rows, BatchError> {
    let mut columns: Vec<String> = Vec::new();
    for row in &raw {
        for (c, _) in row {
            if !columns.contains(c) {
                columns.push(c.clone());
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    let mut rows = Vec::with_capacity(raw.len());
    for (n, columns_of_row) in raw.into_iter().enumerate() {
        let id = columns_of_row
            .iter()
            .find(|(c, _)| c == id_column)
            .map(|(_, v)| v.trim().to_string())
            .filter(|v| !v.is_empty());
        let Some(id) = id else {
            return Err(match columns.iter().any(|c| c == id_column) {
                true => BatchError::Row {
                    path: shown.to_string(),
                    line: format!("row {}", n + 1),
                    message: format!("its `{id_column}` is empty"),
                },
                false => BatchError::NoColumn {
                    path: shown.to_string(),
                    column: id_column.to_string(),
                    columns: columns.join(", "),
                },
            });
        };
        if !seen.insert(id.clone()) {
            return Err(BatchError::DuplicateId {
                path: shown.to_string(),
                id,
            });
        }
        rows.push(Row {
            id,
            columns: columns_of_row,
        });
    }
    Ok(Rows { columns, rows })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_rows_keep_quoted_commas_and_newlines() {
        let text = "id,text\n1,\"a, b\"\n2,\"line\nbreak\"\n";
        let rows = keyed(parse_csv(text, "r.csv").unwrap(), "r.csv", "id").unwrap();
        assert_eq!(rows.columns, ["id", "text"]);
        assert_eq!(rows.rows[0].get("text"), Some("a, b"));
        assert_eq!(rows.rows[1].get("text"), Some("line\nbreak"));
    }

    #[test]
    fn json_lines_rows_keep_non_strings_as_json() {
        let text = "{\"id\": \"x\", \"n\": 3}\n\n{\"id\": \"y\", \"n\": [1]}\n";
        let rows = keyed(parse_json_lines(text, "r.jsonl").unwrap(), "r", "id").unwrap();
        assert_eq!(rows.rows[0].get("n"), Some("3"));
        assert_eq!(rows.rows[1].get("n"), Some("[1]"));
    }

    #[test]
    fn bad_rows_are_named() {
        let err = parse_json_lines("{\"id\":1}\n[1]\n", "r.jsonl").unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
        let err = parse_csv("id,a\n1,2,3\n", "r.csv").unwrap_err();
        assert!(err.to_string().starts_with("rows file `r.csv`"), "{err}");
        let dup = parse_csv("id\n1\n1\n", "r.csv").unwrap();
        let err = keyed(dup, "r.csv", "id").unwrap_err();
        assert!(err.to_string().contains("`1` is on two rows"), "{err}");
        let none = parse_csv("name\nx\n", "r.csv").unwrap();
        let err = keyed(none, "r.csv", "id").unwrap_err();
        assert!(
            err.to_string().contains("no column `id` (columns: name)"),
            "{err}"
        );
    }
}
