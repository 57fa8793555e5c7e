//! The headless front end: sends one prompt, follows the event stream until the whole tree
//! is idle, and prints either the final answer (text) or every event (JSON lines).

mod board;
pub mod merge;
mod progress;
mod refusals;
pub mod review;
mod summary;

use crate::protocol::{
    AgentStatus, BudgetScope, Event, EventKind, GOAL_REFUSED, Goal, GoalEnd, HistoryItem, Op,
    TurnEnd, dollars,
};
use crate::runtime::SessionHandle;
use std::io::Write;

pub use summary::summary_table;

/// Exit codes of `squad exec` (documented in docs/usage.md, kept by tests/exec.rs).
pub mod exit {
    /// The run finished.
    pub const DONE: u8 = 0;
    /// The model or a tool failed the run.
    pub const FAILED: u8 = 1;
    /// A usage or config error: nothing was run.
    pub const USAGE: u8 = 2;
    /// Nothing could change: every write and command the agents tried was refused,
    /// because exec cannot ask (`--approval ask`, the default); `--approval auto` allows.
    pub const UNCHANGED: u8 = 3;
    /// `--rewind` was refused: files changed since that message and not by squad.
    pub const REWIND_REFUSED: u8 = 4;
    /// Interrupted by Ctrl+C / SIGINT (128 + 2, as shells report it).
    pub const SIGINT: u8 = 130;
    /// Stopped by SIGTERM (128 + 15).
    pub const SIGTERM: u8 = 143;
}

/// What stopped a run from outside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interrupt {
    /// Ctrl+C or SIGINT.
    Int,
    /// SIGTERM.
    Term,
}

/// How an `exec` run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecOutcome {
    /// The active persona's last answer.
    pub final_answer: String,
    /// `None` on success; otherwise the one-line reason for a non-zero exit.
    pub failure: Option<String>,
    /// The signal that stopped the run, if one did.
    pub interrupted: Option<Interrupt>,
    /// How the goal ended in this run, if one did.
    pub goal: Option<GoalEnd>,
    /// The run otherwise went well, but every change it tried was refused: `failure`
    /// says so, and the exit code is [`exit::UNCHANGED`].
    pub nothing_changed: bool,
}

impl ExecOutcome {
    pub fn exit_code(&self) -> u8 {
        match (self.interrupted, self.goal, &self.failure) {
            (Some(Interrupt::Int), ..) => exit::SIGINT,
            (Some(Interrupt::Term), ..) => exit::SIGTERM,
            (None, Some(GoalEnd::Stopped), _) => exit::SIGINT,
            (None, _, Some(_)) if self.nothing_changed => exit::UNCHANGED,
            (None, _, Some(_)) => exit::FAILED,
            (None, _, None) => exit::DONE,
        }
    }
}

/// What a run starts with.
#[derive(Debug, Clone, PartialEq)]
pub enum Start {
    /// A message to the active persona.
    Prompt(String),
    /// The agents a resumed log shows interrupted go on (`--continue`).
    Continue,
    /// A worker per row (`--batch`); in a resumed session, only the rows not settled.
    Batch(Box<crate::protocol::BatchSpec>),
}

