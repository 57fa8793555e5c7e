//! The save-as-role prompt (`s` in `/agents`): the name of the role file a worker's role
//! and prompt are saved as. The front end only asks; the core writes the file
//! (`Op::SaveRole`) and answers with `role_saved` or an error.

use crate::protocol::AgentId;
use crate::tui::popup;
use crate::tui::state::SessionState;
use crate::tui::theme::Theme;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

/// Longest name the prompt takes.
const MAX_NAME: usize = 48;

/// What a key did to the prompt.
#[derive(Debug, PartialEq, Eq)]
pub enum NameKey {
    Save(String),
    Cancel,
    Edited,
}

/// A name that is also a file name and a command-line word: letters, digits, `_`, `-`.
fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// A name to start from: the role and the worker's short id, which no role has yet.
pub fn suggestion(role: &str, id: AgentId) -> String {
    let role: String = role.chars().filter(|c| name_char(*c)).collect();
    format!("{role}_{}", id.short())
}

/// One key for the name being typed in `name`. Characters a role name cannot hold are
/// not taken, so what Enter sends is a valid name (or nothing, when empty).
pub fn key(name: &mut String, key: KeyEvent) -> NameKey {
    let plain = !key
        .modifiers
        .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
    match key.code {
        KeyCode::Esc => NameKey::Cancel,
        KeyCode::Enter if !name.is_empty() => NameKey::Save(name.clone()),
        KeyCode::Backspace => {
            name.pop();
            NameKey::Edited
        }
        KeyCode::Char('u') if !plain => {
            name.clear();
            NameKey::Edited
        }
        KeyCode::Char(c) if plain && name_char(c) && name.len() < MAX_NAME => {
            name.push(c);
            NameKey::Edited
        }
        _ => NameKey::Edited,
    }
}

/// Draws the prompt for saving `id`'s role as `name`.
pub fn render(
    buf: &mut Buffer,
    area: Rect,
    s: &SessionState,
    id: AgentId,
    name: &str,
    theme: &Theme,
) {
    let Some(a) = s.agent(id) else { return };
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let key = |k: &'static str| Span::styled(k, theme.bold(Color::Cyan));
    let mut what = vec![
        Span::raw("Save the role and prompt of "),
        Span::styled(format!("{} {}", a.role, id.short()), bold),
    ];
    if a.options.instructions.is_some() || a.options.tools.is_some() {
        what.push(Span::raw(" (with its spawn's instructions and tools)"));
    }
    what.push(Span::raw(" as a role file:"));
    let w = area.width.saturating_sub(4).min(70);
    let mut lines = crate::tui::wrap::wrap(&what, w.saturating_sub(4) as usize, &[], &[]);
    lines.extend([
        Line::default(),
        Line::from(vec![
            Span::styled("name › ", theme.dim()),
            Span::styled(name.to_string(), theme.bold(Color::Yellow)),
            Span::styled("▏", theme.accent()),
        ]),
        Line::styled(format!("  .squad/roles/{name}.toml"), theme.dim()),
        Line::default(),
        Line::from(vec![
            key("Enter"),
            Span::raw(" save   "),
            key("Esc"),
            Span::raw(" cancel"),
        ]),
    ]);
    let rect = popup::centered(area, w, lines.len() as u16 + 2);
    let inner = popup::frame(
        buf,
        rect,
        Line::styled(" save as role ", theme.bold(Color::Cyan)),
        theme.accent(),
    );
    popup::draw_lines(buf, inner, &lines, 0);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(name: &mut String, code: KeyCode) -> NameKey {
        key(name, KeyEvent::new(code, KeyModifiers::NONE))
    }

    #[test]
    fn only_name_characters_are_taken_and_enter_needs_a_name() {
        let mut name = String::new();
        assert_eq!(press(&mut name, KeyCode::Enter), NameKey::Edited);
        for c in "my role/x-1".chars() {
            press(&mut name, KeyCode::Char(c));
        }
        assert_eq!(name, "myrolex-1");
        press(&mut name, KeyCode::Backspace);
        assert_eq!(
            press(&mut name, KeyCode::Enter),
            NameKey::Save("myrolex-".into())
        );
        assert_eq!(press(&mut name, KeyCode::Esc), NameKey::Cancel);
        let id = AgentId::new();
        assert_eq!(
            suggestion("code reviewer", id),
            format!("codereviewer_{}", id.short())
        );
    }
}
