//! Diagnostics go to a daily file under the state dir, never to the terminal (the TUI owns
//! it). `SQUAD_LOG` or `RUST_LOG` set the level.

use std::path::{Path, PathBuf};
use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::EnvFilter;

const LOG_QUEUE_LINES: usize = 1024;

/// Starts file logging; keep the guard alive for the life of the process. Failing to set
/// up logging never stops squad.
pub fn init(dir: &Path) -> Option<WorkerGuard> {
    std::fs::create_dir_all(dir).ok()?;
    let filter = std::env::var("SQUAD_LOG")
        .ok()
        .or_else(|| std::env::var("RUST_LOG").ok())
        .and_then(|s| EnvFilter::try_new(s).ok())
        .unwrap_or_else(|| EnvFilter::new("warn,squad=info"));
    let appender = tracing_appender::rolling::daily(dir, "squad.log");
    // The default queue holds 128,000 lines (4 MB up front); diagnostics need far less.
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .buffered_lines_limit(LOG_QUEUE_LINES)
        .finish(appender);
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(false)
        .try_init()
        .ok()?;
    Some(guard)
}

/// Where squad keeps its own files.
#[derive(Clone, Debug)]
pub struct Dirs {
    /// Session logs live in `<data>/sessions`.
    pub data: PathBuf,
    /// Diagnostic logs.
    pub logs: PathBuf,
}

impl Dirs {
    /// `SQUAD_DATA_DIR` overrides the platform's data dir (tests, portable setups).
    pub fn discover() -> Self {
        if let Some(d) = std::env::var_os("SQUAD_DATA_DIR").filter(|d| !d.is_empty()) {
            let data = PathBuf::from(d);
            return Self {
                logs: data.join("logs"),
                data,
            };
        }
        match directories::ProjectDirs::from("", "", "squad") {
            Some(p) => Self {
                data: p.data_dir().to_path_buf(),
                logs: p
                    .state_dir()
                    .unwrap_or_else(|| p.data_local_dir())
                    .join("logs"),
            },
            None => {
                let base = std::env::temp_dir().join("squad");
                Self {
                    logs: base.join("logs"),
                    data: base,
                }
            }
        }
    }

    pub fn sessions(&self) -> PathBuf {
        self.data.join("sessions")
    }
}