/// Runs `start`; with a `goal` (`--goal`), the team works toward it across turns and the
/// run ends with it.
pub async fn run(
    mut handle: SessionHandle,
    start: Start,
    goal: Option<Goal>,
    json: bool,
) -> ExecOutcome {
    let root = handle.info.root_agent;
    let continuing = start == Start::Continue;
    let batch = matches!(start, Start::Batch(_));
    // How the batch ended: `Some(None)` with every row done, else why not.
    let mut batch_end: Option<Option<String>> = None;
    // A resumed session may come back paused (by the user, or by its budget): nobody can
    // unpause it here later. A budget still spent pauses it again at once, and ends the run.
    let _ = handle.ops.send(Op::Resume);
    let brief = goal.as_ref().map(Goal::brief);
    let first = match start {
        Start::Prompt(text) => Op::UserMessage {
            to: None,
            text: with_brief(text, brief),
        },
        Start::Continue => Op::Continue { agent_id: None },
        Start::Batch(spec) => Op::Batch { spec },
    };
    // With a goal, the work starts once the core took it (`goal_set`); a goal it refused
    // (`error`) ends the run before anything is sent to the model.
    let mut held = None;
    match goal {
        Some(goal) => {
            let _ = handle.ops.send(Op::SetGoal { goal: Some(goal) });
            held = Some(first);
        }
        None => {
            let _ = handle.ops.send(first);
        }
    }
    let stdout = std::io::stdout();
    // JSON lines not yet written (see `write_out`).
    let mut json_lines = Vec::new();
    let mut shown = Shown::new(root, json);
    let mut final_answer = String::new();
    let mut last_end = None;
    let mut last_error: Option<String> = None;
    let mut started = false;
    let mut shutdown_sent = false;
    let mut interrupted = None;
    // Set when the session's budget ran out: the reason the run ends, whatever follows.
    let mut budget_stop: Option<String> = None;
    // How the goal ended, and after how many checks.
    let (mut goal_end, mut goal_turns) = (None, 0);
    let mut refusals = refusals::Refusals::default();
    let ctrl_c = tokio::signal::ctrl_c();
    let term = terminated();
    tokio::pin!(ctrl_c, term);

    loop {
        let event: Event = tokio::select! {
            ev = handle.events.recv() => match ev {
                Some(ev) => ev,
                None => break,
            },
            signal = async {
                tokio::select! {
                    _ = &mut ctrl_c => Interrupt::Int,
                    _ = &mut term => Interrupt::Term,
                }
            }, if interrupted.is_none() => {
                interrupted = Some(signal);
                // Every call under way gets its result and the agents at work are logged
                // `interrupted` (`exec --resume ID --continue` goes on); a second Ctrl+C
                // does not wait for that.
                let _ = handle.ops.send(Op::Shutdown);
                tokio::spawn(async {
                    if tokio::signal::ctrl_c().await.is_ok() {
                        std::process::exit(i32::from(exit::SIGINT));
                    }
                });
                shutdown_sent = true;
                last_error = Some(match signal {
                    Interrupt::Int => "interrupted (Ctrl+C)".to_string(),
                    Interrupt::Term => "stopped (SIGTERM)".to_string(),
                });
                continue;
            }
        };
        if json {
            if serde_json::to_writer(&mut json_lines, &event).is_ok() {
                json_lines.push(b'\n');
            }
        } else {
            shown.event(&event);
        }
        // Written once the burst of events is over: a write per event cost more than
        // the rest of exec's work on it.
        if handle.events.is_empty() {
            write_out(&stdout, &mut json_lines);
            shown.flush();
        }
        refusals.observe(&event.kind);
        // What starts the run, ends it, or is its answer; nothing else is.
        let on_root = event.agent_id == root;
        let kind = &event.kind;
        // The persona's turn starts the run; continuing, any agent that goes on does.
        let starts = matches!(kind, EventKind::TurnStarted) && (on_root || continuing)
            || continuing
                && matches!(
                    kind,
                    EventKind::AgentStatus {
                        status: AgentStatus::Running,
                        ..
                    }
                );
        if let EventKind::Batch(update) = kind
            && batch
        {
            started = true;
            if let Some(end) = batch_ended(update) {
                final_answer = update.line().unwrap_or_default();
                batch_end = Some(end);
                shutdown_sent = true;
                let _ = handle.ops.send(Op::Shutdown);
            }
        }
        if starts {
            started = true;
        } else if let EventKind::Error { message } = kind
            && batch
            && !started
            && on_root
        {
            // The batch could not start: the run ends with why.
            last_error = Some(message.clone());
            shutdown_sent = true;
            let _ = handle.ops.send(Op::Shutdown);
        } else if let EventKind::Error { message } = kind {
            if continuing && !started && on_root {
                // Nothing to continue: the run ends with that error.
                last_error = Some(message.clone());
                if !shutdown_sent {
                    shutdown_sent = true;
                    let _ = handle.ops.send(Op::Shutdown);
                }
            } else if held.is_some() && message.starts_with(GOAL_REFUSED) {
                held = None;
                last_error = Some(message.clone());
                shutdown_sent = true;
                let _ = handle.ops.send(Op::Shutdown);
            } else if on_root {
                last_error = Some(message.clone());
            }
        } else if let EventKind::TurnFinished { end } = kind
            && on_root
        {
            last_end = Some(*end);
        } else if matches!(kind, EventKind::GoalSet { .. }) {
            if let Some(op) = held.take() {
                let _ = handle.ops.send(op);
            }
        } else if let EventKind::GoalChecked(check) = kind {
            goal_turns = check.turn;
        } else if let EventKind::GoalEnded { reason } = kind {
            goal_end = Some(*reason);
        } else if let EventKind::ItemAdded {
            item: HistoryItem::Assistant { text, .. },
        } = kind
            && on_root
            && !text.trim().is_empty()
        {
            final_answer = text.clone();
        } else if let EventKind::BudgetReached {
            scope: BudgetScope::Session,
            spent,
            limit,
            ..
        } = kind
        {
            budget_stop = Some(format!(
                "session budget reached: {} of {} spent (limits.max_session_cost_usd); \
                 the run was stopped",
                dollars(*spent),
                dollars(*limit)
            ));
            if !shutdown_sent {
                shutdown_sent = true;
                let _ = handle.ops.send(Op::Shutdown);
            }
        } else if matches!(kind, EventKind::Idle)
            && (started || last_error.is_some())
            && !shutdown_sent
            // A batch's tree rests between rows: its `finished` ends the run.
            && !batch
        {
            // An error before any turn (a hook withheld the message) and nothing left to
            // run: the run ends with it.
            shutdown_sent = true;
            let _ = handle.ops.send(Op::Shutdown);
        } else if let EventKind::Summary {
            agents,
            totals,
            quotes,
            waste,
        } = kind
        {
            write_out(&stdout, &mut json_lines);
            let failure = goal_failure(goal_end, goal_turns)
                .or(batch_end.clone())
                .unwrap_or_else(|| {
                    budget_stop
                        .clone()
                        .or_else(|| failure(last_end, interrupted, last_error.clone()))
                });
            shown.end(failure.as_deref(), || {
                summary_table(agents, totals) + &summary::spend_lines(quotes, waste)
            });
            break;
        }
    }
    write_out(&stdout, &mut json_lines);
    shown.end(None, String::new);

    let mut failure = goal_failure(goal_end, goal_turns)
        .or(batch_end)
        .unwrap_or_else(|| budget_stop.or_else(|| failure(last_end, interrupted, last_error)));
    // Said last, after the table: what was refused and how to allow it; a run that could
    // change nothing does not end as a success, though its answer is printed.
    let nothing_changed = failure.is_none() && refusals.nothing_changed();
    shown.last_lines(&refusals.lines());
    if nothing_changed {
        failure = Some(refusals::NOTHING_CHANGED.to_string());
    }
    if !json && (failure.is_none() || nothing_changed) {
        let mut out = stdout.lock();
        let _ = writeln!(out, "{}", final_answer.trim_end());
        let _ = out.flush();
    }
    ExecOutcome {
        final_answer,
        failure,
        interrupted,
        goal: goal_end,
        nothing_changed,
    }
}

