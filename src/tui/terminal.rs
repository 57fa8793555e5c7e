//! Terminal setup and restore. Restoring happens on every way out: normal return and
//! errors (the guard's `Drop`) and panics (a hook that restores before the message is
//! printed, so it lands on a usable screen).

use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
    KeyboardEnhancementFlags, PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use std::io::{self, Stdout};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

pub type Tui = Terminal<CrosstermBackend<Stdout>>;

/// Whether the terminal is in TUI mode (so `restore` runs its steps once).
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Whether keyboard enhancement was pushed (and must be popped).
static ENHANCED: AtomicBool = AtomicBool::new(false);
/// Set by the panic hook. A panic anywhere (a runtime task included) has already
/// restored the terminal, so the event loop must stop drawing and end.
static PANICKED: AtomicBool = AtomicBool::new(false);
static HOOK: Once = Once::new();

pub fn panicked() -> bool {
    PANICKED.load(Ordering::SeqCst)
}

/// Restores the terminal when dropped.
pub struct TerminalGuard(());

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

pub fn setup() -> io::Result<(Tui, TerminalGuard)> {
    install_panic_hook();
    enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    let guard = TerminalGuard(());
    let mut out = io::stdout();
    execute!(
        out,
        EnterAlternateScreen,
        EnableMouseCapture,
        EnableBracketedPaste
    )?;
    // Lets Shift+Enter be told from Enter where the terminal supports it (kitty, foot,
    // WezTerm…); elsewhere Alt+Enter and Ctrl+J still make a new line.
    if matches!(
        crossterm::terminal::supports_keyboard_enhancement(),
        Ok(true)
    ) && execute!(
        out,
        PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
    )
    .is_ok()
    {
        ENHANCED.store(true, Ordering::SeqCst);
    }
    let mut terminal = Terminal::new(CrosstermBackend::new(out))?;
    terminal.hide_cursor()?;
    terminal.clear()?;
    Ok((terminal, guard))
}

/// Puts the terminal back as it was. Safe to call more than once, and from a panic.
pub fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut out = io::stdout();
    if ENHANCED.swap(false, Ordering::SeqCst) {
        let _ = execute!(out, PopKeyboardEnhancementFlags);
    }
    let _ = execute!(
        out,
        DisableBracketedPaste,
        DisableMouseCapture,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
    let _ = disable_raw_mode();
}

fn install_panic_hook() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICKED.store(true, Ordering::SeqCst);
            restore();
            previous(info);
        }));
    });
}
