//! `/rewind` (Esc Esc on an empty composer): the user's messages with what changed in the
//! files since each; pick one, then what to put back. The front end only asks: the core
//! lists (`Op::ListCheckpoints`), rewinds (`Op::Rewind`) and, when files the user changed
//! since would be overwritten, says which first (`rewind_refused`), so this view asks.

use crate::protocol::{CheckpointSummary, Op};
use crate::tui::popup;
use crate::tui::theme::Theme;
use crossterm::event::{KeyCode, KeyEvent};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Color;
use ratatui::text::{Line, Span};

/// What each choice puts back: (label, files, conversation).
const CHOICES: [(&str, bool, bool); 4] = [
    ("Restore the files and the conversation", true, true),
    ("Restore the conversation only", false, true),
    ("Restore the files only", true, false),
    ("Never mind", false, false),
];

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Stage {
    /// Picking the message (the list may still be on its way).
    #[default]
    Pick,
    /// Picking what to put back, for the picked message.
    Choose(usize),
    /// The core refused: files changed since by the user; overwrite them?
    Confirm,
}

/// The rewind the user asked for last, so a refused one can be forced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Asked {
    pub message: u32,
    pub files: bool,
    pub conversation: bool,
}

impl Asked {
    pub fn op(self, force: bool) -> Op {
        Op::Rewind {
            message: self.message,
            files: self.files,
            conversation: self.conversation,
            force,
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct RewindView {
    /// `None` until the core's list arrives.
    pub list: Option<Vec<CheckpointSummary>>,
    pub selected: usize,
    pub stage: Stage,
    pub asked: Option<Asked>,
    /// The files a refused rewind would overwrite.
    pub refused: Vec<String>,
}

/// What a key in the view asks of the app.
#[derive(Debug, PartialEq)]
pub enum RewindKey {
    Nothing,
    Close,
    /// Send this (the view stays, so its list still names the message once the core
    /// answers).
    Send(Op),
}

impl RewindView {
    /// What the user wrote as message `message`, from the list.
    pub fn text_of(&self, message: u32) -> Option<&str> {
        let list = self.list.as_ref()?;
        list.iter()
            .find(|s| s.message == message)
            .map(|s| s.text.as_str())
    }

    /// A fresh view, waiting for the list.
    pub fn opening() -> Self {
        Self::default()
    }

    pub fn set_list(&mut self, list: Vec<CheckpointSummary>) {
        self.selected = list.len().saturating_sub(1);
        self.list = Some(list);
    }

    /// A refused rewind: ask whether to overwrite.
    pub fn refused(&mut self, conflicts: Vec<String>) {
        self.refused = conflicts;
        self.stage = Stage::Confirm;
    }

    pub fn key(&mut self, key: KeyEvent) -> RewindKey {
        match self.stage {
            Stage::Pick => self.pick_key(key),
            Stage::Choose(choice) => self.choose_key(choice, key),
            Stage::Confirm => match (key.code, self.asked) {
                (KeyCode::Char('y' | 'Y'), Some(asked)) => RewindKey::Send(asked.op(true)),
                (KeyCode::Char('n' | 'N' | 'q') | KeyCode::Esc, _) => RewindKey::Close,
                _ => RewindKey::Nothing,
            },
        }
    }

    fn pick_key(&mut self, key: KeyEvent) -> RewindKey {
        let n = self.list.as_ref().map_or(0, Vec::len);
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => return RewindKey::Close,
            KeyCode::Up | KeyCode::Char('k') => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => {
                self.selected = (self.selected + 1).min(n.saturating_sub(1));
            }
            KeyCode::Enter if n > 0 => self.stage = Stage::Choose(0),
            _ => {}
        }
        RewindKey::Nothing
    }

    fn choose_key(&mut self, choice: usize, key: KeyEvent) -> RewindKey {
        match key.code {
            KeyCode::Esc => self.stage = Stage::Pick,
            KeyCode::Up | KeyCode::Char('k') => {
                self.stage = Stage::Choose(choice.saturating_sub(1))
            }
            KeyCode::Down | KeyCode::Char('j') => {
                self.stage = Stage::Choose((choice + 1).min(CHOICES.len() - 1));
            }
            KeyCode::Enter => {
                let (_, files, conversation) = CHOICES[choice];
                let picked = self.list.as_ref().and_then(|l| l.get(self.selected));
                let (Some(picked), true) = (picked, files || conversation) else {
                    return RewindKey::Close;
                };
                let asked = Asked {
                    message: picked.message,
                    files,
                    conversation,
                };
                self.asked = Some(asked);
                return RewindKey::Send(asked.op(false));
            }
            _ => {}
        }
        RewindKey::Nothing
    }
}

/// The view, as a popup over `area`.
pub fn render(buf: &mut Buffer, area: Rect, view: &RewindView, theme: &Theme) {
    let lines = match view.stage {
        Stage::Pick => pick_lines(view, theme),
        Stage::Choose(choice) => choose_lines(view, choice, theme),
        Stage::Confirm => confirm_lines(view, theme),
    };
    let w = area.width.saturating_sub(4).min(90);
    let h = (lines.len() as u16 + 2).min(area.height);
    let rect = popup::centered(area, w, h);
    let title = Line::styled(" rewind ", theme.bold(Color::Cyan));
    let inner = popup::frame(buf, rect, title, theme.accent());
    let body = inner.height.saturating_sub(1) as usize;
    // Keep the selected message in sight in a long list.
    let scroll = match view.stage {
        Stage::Pick => (view.selected + 2).saturating_sub(body),
        _ => 0,
    };
    let (last, rest) = lines
        .split_last()
        .map_or((None, &[][..]), |(l, r)| (Some(l), r));
    let top = Rect::new(
        inner.x,
        inner.y,
        inner.width,
        inner.height.saturating_sub(1),
    );
    popup::draw_lines(buf, top, rest, scroll);
    if let (Some(last), true) = (last, inner.height > 0) {
        let bottom = Rect::new(inner.x, inner.bottom() - 1, inner.width, 1);
        popup::draw_lines(buf, bottom, std::slice::from_ref(last), 0);
    }
}

fn pick_lines(view: &RewindView, theme: &Theme) -> Vec<Line<'static>> {
    let Some(list) = &view.list else {
        return vec![
            Line::raw("reading the checkpoints…"),
            popup::hint("Esc close", theme),
        ];
    };
    let mut lines = vec![Line::raw("Back to before which message?"), Line::default()];
    if list.is_empty() {
        lines.push(Line::styled(
            "no message has a checkpoint yet: one is taken before each message you send",
            theme.dim(),
        ));
    }
    for (i, s) in list.iter().enumerate() {
        let mark = if i == view.selected { "› " } else { "  " };
        let first = s.text.lines().next().unwrap_or("").to_string();
        let style = if i == view.selected {
            theme.selected()
        } else {
            ratatui::style::Style::default()
        };
        lines.push(Line::from(vec![
            Span::styled(format!("{mark}{:>3}  ", s.message), style),
            Span::styled(clip(&first, 60), style),
        ]));
        lines.push(Line::styled(format!("        {}", changes(s)), theme.dim()));
    }
    lines.push(popup::hint("↑↓ pick · Enter choose · Esc close", theme));
    lines
}

/// "2 files changed since: M src/a.rs, A b.rs".
fn changes(s: &CheckpointSummary) -> String {
    match &s.changes {
        Err(why) => format!("files: no checkpoint ({why})"),
        Ok(c) if c.is_empty() => "no file changed since".into(),
        Ok(c) => {
            let named: Vec<String> = c
                .iter()
                .take(4)
                .map(|f| format!("{} {}", f.kind.letter(), f.path))
                .collect();
            let more = c.len().saturating_sub(4);
            let more = if more > 0 {
                format!(", +{more} more")
            } else {
                String::new()
            };
            let n = c.len();
            let files = if n == 1 { "file" } else { "files" };
            format!("{n} {files} changed since: {}{more}", named.join(", "))
        }
    }
}

fn choose_lines(view: &RewindView, choice: usize, theme: &Theme) -> Vec<Line<'static>> {
    let picked = view.list.as_ref().and_then(|l| l.get(view.selected));
    let mut lines = vec![];
    if let Some(s) = picked {
        let first = s.text.lines().next().unwrap_or("");
        lines.push(Line::raw(format!(
            "Message {}: {}",
            s.message,
            clip(first, 70)
        )));
        lines.push(Line::styled(changes(s), theme.dim()));
        lines.push(Line::default());
    }
    for (i, (label, _, _)) in CHOICES.iter().enumerate() {
        let (mark, style) = if i == choice {
            ("› ", theme.selected())
        } else {
            ("  ", ratatui::style::Style::default())
        };
        lines.push(Line::styled(format!("{mark}{label}"), style));
    }
    lines.push(Line::default());
    lines.push(popup::hint("↑↓ choose · Enter do it · Esc back", theme));
    lines
}

