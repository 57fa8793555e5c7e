//! A batch: a worker per row of a list (`spawn_batch`, `squad exec --batch`). What the
//! core is asked to run ([`BatchSpec`]), what it tells as it runs ([`BatchUpdate`], one
//! durable event per step, so the log is where a batch's rows stand), and the fold of
//! those events ([`BatchLedger`]) that `--continue` reads to run only the rows not settled.

use super::{AgentId, Budget, dollars, thousands};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// A batch as asked: the rows, the instruction each row fills, and where results go.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BatchSpec {
    /// The rows: a CSV file (a header row) or JSON Lines (`.jsonl`, `.ndjson`).
    pub rows: String,
    /// The instruction, with `{column}` placeholders filled from each row.
    pub template: String,
    /// The column that names each row (unique); the output and the log key rows by it.
    pub id_column: String,
    /// The role each row's worker has.
    pub role: String,
    /// Where each row's status, result and cost are written (`.csv`, else JSON Lines).
    pub output: String,
    /// A JSON schema each row's result must match; the result is then the JSON object
    /// the worker's summary holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// Rows at work at once (at most the team's free slots).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<u32>,
    /// What each row's worker may spend.
    #[serde(default)]
    pub budget: Budget,
    /// Attempts a row gets before it fails for good (a worker that failed, or a result
    /// that did not match the schema, is tried again with why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
}

/// Attempts a row gets when the spec says nothing.
pub const DEFAULT_ATTEMPTS: u32 = 2;

impl BatchSpec {
    /// The key the log files the batch's rows under: its output file.
    pub fn key(&self) -> &str {
        &self.output
    }

    pub fn attempts(&self) -> u32 {
        self.max_attempts.unwrap_or(DEFAULT_ATTEMPTS).max(1)
    }
}

/// Where a row stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RowState {
    /// Its worker is at work (`attempt` says which try).
    Running,
    /// Done: its result passed (and matched the schema).
    Done,
    /// Failed for good: out of attempts.
    Failed,
}

impl RowState {
    /// Done or failed for good: `--continue` does not run it again.
    pub fn is_settled(self) -> bool {
        matches!(self, Self::Done | Self::Failed)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Done => "done",
            Self::Failed => "failed",
        }
    }
}

/// How far the batch is, with the time left at the pace so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BatchProgress {
    pub total: usize,
    pub done: usize,
    pub failed: usize,
    pub running: usize,
    /// Seconds left at the pace of the rows settled in this run; `None` until one has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eta_s: Option<u64>,
}

impl BatchProgress {
    /// `37/100 done, 1 failed, 4 running, ETA 2m10s`.
    pub fn line(&self) -> String {
        let mut line = format!("{}/{} done", self.done, self.total);
        if self.failed > 0 {
            line.push_str(&format!(", {} failed", self.failed));
        }
        if self.running > 0 {
            line.push_str(&format!(", {} running", self.running));
        }
        if let Some(s) = self.eta_s {
            line.push_str(&format!(", ETA {}", duration_text(s)));
        }
        line
    }
}

/// `2m10s`, `45s`, `1h03m`.
pub fn duration_text(s: u64) -> String {
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// One row as the log records it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RowRecord {
    pub id: String,
    pub state: RowState,
    /// 1 for the first try.
    pub attempt: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentId>,
    /// The row's result: the JSON its schema asked for, else the worker's summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Why the attempt or the row failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Spent on the row so far, every attempt's worker counted.
    #[serde(default)]
    pub tokens: u64,
    #[serde(default)]
    pub cost_usd: f64,
}

/// One step of a batch: a durable event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BatchUpdate {
    /// The batch's key ([`BatchSpec::key`]).
    pub batch: String,
    pub step: BatchStep,
    pub progress: BatchProgress,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BatchStep {
    /// The batch began (or went on): `skipped` rows were settled by an earlier run.
    Started {
        spec: Box<BatchSpec>,
        skipped: usize,
        /// The quote computed before it started, as the user saw it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        quote: Option<String>,
    },
    /// A row's worker started, or a row settled.
    Row(RowRecord),
    /// Every row settled (or the batch was stopped: `stopped`).
    Finished {
        failed: Vec<String>,
        tokens: u64,
        cost_usd: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stopped: Option<String>,
    },
}

