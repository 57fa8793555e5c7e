//! Markdown (what models write) to wrapped, styled lines: headings, lists, emphasis,
//! inline code, fenced code blocks, quotes, rules and simple tables.

use crate::tui::theme::Theme;
use crate::tui::wrap::{spans_width, wrap, wrap_hard};
use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

/// Renders `text` into lines at most `width` columns wide.
pub fn render(text: &str, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let mut r = Renderer {
        theme,
        width: width.max(4),
        out: Vec::new(),
        inline: Vec::new(),
        styles: vec![Style::default()],
        containers: Vec::new(),
        lists: Vec::new(),
        code: None,
        blank_before_next: false,
        table_cell: 0,
    };
    let opts = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES | Options::ENABLE_TASKLISTS;
    for ev in Parser::new_ext(text, opts) {
        r.event(ev);
    }
    r.flush();
    r.out
}

enum Container {
    Quote,
    Item { marker: String, used: bool },
}

struct Renderer<'t> {
    theme: &'t Theme,
    width: usize,
    out: Vec<Line<'static>>,
    /// Text of the block being read, flushed (wrapped) when the block ends.
    inline: Vec<Span<'static>>,
    styles: Vec<Style>,
    containers: Vec<Container>,
    /// Next number of each open list (`None` for bullets).
    lists: Vec<Option<u64>>,
    code: Option<String>,
    blank_before_next: bool,
    table_cell: usize,
}

