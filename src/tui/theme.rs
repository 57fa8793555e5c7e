//! Colours and emphasis in one place, so `NO_COLOR` can turn every colour off at once.
//! Only the 16-colour ANSI palette is used: the user's terminal theme decides what "red"
//! looks like, which keeps the screen readable on light and dark backgrounds alike.

use crate::protocol::AgentStatus;
use ratatui::style::{Color, Modifier, Style};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Theme {
    /// False when `NO_COLOR` is set: styles keep their modifiers (bold, reversed…) only.
    pub color: bool,
}

impl Default for Theme {
    fn default() -> Self {
        Self { color: true }
    }
}

impl Theme {
    /// Honours <https://no-color.org>: any non-empty `NO_COLOR` disables colour.
    pub fn from_env() -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Self { color: !no_color }
    }

    pub fn fg(&self, c: Color) -> Style {
        if self.color {
            Style::default().fg(c)
        } else {
            Style::default()
        }
    }

    pub fn bold(&self, c: Color) -> Style {
        self.fg(c).add_modifier(Modifier::BOLD)
    }

    pub fn dim(&self) -> Style {
        Style::default().add_modifier(Modifier::DIM)
    }

    pub fn selected(&self) -> Style {
        Style::default().add_modifier(Modifier::REVERSED)
    }

    pub fn accent(&self) -> Style {
        self.fg(Color::Cyan)
    }

    pub fn error(&self) -> Style {
        self.fg(Color::Red)
    }

    pub fn ok(&self) -> Style {
        self.fg(Color::Green)
    }

    pub fn warn(&self) -> Style {
        self.fg(Color::Yellow)
    }

    pub fn code(&self) -> Style {
        self.fg(Color::Yellow)
    }

    /// Border of a pane; the focused one stands out in colour and weight.
    pub fn border(&self, focused: bool) -> Style {
        if focused {
            self.bold(Color::Cyan)
        } else {
            Style::default()
        }
    }

    pub fn status(&self, s: AgentStatus) -> Style {
        self.fg(status_color(s))
    }
}

/// A distinct symbol per status, readable without colour.
pub fn status_symbol(s: AgentStatus) -> &'static str {
    match s {
        AgentStatus::Running => "●",
        AgentStatus::Waiting => "◐",
        AgentStatus::Inactive => "○",
        AgentStatus::Completed => "✓",
        AgentStatus::Failed => "✗",
        AgentStatus::Cancelled => "⊘",
        AgentStatus::Paused => "‖",
        AgentStatus::Interrupted => "↯",
    }
}

pub fn status_color(s: AgentStatus) -> Color {
    match s {
        AgentStatus::Running => Color::Cyan,
        AgentStatus::Waiting => Color::Yellow,
        AgentStatus::Inactive => Color::Blue,
        AgentStatus::Completed => Color::Green,
        AgentStatus::Failed => Color::Red,
        AgentStatus::Cancelled => Color::Magenta,
        AgentStatus::Paused => Color::LightYellow,
        AgentStatus::Interrupted => Color::LightRed,
    }
}
