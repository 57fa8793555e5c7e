//! The ask-user dialog: an agent's question, its options (numbered) and a field for a
//! typed answer, drawn over everything until the user answers or declines. The view state
//! (highlighted option, the field) lives here; the question itself is session state.

use crate::tui::popup;
use crate::tui::state::{PendingPlan, PendingQuestion};
use crate::tui::theme::Theme;
use crate::tui::wrap::{spans_width, wrap};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;
use ratatui_textarea::{TextArea, WrapMode};
use std::time::Instant;

/// Rows the answer field grows to before it scrolls.
const FIELD_ROWS: usize = 3;

/// The question in front, as the user works on it.
pub struct QuestionView {
    pub request_id: u64,
    /// When it came to the front: keys typed sooner are ignored, so a keystroke meant
    /// for the composer cannot answer a question the user has not seen.
    pub shown: Instant,
    /// The highlighted option; `None` while the answer field has the focus.
    pub choice: Option<usize>,
    field: TextArea<'static>,
}

/// What a key did to the question.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    Answer(String),
    Decline,
}

impl QuestionView {
    pub fn new(request_id: u64, now: Instant) -> Self {
        let mut field = TextArea::default();
        field.set_wrap_mode(WrapMode::WordOrGlyph);
        field.set_cursor_line_style(Style::default());
        Self {
            request_id,
            shown: now,
            choice: None,
            field,
        }
    }

    /// The typed answer.
    pub fn typed(&self) -> String {
        self.field.lines().join("\n").trim().to_string()
    }

    /// Pasted text goes into the field, on one line: Enter is what sends.
    pub fn paste(&mut self, text: &str) {
        let flat: String = text
            .chars()
            .map(|c| if c == '\r' || c == '\n' { ' ' } else { c })
            .collect();
        self.field.insert_str(flat);
        self.choice = None;
    }

    /// One key: a digit picks option N (while nothing is typed), ↑↓ move between the
    /// options and the field, Enter sends the highlighted option or the typed text,
    /// Esc declines; anything else edits the field.
    pub fn key(&mut self, key: KeyEvent, options: &[String]) -> Option<Reply> {
        let n = options.len();
        let plain = !key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
        match key.code {
            KeyCode::Esc => return Some(Reply::Decline),
            KeyCode::Enter => {
                return match self.choice.and_then(|i| options.get(i)) {
                    Some(option) => Some(Reply::Answer(option.clone())),
                    None => {
                        let typed = self.typed();
                        (!typed.is_empty()).then_some(Reply::Answer(typed))
                    }
                };
            }
            KeyCode::Up if n > 0 => {
                self.choice = Some(self.choice.map_or(n - 1, |i| i.saturating_sub(1)));
            }
            KeyCode::Down => {
                self.choice = self.choice.and_then(|i| (i + 1 < n).then_some(i + 1));
            }
            KeyCode::Char(c) if plain && self.typed().is_empty() && c.is_ascii_digit() => {
                let k = c.to_digit(10).unwrap_or(0) as usize;
                if (1..=n).contains(&k) {
                    return Some(Reply::Answer(options[k - 1].clone()));
                }
                self.edit(key);
            }
            // The field is one paragraph: Enter sends, so no newline keys.
            KeyCode::Char('j' | 'm') if !plain => {}
            _ => self.edit(key),
        }
        None
    }

    fn edit(&mut self, key: KeyEvent) {
        if self.field.input(key) {
            self.choice = None;
        }
    }

    /// Rows of the field at `width` columns.
    fn field_rows(&self, width: usize) -> usize {
        let width = width.max(1);
        self.field
            .lines()
            .iter()
            .map(|l| spans_width(&[Span::raw(l.as_str())]).div_ceil(width).max(1))
            .sum::<usize>()
            .clamp(1, FIELD_ROWS)
    }
}

/// How the dialog names itself: a question, or a worker's plan awaiting approval.
struct Framing {
    title: &'static str,
    asks: &'static str,
    placeholder: Option<&'static str>,
    pick: &'static str,
    esc: &'static str,
}

const QUESTION: Framing = Framing {
    title: "question",
    asks: " asks you",
    placeholder: None,
    pick: " pick   ",
    esc: " decline",
};

/// A plan's one option approves; a typed reason rejects; Esc leaves it to the supervisor.
const PLAN: Framing = Framing {
    title: "plan",
    asks: " asks you to approve its plan",
    placeholder: Some("type why you reject it, or pick 1 to approve"),
    pick: " approve   ",
    esc: " later",
};

/// What the plan dialog offers: its one option.
pub const APPROVE_PLAN: &str = "Approve: its writing tools come back";

/// Draws the dialog for a worker's plan awaiting approval, like a question whose one
/// option approves and whose typed answer is the reason it is rejected.
pub fn render_plan(
    buf: &mut Buffer,
    area: Rect,
    p: &PendingPlan,
    view: &mut QuestionView,
    waiting: usize,
    t: &Theme,
) {
    let q = PendingQuestion {
        request_id: p.plan_id,
        agent_id: p.agent_id,
        role: p.role.clone(),
        question: p.plan.clone(),
        options: vec![APPROVE_PLAN.to_string()],
        seq: p.seq,
    };
    render_framed(buf, area, &q, view, waiting, t, &PLAN);
}

/// Draws the dialog for `q` over `area`; `waiting` counts the dialogs queued behind it.
pub fn render(
    buf: &mut Buffer,
    area: Rect,
    q: &PendingQuestion,
    view: &mut QuestionView,
    waiting: usize,
    t: &Theme,
) {
    render_framed(buf, area, q, view, waiting, t, &QUESTION);
}