/// The user's prompt, with what the goal is and how it is checked after it; the goal's
/// own words when there is no prompt.
fn with_brief(prompt: String, brief: Option<String>) -> String {
    match brief {
        Some(brief) if prompt.trim().is_empty() => brief,
        Some(brief) => format!("{prompt}\n\n{brief}"),
        None => prompt,
    }
}

/// What an ended goal makes of the run, whatever its last turn did: met is done; a spent
/// budget or a stop is the reason it ends. `None`: no goal ended, the turn decides.
#[allow(clippy::option_option)]
fn goal_failure(end: Option<GoalEnd>, turns: u32) -> Option<Option<String>> {
    Some(match end? {
        GoalEnd::Met => None,
        GoalEnd::Budget => Some(format!(
            "goal not met: its budget is spent ({turns} check(s) failed)"
        )),
        GoalEnd::Stopped => Some("goal stopped".to_string()),
    })
}

/// What a batch's last event makes of the run: `Some(None)` with every row done, else
/// the rows that failed or why it stopped; `None` for its other events.
#[allow(clippy::option_option)]
fn batch_ended(update: &crate::protocol::BatchUpdate) -> Option<Option<String>> {
    let crate::protocol::BatchStep::Finished {
        failed, stopped, ..
    } = &update.step
    else {
        return None;
    };
    Some(match (stopped, failed.len()) {
        (Some(why), _) => Some(format!("batch {} stopped: {why}", update.batch)),
        (None, 0) => None,
        (None, n) => Some(format!(
            "batch {}: {n} of {} rows failed: {}",
            update.batch,
            update.progress.total,
            failed.join(", ")
        )),
    })
}