impl BatchUpdate {
    /// The line exec's stderr and the TUI's conversation show for this step, if any (a
    /// row's first start is shown by its worker's spawn).
    pub fn line(&self) -> Option<String> {
        let progress = self.progress.line();
        Some(match &self.step {
            BatchStep::Started { spec, skipped, .. } => {
                let before = match skipped {
                    0 => String::new(),
                    n => format!(", {n} settled before and not run again"),
                };
                format!(
                    "▤ batch {}: {} rows{before}, role {}, output {}",
                    self.batch, self.progress.total, spec.role, spec.output
                )
            }
            BatchStep::Row(row) => match row.state {
                RowState::Running if row.attempt <= 1 => return None,
                RowState::Running => format!(
                    "▤ row {} again, attempt {}: {}",
                    row.id,
                    row.attempt,
                    row.error.as_deref().unwrap_or("the last attempt failed")
                ),
                RowState::Done => format!(
                    "▤ row {} done ({}, {} tokens) · {progress}",
                    row.id,
                    dollars(row.cost_usd),
                    thousands(row.tokens)
                ),
                RowState::Failed => format!(
                    "✗ row {} failed after {} attempt(s): {} · {progress}",
                    row.id,
                    row.attempt,
                    row.error.as_deref().unwrap_or("no reason given")
                ),
            },
            BatchStep::Finished {
                failed,
                tokens,
                cost_usd,
                stopped,
            } => {
                let failed_text = match failed.len() {
                    0 => String::new(),
                    n => format!(", {n} failed ({})", failed.join(", ")),
                };
                let stopped = stopped
                    .as_ref()
                    .map_or(String::new(), |why| format!(" — stopped: {why}"));
                format!(
                    "▤ batch {}: {} done{failed_text}; {} tokens, {}{stopped}",
                    self.batch,
                    self.progress.done,
                    thousands(*tokens),
                    dollars(*cost_usd)
                )
            }
        })
    }
}

/// The rows of each batch as the events left them, for `--continue`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BatchLedger {
    batches: BTreeMap<String, BTreeMap<String, RowRecord>>,
}

impl BatchLedger {
    pub fn fold(&mut self, update: &BatchUpdate) {
        if let BatchStep::Row(row) = &update.step {
            let rows = self.batches.entry(update.batch.clone()).or_default();
            rows.insert(row.id.clone(), row.clone());
        }
    }

    /// Batch `key`'s rows not settled whose worker had started (at work when the log
    /// ended), with that worker.
    pub fn unsettled(&self, key: &str) -> Vec<RowRecord> {
        (self.batches.get(key).into_iter().flatten())
            .filter(|(_, r)| !r.state.is_settled() && r.agent.is_some())
            .map(|(_, r)| r.clone())
            .collect()
    }

    /// The settled rows of batch `key`, by id.
    pub fn settled(&self, key: &str) -> BTreeMap<String, RowRecord> {
        (self.batches.get(key).into_iter().flatten())
            .filter(|(_, r)| r.state.is_settled())
            .map(|(id, r)| (id.clone(), r.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, state: RowState) -> BatchUpdate {
        BatchUpdate {
            batch: "out.csv".into(),
            step: BatchStep::Row(RowRecord {
                id: id.into(),
                state,
                attempt: 1,
                agent: None,
                result: None,
                error: None,
                tokens: 0,
                cost_usd: 0.0,
            }),
            progress: BatchProgress::default(),
        }
    }

    #[test]
    fn the_ledger_keeps_a_rows_last_state_and_only_settled_rows_count() {
        let mut ledger = BatchLedger::default();
        for u in [
            row("a", RowState::Running),
            row("b", RowState::Running),
            row("a", RowState::Done),
            row("c", RowState::Failed),
        ] {
            ledger.fold(&u);
        }
        let settled = ledger.settled("out.csv");
        assert_eq!(settled.keys().collect::<Vec<_>>(), ["a", "c"]);
        assert!(ledger.settled("other.csv").is_empty());
    }

    #[test]
    fn an_update_reads_back_as_written() {
        let u = row("a", RowState::Done);
        let text = serde_json::to_string(&u).unwrap();
        assert_eq!(serde_json::from_str::<BatchUpdate>(&text).unwrap(), u);
    }

    #[test]
    fn progress_says_what_is_left() {
        let p = BatchProgress {
            total: 100,
            done: 37,
            failed: 1,
            running: 4,
            eta_s: Some(130),
        };
        assert_eq!(p.line(), "37/100 done, 1 failed, 4 running, ETA 2m10s");
        assert_eq!(duration_text(3780), "1h03m");
    }
}
