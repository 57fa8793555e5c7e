//! The headless front end: sends one prompt, follows the event stream until the whole tree
//! is idle, and prints either the final answer (text) or every event (JSON lines).

mod progress;
mod summary;

use crate::protocol::{Event, EventKind, HistoryItem, Op, TurnEnd};
use crate::runtime::SessionHandle;
use std::io::Write;

pub use summary::summary_table;

/// How an `exec` run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecOutcome {
    /// The active persona's last answer.
    pub final_answer: String,
    /// `None` on success; otherwise the one-line reason for a non-zero exit.
    pub failure: Option<String>,
}

pub async fn run(mut handle: SessionHandle, prompt: String, json: bool) -> ExecOutcome {
    let root = handle.info.root_agent;
    let _ = handle.ops.send(Op::UserMessage {
        to: None,
        text: prompt,
    });
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let mut progress = progress::Progress::new(root);
    let mut final_answer = String::new();
    let mut last_end = None;
    let mut last_error: Option<String> = None;
    let mut started = false;
    let mut shutdown_sent = false;
    let mut interrupted = false;
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);

    loop {
        let event: Event = tokio::select! {
            ev = handle.events.recv() => match ev {
                Some(ev) => ev,
                None => break,
            },
            _ = &mut ctrl_c, if !interrupted => {
                interrupted = true;
                let _ = handle.ops.send(Op::Interrupt { agent_id: root });
                let _ = handle.ops.send(Op::Shutdown);
                shutdown_sent = true;
                last_error = Some("interrupted (Ctrl+C)".to_string());
                continue;
            }
        };
        if json {
            let mut out = stdout.lock();
            if serde_json::to_writer(&mut out, &event).is_ok() {
                let _ = out.write_all(b"\n");
                let _ = out.flush();
            }
        } else {
            progress.show(&event, &mut stderr.lock());
        }
        match &event.kind {
            EventKind::TurnStarted if event.agent_id == root => started = true,
            EventKind::TurnFinished { end } if event.agent_id == root => last_end = Some(*end),
            EventKind::ItemAdded {
                item: HistoryItem::Assistant { text, .. },
            } if event.agent_id == root && !text.trim().is_empty() => {
                final_answer = text.clone();
            }
            EventKind::Error { message } if event.agent_id == root => {
                last_error = Some(message.clone());
            }
            EventKind::Idle if started && !shutdown_sent => {
                shutdown_sent = true;
                let _ = handle.ops.send(Op::Shutdown);
            }
            EventKind::Summary { agents, totals } => {
                if !json {
                    let _ = write!(stderr.lock(), "{}", summary_table(agents, totals));
                }
                break;
            }
            _ => {}
        }
    }

    let failure = match last_end {
        Some(TurnEnd::Completed | TurnEnd::Returned) if !interrupted => None,
        Some(end) => Some(last_error.unwrap_or_else(|| format!("the turn ended: {end:?}"))),
        None => Some(last_error.unwrap_or_else(|| "the session ended before the turn ran".into())),
    };
    if !json && failure.is_none() {
        let mut out = stdout.lock();
        let _ = writeln!(out, "{}", final_answer.trim_end());
        let _ = out.flush();
    }
    ExecOutcome {
        final_answer,
        failure,
    }
}
