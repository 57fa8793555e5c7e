//! The full-screen terminal front end. It only sends [`crate::protocol::Op`]s and draws
//! [`crate::protocol::Event`]s: it never calls the model or touches files.
//!
//! Layout of the module: `state` folds events into data; `tree`, `conversation`,
//! `cells`, `markdown`, `composer`, `approval`, `details`, `help`, `status_bar` draw;
//! `keys` maps keys to actions; `app` ties them together; `event_loop` and `terminal`
//! are the only parts that touch the real terminal.

mod app;
mod approval;
mod cells;
mod commands;
mod composer;
mod conversation;
mod details;
mod event_loop;
mod format;
mod handle;
mod help;
mod keys;
mod markdown;
mod popup;
mod state;
mod status_bar;
mod terminal;
mod theme;
mod tree;
mod wrap;

use crate::protocol::Op;

pub use app::{Action, App, Focus, NARROW_WIDTH, Overlay};
pub use commands::{COMMANDS, SlashCommand};
pub use handle::{SessionHandle, SessionInfo};
pub use keys::APPROVAL_GUARD;
pub use state::{AgentView, Conversation, Entry, EntryKind, SessionState, ToolEntry};
pub use theme::Theme;

/// Runs the TUI until the user quits; sends `Op::Shutdown` on the way out and restores
/// the terminal on every exit path. `first_prompt` (from the command line) is sent as
/// the first message to the active persona.
pub async fn run(handle: SessionHandle, first_prompt: Option<String>) -> anyhow::Result<()> {
    let SessionHandle {
        ops,
        mut events,
        info,
    } = handle;
    let mut app = App::new(&info, Theme::from_env());
    let (mut tui, guard) = terminal::setup()?;
    let result = event_loop::run_loop(&mut tui, &mut app, &ops, &mut events, first_prompt).await;
    drop(guard);
    // However the loop ended, the runtime is told to stop (and close its log).
    if !matches!(result, Ok(true)) {
        let _ = ops.send(Op::Shutdown);
    }
    result.map(|_| ())
}