/// Writes and flushes `pending` to stdout in one go, and empties it.
fn write_out(stdout: &std::io::Stdout, pending: &mut Vec<u8>) {
    if pending.is_empty() {
        return;
    }
    let mut out = stdout.lock();
    let _ = out.write_all(pending);
    let _ = out.flush();
    pending.clear();
}

/// Why the run failed, or `None` when the root's turn completed and nobody stopped it.
fn failure(
    last_end: Option<TurnEnd>,
    interrupted: Option<Interrupt>,
    last_error: Option<String>,
) -> Option<String> {
    match last_end {
        // An answer cut at the output limit is still the answer exec prints (as before).
        Some(TurnEnd::Completed | TurnEnd::MaxTokens | TurnEnd::Returned)
            if interrupted.is_none() =>
        {
            None
        }
        Some(end) => Some(last_error.unwrap_or_else(|| format!("the turn ended: {end:?}"))),
        None => Some(last_error.unwrap_or_else(|| "the session ended before the turn ran".into())),
    }
}

/// Resolves on SIGTERM; never where it cannot be listened for.
async fn terminated() {
    #[cfg(unix)]
    if let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
    {
        term.recv().await;
        return;
    }
    std::future::pending::<()>().await
}

/// Text mode's stderr: progress lines, then the per-agent table.
///
/// A run that fails before the model ever answered (a server that is not there, a refused
/// request) prints no table of zeros and no echo of its error: the caller's one line
/// `squad: REASON` is all there is to read. So the root's latest error is held back until
/// the next line, or until the end shows whether it is that reason.
struct Shown {
    json: bool,
    progress: progress::Progress,
    root: crate::protocol::AgentId,
    /// The root's latest error: (the line, its message).
    held: Option<(String, String)>,
    /// Some model call answered, so there is something to count.
    answered: bool,
    ended: bool,
    /// Lines not yet written to stderr: a burst of events is written in one go.
    pending: String,
}

impl Shown {
    fn new(root: crate::protocol::AgentId, json: bool) -> Self {
        Self {
            json,
            progress: progress::Progress::new(root),
            root,
            held: None,
            answered: false,
            ended: false,
            pending: String::new(),
        }
    }

    fn event(&mut self, event: &Event) {
        // A predicate, not a fold: the events that mean the model answered.
        if matches!(
            &event.kind,
            EventKind::Usage { .. }
                | EventKind::ItemAdded {
                    item: HistoryItem::Assistant { .. },
                }
        ) {
            self.answered = true;
        }
        // Read first: the event may name an agent the board's block mentions (a task is
        // assigned just before its worker's `agent_spawned`).
        let line = self.progress.line(event);
        // A burst of task updates ends at the first other event: the board goes first.
        if !matches!(event.kind, EventKind::TaskUpdated { .. })
            && let Some(block) = self.progress.board_block()
        {
            self.release();
            self.line(&block);
        }
        let Some(line) = line else {
            return;
        };
        self.release();
        // The root's error is held: it may be the run's failure, said once at the end.
        if let EventKind::Error { message } = &event.kind
            && event.agent_id == self.root
        {
            self.held = Some((line, message.clone()));
        } else {
            self.line(&line);
        }
    }

    fn release(&mut self) {
        if let Some((line, _)) = self.held.take() {
            self.line(&line);
        }
    }

    /// Ends the output once: the table, unless the run failed before anything answered.
    fn end(&mut self, failure: Option<&str>, table: impl FnOnce() -> String) {
        if self.json || std::mem::replace(&mut self.ended, true) {
            return;
        }
        if let Some(block) = self.progress.board_block() {
            self.release();
            self.line(&block);
        }
        match failure {
            Some(reason) if !self.answered => {
                if self.held.as_ref().is_some_and(|(_, m)| m == reason) {
                    self.held = None;
                }
                self.release();
            }
            _ => {
                self.release();
                let table = table();
                self.pending.push_str(&table);
            }
        }
        self.flush();
    }

    /// Lines after everything else, on stderr in either mode (stdout may be JSON).
    fn last_lines(&mut self, lines: &[String]) {
        for line in lines {
            self.line(line);
        }
        self.flush();
    }

    fn line(&mut self, line: &str) {
        self.pending.push_str(line);
        self.pending.push('\n');
    }

    /// Writes the pending lines to stderr in one go.
    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(self.pending.as_bytes());
        let _ = err.flush();
        self.pending.clear();
    }
}