fn render_framed(
    buf: &mut Buffer,
    area: Rect,
    q: &PendingQuestion,
    view: &mut QuestionView,
    waiting: usize,
    t: &Theme,
    f: &Framing,
) {
    let w = area.width.saturating_sub(4).clamp(20, 100);
    let inner_w = w.saturating_sub(4) as usize;
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let question = wrap(&[Span::styled(q.question.clone(), bold)], inner_w, &[], &[]);
    let options = option_lines(q, view.choice, inner_w, t);
    let prompt = "› ";
    let field_w = inner_w.saturating_sub(prompt.len());
    let field_h = view.field_rows(field_w);
    // Head, blank, question, blank, options and a blank, field, blank, keys.
    let opts_h = if options.is_empty() {
        0
    } else {
        options.len() + 1
    };
    let fixed = 1 + 1 + 1 + opts_h + field_h + 1 + 1;
    let want = (question.len() + fixed) as u16 + 2;
    let rect = popup::centered(area, w, want.min(area.height.saturating_sub(2).max(8)));
    let accent = t.bold(Color::Magenta);
    let title = Line::from(Span::styled(
        format!(" {} · {} {} ", f.title, q.role, q.agent_id.short()),
        accent,
    ));
    let inner = popup::frame(buf, rect, title, accent);
    if inner.height < 3 {
        return;
    }
    let row = |y: u16, h: usize| {
        let y = y.min(inner.bottom());
        Rect::new(inner.x, y, inner.width, (h as u16).min(inner.bottom() - y))
    };
    let head = Line::from(vec![Span::styled(q.role.clone(), bold), Span::raw(f.asks)]);
    popup::draw_lines(buf, row(inner.y, 1), &[head], 0);

    // The question gives way first when the screen is short.
    let room = (inner.height as usize).saturating_sub(fixed).max(1);
    let mut shown_q = question;
    if shown_q.len() > room {
        shown_q.truncate(room);
        if let Some(last) = shown_q.last_mut() {
            last.spans.push(Span::styled(" …", t.dim()));
        }
    }
    let mut y = inner.y + 2;
    popup::draw_lines(buf, row(y, shown_q.len()), &shown_q, 0);
    y += shown_q.len() as u16 + 1;
    if !options.is_empty() {
        popup::draw_lines(buf, row(y, options.len()), &options, 0);
        y += options.len() as u16 + 1;
    }

    // The answer field: `› ` then the text area.
    let on_field = view.choice.is_none();
    let field_area = row(y, field_h);
    popup::draw_lines(
        buf,
        Rect::new(field_area.x, field_area.y, field_area.width, 1),
        &[Line::styled(
            prompt,
            if on_field { accent } else { t.dim() },
        )],
        0,
    );
    let text_area = Rect::new(
        field_area.x + 1 + prompt.chars().count() as u16,
        field_area.y,
        field_area
            .width
            .saturating_sub(2 + prompt.chars().count() as u16),
        field_area.height,
    );
    view.field.set_placeholder_text(match f.placeholder {
        Some(p) => p,
        None if q.options.is_empty() => "type your answer",
        None => "type an answer, or pick an option",
    });
    view.field.set_placeholder_style(t.dim());
    view.field.set_cursor_style(if on_field {
        t.selected()
    } else {
        Style::default()
    });
    (&view.field).render(text_area, buf);

    let keys = key_hints(
        q.options.len(),
        waiting,
        inner.width.saturating_sub(2),
        t,
        f,
    );
    popup::draw_lines(
        buf,
        Rect::new(inner.x, inner.bottom() - 1, inner.width, 1),
        &[keys],
        0,
    );
}

/// The keys line; `↑↓ choose` gives way first when it does not fit `width`.
fn key_hints(options: usize, waiting: usize, width: u16, t: &Theme, f: &Framing) -> Line<'static> {
    let key = |k: String| Span::styled(k, t.bold(Color::Cyan));
    let build = |arrows: bool| {
        let mut keys = Vec::new();
        match options {
            0 => {}
            1 => keys.extend([key("1".into()), Span::raw(f.pick)]),
            n => keys.extend([key(format!("1-{n}")), Span::raw(" pick   ")]),
        }
        if arrows && options > 0 {
            keys.extend([key("↑↓".into()), Span::raw(" choose   ")]);
        }
        keys.extend([
            key("Enter".into()),
            Span::raw(" send   "),
            key("Esc".into()),
            Span::raw(f.esc),
        ]);
        if waiting > 0 {
            keys.push(Span::styled(format!("   +{waiting} waiting"), t.warn()));
        }
        keys
    };
    let full = build(true);
    if spans_width(&full) <= width as usize {
        Line::from(full)
    } else {
        Line::from(build(false))
    }
}

/// `  1  Postgres`, the highlighted one marked `› ` and reversed; long ones wrap under
/// their text.
fn option_lines(
    q: &PendingQuestion,
    choice: Option<usize>,
    w: usize,
    t: &Theme,
) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for (i, option) in q.options.iter().enumerate() {
        let on = choice == Some(i);
        let style = if on { t.selected() } else { Style::default() };
        let marker = if on { "› " } else { "  " };
        let first = [
            Span::styled(marker, t.bold(Color::Magenta)),
            Span::styled(format!("{} ", i + 1), t.bold(Color::Cyan)),
        ];
        let indent = " ".repeat(spans_width(&first));
        out.extend(wrap(
            &[Span::styled(option.clone(), style)],
            w,
            &first,
            &[Span::raw(indent)],
        ));
    }
    out
}
