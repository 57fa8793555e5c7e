//! The async loop: terminal input, runtime events and redraws. Input and events only
//! change the `App`; drawing happens at most every `FRAME` and only when something
//! changed, and all queued events are folded in before a frame is drawn, so a fast
//! stream of deltas costs one frame, not one per delta.

use crate::protocol::{Event, Op};
use crate::tui::app::{Action, App, Exit};
use crate::tui::terminal::{self, Tui};
use anyhow::{Context, anyhow};
use crossterm::event::EventStream;
use futures::StreamExt;
use std::time::{Duration, Instant};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

/// Shortest time between two frames (about 60 per second).
const FRAME: Duration = Duration::from_millis(16);
/// Redraw period while clocks run (elapsed times) with nothing else happening.
const TICK: Duration = Duration::from_millis(500);
/// Events folded in per batch before input gets a turn again.
const MAX_BATCH: usize = 4096;
/// How long to wait for the runtime to finish after `Op::Shutdown`.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(3);

/// Runs one session's screen until the user leaves it (`Ok(Some(exit))`: `Op::Shutdown`
/// was sent), the terminal input ends (`Ok(None)`), or something fails. `input` outlives
/// the session: crossterm's reader holds the terminal while a stream exists, so there
/// must be only one for the life of the process.
pub async fn run_loop(
    terminal: &mut Tui,
    input: &mut EventStream,
    app: &mut App,
    ops: &UnboundedSender<Op>,
    events: &mut UnboundedReceiver<Event>,
    first_prompt: Option<String>,
) -> anyhow::Result<Option<Exit>> {
    if let Some(text) = first_prompt.filter(|t| !t.trim().is_empty()) {
        ops.send(Op::UserMessage { to: None, text })
            .map_err(|_| anyhow!("the session ended before the first message"))?;
    }
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut dirty = true;
    let mut last_draw: Option<Instant> = None;

    loop {
        if terminal::panicked() {
            return Err(anyhow!("stopped after a panic (its message is above)"));
        }
        let due = last_draw.map(|t| t + FRAME);
        if dirty && due.is_none_or(|d| Instant::now() >= d) {
            terminal
                .draw(|f| app.render(f, Instant::now()))
                .context("drawing the screen")?;
            last_draw = Some(Instant::now());
            dirty = false;
        }
        let wake = if dirty { due } else { None };
        tokio::select! {
            ev = events.recv() => {
                let Some(ev) = ev else {
                    return Err(anyhow!("the session ended unexpectedly"));
                };
                let now = Instant::now();
                app.apply(&ev, now);
                for _ in 0..MAX_BATCH {
                    match events.try_recv() {
                        Ok(ev) => app.apply(&ev, now),
                        Err(_) => break,
                    }
                }
                dirty = true;
            }
            term = input.next() => {
                let Some(term) = term else { return Ok(None) };
                let term = term.context("reading the terminal")?;
                for action in app.on_terminal_event(term, Instant::now()) {
                    match action {
                        Action::Send(op) => {
                            if ops.send(op).is_err() {
                                return Err(anyhow!("the session ended unexpectedly"));
                            }
                        }
                        Action::Quit(exit) => {
                            drain_until_closed(events).await;
                            return Ok(Some(exit));
                        }
                    }
                }
                dirty = true;
            }
            _ = sleep_until(wake), if wake.is_some() => {}
            _ = tick.tick() => {
                if app.animating() {
                    dirty = true;
                }
            }
        }
    }
}

async fn sleep_until(t: Option<Instant>) {
    if let Some(t) = t {
        tokio::time::sleep_until(t.into()).await;
    }
}

/// After `Op::Shutdown`, lets the runtime finish (and close the log) before we leave.
async fn drain_until_closed(events: &mut UnboundedReceiver<Event>) {
    let _ = tokio::time::timeout(SHUTDOWN_WAIT, async {
        while events.recv().await.is_some() {}
    })
    .await;
}
