//! Word wrapping of styled text into lines of a known width. We wrap ourselves (rather
//! than let `Paragraph` do it) so every history cell knows its exact height, which is what
//! makes scrolling through long histories cheap.

use crate::tui::format::width;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

enum Token {
    Word(Vec<(String, Style)>, usize),
    Space,
    Break,
}

fn tokenize(spans: &[Span<'_>]) -> Vec<Token> {
    let mut out: Vec<Token> = Vec::new();
    for span in spans {
        let mut word = String::new();
        // A word continues across spans when no whitespace separates them ("**bold**ly").
        let flush = |word: &mut String, out: &mut Vec<Token>| {
            if word.is_empty() {
                return;
            }
            let w = width(word);
            let piece = (std::mem::take(word), span.style);
            if let Some(Token::Word(parts, pw)) = out.last_mut() {
                parts.push(piece);
                *pw += w;
            } else {
                out.push(Token::Word(vec![piece], w));
            }
        };
        for c in span.content.chars() {
            if c == '\n' {
                flush(&mut word, &mut out);
                out.push(Token::Break);
            } else if c.is_whitespace() {
                flush(&mut word, &mut out);
                if !matches!(out.last(), Some(Token::Space)) {
                    out.push(Token::Space);
                }
            } else {
                word.push(c);
            }
        }
        flush(&mut word, &mut out);
    }
    out
}

/// Wraps `spans` to `total_width` columns. The first line starts with `first`, the
/// others with `rest` (a hanging indent). Always returns at least one line.
pub fn wrap(
    spans: &[Span<'_>],
    total_width: usize,
    first: &[Span<'static>],
    rest: &[Span<'static>],
) -> Vec<Line<'static>> {
    let mut lines: Vec<Line<'static>> = Vec::new();
    let mut cur: Vec<Span<'static>> = first.to_vec();
    let mut prefix_w = spans_width(first);
    let mut cur_w = 0usize;
    let mut pending_space = false;

    let avail = |prefix_w: usize| total_width.saturating_sub(prefix_w).max(1);

    let new_line = |lines: &mut Vec<Line<'static>>,
                    cur: &mut Vec<Span<'static>>,
                    cur_w: &mut usize,
                    prefix_w: &mut usize| {
        lines.push(Line::from(std::mem::take(cur)));
        *cur = rest.to_vec();
        *prefix_w = spans_width(rest);
        *cur_w = 0;
    };

    for tok in tokenize(spans) {
        match tok {
            Token::Break => {
                new_line(&mut lines, &mut cur, &mut cur_w, &mut prefix_w);
                pending_space = false;
            }
            Token::Space => pending_space = cur_w > 0,
            Token::Word(parts, w) => {
                let sp = usize::from(pending_space);
                if cur_w + sp + w <= avail(prefix_w) {
                    if pending_space {
                        cur.push(Span::raw(" "));
                    }
                    cur.extend(parts.into_iter().map(|(t, s)| Span::styled(t, s)));
                    cur_w += sp + w;
                } else if w <= avail(prefix_w) {
                    new_line(&mut lines, &mut cur, &mut cur_w, &mut prefix_w);
                    cur.extend(parts.into_iter().map(|(t, s)| Span::styled(t, s)));
                    cur_w = w;
                } else {
                    // Longer than a whole line (a URL, a path): split it by characters.
                    if cur_w > 0 {
                        new_line(&mut lines, &mut cur, &mut cur_w, &mut prefix_w);
                    }
                    for (text, style) in parts {
                        let mut chunk = String::new();
                        for c in text.chars() {
                            let cw = c.width().unwrap_or(0);
                            if cur_w + cw > avail(prefix_w) && cur_w > 0 {
                                cur.push(Span::styled(std::mem::take(&mut chunk), style));
                                new_line(&mut lines, &mut cur, &mut cur_w, &mut prefix_w);
                            }
                            chunk.push(c);
                            cur_w += cw;
                        }
                        if !chunk.is_empty() {
                            cur.push(Span::styled(chunk, style));
                        }
                    }
                }
                pending_space = false;
            }
        }
    }
    lines.push(Line::from(cur));
    lines
}

/// Wraps text verbatim (spaces kept, lines split at any character): for code and tool
/// output, where reflowing words would change the meaning.
pub fn wrap_hard(
    text: &str,
    style: Style,
    total_width: usize,
    prefix: &[Span<'static>],
) -> Vec<Line<'static>> {
    let avail = total_width.saturating_sub(spans_width(prefix)).max(1);
    let mut lines = Vec::new();
    for raw in text.split('\n') {
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        let raw = raw.replace('\t', "    ");
        let mut chunk = String::new();
        let mut w = 0;
        for c in raw.chars() {
            let cw = c.width().unwrap_or(0);
            if w + cw > avail && w > 0 {
                let mut spans = prefix.to_vec();
                spans.push(Span::styled(std::mem::take(&mut chunk), style));
                lines.push(Line::from(spans));
                w = 0;
            }
            chunk.push(c);
            w += cw;
        }
        let mut spans = prefix.to_vec();
        spans.push(Span::styled(chunk, style));
        lines.push(Line::from(spans));
    }
    lines
}

pub fn spans_width(spans: &[Span<'_>]) -> usize {
    spans.iter().map(|s| width(&s.content)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::style::Modifier;

    fn text(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn wraps_words_with_hanging_indent() {
        let spans = [Span::raw("the quick brown fox jumps over the lazy dog")];
        let lines = wrap(&spans, 12, &[Span::raw("• ")], &[Span::raw("  ")]);
        assert_eq!(
            text(&lines),
            [
                "• the quick",
                "  brown fox",
                "  jumps over",
                "  the lazy",
                "  dog"
            ]
        );
        assert!(lines.iter().all(|l| l.width() <= 12));
    }

    #[test]
    fn styled_word_stays_whole_and_long_words_split() {
        let bold = Style::default().add_modifier(Modifier::BOLD);
        let spans = [
            Span::raw("a "),
            Span::styled("bold", bold),
            Span::raw("ly said "),
            Span::raw("abcdefghijklmnop"),
        ];
        let lines = wrap(&spans, 8, &[], &[]);
        assert_eq!(text(&lines), ["a boldly", "said", "abcdefgh", "ijklmnop"]);
    }

    #[test]
    fn hard_breaks_and_verbatim_wrap() {
        let lines = wrap(&[Span::raw("one\ntwo")], 20, &[], &[]);
        assert_eq!(text(&lines), ["one", "two"]);
        let lines = wrap_hard("ab  cdef\nx", Style::default(), 4, &[]);
        assert_eq!(text(&lines), ["ab  ", "cdef", "x"]);
    }
}
