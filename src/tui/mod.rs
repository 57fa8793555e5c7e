//! The full-screen terminal front end. It only sends [`crate::protocol::Op`]s and draws
//! [`crate::protocol::Event`]s: it never calls the model or touches files.
//!
//! Layout of the module: `state` folds events into data; `tree`, `tasks`, `timeline`,
//! `conversation`, `cells`, `markdown`, `composer`, `approval`, `question`, `details`,
//! `diff`, `help`, `review`, `save_role`, `status_bar` draw; `keys` maps keys to actions; `app` ties them together;
//! `event_loop` and `terminal` are the only parts that touch the real terminal.

mod app;
mod approval;
mod cells;
mod commands;
mod composer;
mod conversation;
mod details;
mod diff;
mod event_loop;
mod format;
mod handle;
mod help;
mod keys;
mod live;
mod markdown;
mod mcp;
mod mention;
mod models;
mod popup;
mod question;
mod review;
mod rewind;
mod save_role;
mod spend;
mod state;
mod status_bar;
mod tasks;
mod terminal;
mod theme;
mod timeline;
mod tree;
mod wrap;

use crate::protocol::Op;

pub use app::{Action, App, Exit, Focus, LeftPane, NARROW_WIDTH, Overlay};
pub use commands::{COMMANDS, SlashCommand};
pub use handle::{SessionHandle, SessionInfo};
pub use keys::APPROVAL_GUARD;
pub use state::{AgentView, Conversation, Entry, EntryKind, SessionState, ToolEntry};
pub use theme::Theme;

/// Runs the TUI until the user quits; sends `Op::Shutdown` on the way out and restores
/// the terminal on every exit path. `first_prompt` (from the command line) is sent as
/// the first message to the active persona. `/new` and `/resume` ask `launch` (given the
/// request and the current session's id) for the next session; the terminal and its input
/// stream stay the same throughout. Returns the id of the session on screen last when it
/// keeps a log (so it can be resumed).
pub async fn run<F, Fut>(
    handle: SessionHandle,
    first_prompt: Option<String>,
    mut launch: F,
) -> anyhow::Result<Option<String>>
where
    F: FnMut(Exit, String) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<SessionHandle>>,
{
    let (mut tui, guard) = terminal::setup()?;
    let mut input = crossterm::event::EventStream::new();
    let mut handle = handle;
    let mut prompt = first_prompt;
    let result = loop {
        let SessionHandle {
            ops,
            mut events,
            info,
        } = handle;
        let resumable = info.log_path.is_some().then(|| info.session_id.clone());
        let mut app = App::new(&info, Theme::from_env());
        let result = event_loop::run_loop(
            &mut tui,
            &mut input,
            &mut app,
            &ops,
            &mut events,
            prompt.take(),
        )
        .await;
        match result {
            Ok(Some(Exit::Quit)) => break Ok(resumable),
            Ok(Some(exit)) => match launch(exit, info.session_id.clone()).await {
                Ok(next) => handle = next,
                Err(e) => break Err(e),
            },
            other => {
                // However the loop ended, the runtime is told to stop (and close its log).
                let _ = ops.send(Op::Shutdown);
                break other.map(|_| resumable);
            }
        }
    };
    drop(guard);
    result
}