fn confirm_lines(view: &RewindView, theme: &Theme) -> Vec<Line<'static>> {
    let mut lines = vec![
        Line::styled(
            "Nothing was rewound: these files changed since, and not by squad:",
            theme.warn(),
        ),
        Line::default(),
    ];
    for f in view.refused.iter().take(12) {
        lines.push(Line::raw(format!("  {f}")));
    }
    if view.refused.len() > 12 {
        lines.push(Line::raw(format!("  … {} more", view.refused.len() - 12)));
    }
    lines.push(Line::default());
    lines.push(Line::from(vec![
        Span::styled("y", theme.bold(Color::Cyan)),
        Span::raw(" overwrite them too   "),
        Span::styled("n", theme.bold(Color::Cyan)),
        Span::raw(" / "),
        Span::styled("Esc", theme.bold(Color::Cyan)),
        Span::raw(" keep them (nothing rewound)"),
    ]));
    lines
}

fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let cut: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}

/// Undoing a worker's merge would overwrite lines the user changed since: asks.
/// `u` on a worker (`who`, `implementer 3941221a`): asked before anything is undone,
/// and again, with the files, when the core found lines the user changed since.
pub fn render_confirm_undo(
    buf: &mut Buffer,
    area: Rect,
    who: &str,
    conflicts: &[String],
    theme: &Theme,
) {
    if conflicts.is_empty() {
        let lines = vec![
            Line::raw(format!(
                "Take the merged change of {who} back out of the workspace?"
            )),
            Line::styled(
                "Lines changed since the merge stay as they are.",
                theme.dim(),
            ),
            Line::default(),
            Line::from(vec![
                Span::styled("y", theme.bold(Color::Cyan)),
                Span::raw(" undo the merge   "),
                Span::styled("n", theme.bold(Color::Cyan)),
                Span::raw(" / "),
                Span::styled("Esc", theme.bold(Color::Cyan)),
                Span::raw(" keep it"),
            ]),
        ];
        let w = area.width.saturating_sub(4).min(84);
        let rect = popup::centered(area, w, lines.len() as u16 + 2);
        let title = Line::styled(" undo a worker's merge ", theme.bold(Color::Yellow));
        let inner = popup::frame(buf, rect, title, theme.warn());
        popup::draw_lines(buf, inner, &lines, 0);
        return;
    }
    let mut lines = vec![
        Line::styled(
            "Nothing was undone: you changed these lines since the merge:",
            theme.warn(),
        ),
        Line::default(),
    ];
    for f in conflicts.iter().take(12) {
        lines.push(Line::raw(format!("  {}", clip(f, 84))));
    }
    lines.push(Line::default());
    lines.push(Line::from(vec![
        Span::styled("y", theme.bold(Color::Cyan)),
        Span::raw(" undo anyway (those files go back to before the merge)   "),
        Span::styled("n", theme.bold(Color::Cyan)),
        Span::raw(" / "),
        Span::styled("Esc", theme.bold(Color::Cyan)),
        Span::raw(" keep"),
    ]));
    let w = area.width.saturating_sub(4).min(96);
    let rect = popup::centered(area, w, lines.len() as u16 + 2);
    let title = Line::styled(" undo a worker's merge ", theme.bold(Color::Yellow));
    let inner = popup::frame(buf, rect, title, theme.warn());
    popup::draw_lines(buf, inner, &lines, 0);
}