impl Renderer<'_> {
    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn push_style(&mut self, f: impl FnOnce(Style) -> Style) {
        let s = f(self.style());
        self.styles.push(s);
    }

    fn pop_style(&mut self) {
        if self.styles.len() > 1 {
            self.styles.pop();
        }
    }

    /// Prefixes for the next block's first line and the lines after it.
    fn prefixes(&self) -> (Vec<Span<'static>>, Vec<Span<'static>>) {
        let mut first = Vec::new();
        let mut rest = Vec::new();
        for c in &self.containers {
            match c {
                Container::Quote => {
                    let s = Span::styled("│ ", self.theme.dim());
                    first.push(s.clone());
                    rest.push(s);
                }
                Container::Item { marker, used } => {
                    let pad = " ".repeat(spans_width(&[Span::raw(marker.as_str())]));
                    if *used {
                        first.push(Span::raw(pad.clone()));
                    } else {
                        first.push(Span::styled(marker.clone(), self.theme.accent()));
                    }
                    rest.push(Span::raw(pad));
                }
            }
        }
        (first, rest)
    }

    fn mark_items_used(&mut self) {
        for c in &mut self.containers {
            if let Container::Item { used, .. } = c {
                *used = true;
            }
        }
    }

    fn blank_if_needed(&mut self) {
        if self.blank_before_next && !self.out.is_empty() {
            let (_, rest) = self.prefixes();
            let quote_only: Vec<Span<'static>> = rest
                .into_iter()
                .filter(|s| s.content.trim() == "│")
                .collect();
            self.out.push(Line::from(quote_only));
        }
        self.blank_before_next = false;
    }

    /// Wraps the pending inline text as one block.
    fn flush(&mut self) {
        if self.inline.is_empty() {
            return;
        }
        let spans = std::mem::take(&mut self.inline);
        if spans.iter().all(|s| s.content.trim().is_empty()) {
            return;
        }
        self.blank_if_needed();
        let (first, rest) = self.prefixes();
        self.out.extend(wrap(&spans, self.width, &first, &rest));
        self.mark_items_used();
        self.blank_before_next = true;
    }

    fn event(&mut self, ev: Event<'_>) {
        match ev {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => {
                if let Some(code) = &mut self.code {
                    code.push_str(&t);
                } else {
                    self.inline
                        .push(Span::styled(t.into_string(), self.style()));
                }
            }
            Event::Code(t) => {
                let s = self.style().patch(self.theme.code());
                self.inline.push(Span::styled(t.into_string(), s));
            }
            Event::InlineMath(t) | Event::DisplayMath(t) => {
                self.inline
                    .push(Span::styled(t.into_string(), self.style()));
            }
            Event::Html(t) | Event::InlineHtml(t) => {
                if let Some(code) = &mut self.code {
                    code.push_str(&t);
                } else {
                    self.inline
                        .push(Span::styled(t.into_string(), self.style()));
                }
            }
            Event::FootnoteReference(t) => self.inline.push(Span::raw(format!("[{t}]"))),
            Event::SoftBreak => self.inline.push(Span::raw(" ")),
            Event::HardBreak => self.inline.push(Span::raw("\n")),
            Event::Rule => {
                self.flush();
                self.blank_if_needed();
                let (first, _) = self.prefixes();
                let w = self.width.saturating_sub(spans_width(&first));
                let mut spans = first;
                spans.push(Span::styled("─".repeat(w), self.theme.dim()));
                self.out.push(Line::from(spans));
                self.blank_before_next = true;
            }
            Event::TaskListMarker(done) => {
                self.inline
                    .push(Span::raw(if done { "[x] " } else { "[ ] " }));
            }
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => self.flush(),
            Tag::Heading { level, .. } => {
                self.flush();
                let theme = self.theme;
                self.push_style(|_| {
                    let s = theme.bold(Color::Cyan);
                    if level <= HeadingLevel::H2 {
                        s.add_modifier(Modifier::UNDERLINED)
                    } else {
                        s
                    }
                });
            }
            Tag::BlockQuote(_) => {
                self.flush();
                // The blank line before a quote sits outside it.
                self.blank_if_needed();
                self.containers.push(Container::Quote);
                self.push_style(|s| s.add_modifier(Modifier::ITALIC));
            }
            Tag::CodeBlock(_) => {
                self.flush();
                self.code = Some(String::new());
            }
            Tag::List(start) => {
                self.flush();
                if !self.lists.is_empty() {
                    // A nested list follows its item's text directly.
                    self.blank_before_next = false;
                }
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                if self
                    .containers
                    .iter()
                    .any(|c| matches!(c, Container::Item { .. }))
                {
                    self.blank_before_next = false;
                }
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        m
                    }
                    _ => {
                        let depth = self.lists.len().saturating_sub(1);
                        ["• ", "◦ ", "▪ "][depth % 3].to_string()
                    }
                };
                self.containers.push(Container::Item {
                    marker,
                    used: false,
                });
            }
            Tag::Emphasis => self.push_style(|s| s.add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.push_style(|s| s.add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self.push_style(|s| s.add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { .. } => {
                let theme = self.theme;
                self.push_style(|s| theme.accent().patch(s).add_modifier(Modifier::UNDERLINED));
            }
            Tag::Image { .. } => self.push_style(|s| s.add_modifier(Modifier::ITALIC)),
            Tag::Table(_) => self.flush(),
            Tag::TableHead => {
                self.table_cell = 0;
                self.push_style(|s| s.add_modifier(Modifier::BOLD));
            }
            Tag::TableRow => self.table_cell = 0,
            Tag::TableCell => {
                if self.table_cell > 0 {
                    self.inline.push(Span::styled(" │ ", self.theme.dim()));
                }
                self.table_cell += 1;
            }
            Tag::HtmlBlock
            | Tag::FootnoteDefinition(_)
            | Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition
            | Tag::Superscript
            | Tag::Subscript
            | Tag::MetadataBlock(_) => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::HtmlBlock | TagEnd::DefinitionListTitle => self.flush(),
            TagEnd::DefinitionListDefinition | TagEnd::FootnoteDefinition => self.flush(),
            TagEnd::Heading(_) => {
                self.flush();
                self.pop_style();
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.containers.pop();
                self.pop_style();
                self.blank_before_next = true;
            }
            TagEnd::CodeBlock => {
                let code = self.code.take().unwrap_or_default();
                self.blank_if_needed();
                let (first, rest) = self.prefixes();
                let code = code.strip_suffix('\n').unwrap_or(&code);
                let style = self.theme.code();
                for (i, line) in code.split('\n').enumerate() {
                    let mut prefix = if i == 0 { first.clone() } else { rest.clone() };
                    prefix.push(Span::styled("▏ ", self.theme.dim()));
                    self.out.extend(wrap_hard(line, style, self.width, &prefix));
                }
                self.mark_items_used();
                self.blank_before_next = true;
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                self.blank_before_next = true;
            }
            TagEnd::Item => {
                self.flush();
                self.containers.pop();
                self.blank_before_next = false;
            }
            TagEnd::Emphasis
            | TagEnd::Strong
            | TagEnd::Strikethrough
            | TagEnd::Link
            | TagEnd::Image => self.pop_style(),
            TagEnd::TableHead => {
                self.flush();
                self.blank_before_next = false;
                self.pop_style();
            }
            TagEnd::TableRow => {
                self.flush();
                self.blank_before_next = false;
            }
            TagEnd::Table => self.blank_before_next = true,
            TagEnd::TableCell
            | TagEnd::DefinitionList
            | TagEnd::Superscript
            | TagEnd::Subscript
            | TagEnd::MetadataBlock(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn renders_blocks() {
        let md = "# Title\n\nSome *emphasis* and `code`.\n\n- one\n- two\n  - nested\n\n1. first\n2. second\n\n```rust\nfn main() {}\n```\n\n> quoted";
        let lines = render(md, 40, &Theme::default());
        assert_eq!(
            plain(&lines),
            [
                "Title",
                "",
                "Some emphasis and code.",
                "",
                "• one",
                "• two",
                "  ◦ nested",
                "",
                "1. first",
                "2. second",
                "",
                "▏ fn main() {}",
                "",
                "│ quoted",
            ]
        );
        let title = &lines[0].spans[0];
        assert!(title.style.add_modifier.contains(Modifier::BOLD));
        let code = lines[2]
            .spans
            .iter()
            .find(|s| s.content == "code")
            .map(|s| s.style.fg);
        assert_eq!(code, Some(Some(Color::Yellow)));
    }

    #[test]
    fn list_items_wrap_with_hanging_indent() {
        let lines = render("- a long item that wraps around", 14, &Theme::default());
        assert_eq!(plain(&lines), ["• a long item", "  that wraps", "  around"]);
    }

    #[test]
    fn no_color_theme_has_no_colors() {
        let lines = render(
            "# T\n\n`x` [l](u)\n\n```\nc\n```",
            40,
            &Theme { color: false },
        );
        for l in &lines {
            for s in &l.spans {
                assert_eq!(s.style.fg, None, "{s:?}");
            }
        }
    }
}
