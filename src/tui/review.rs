//! The findings of the last `/review` as a popup: one block per finding (`file:line`,
//! severity, the focuses that found it, the title, then its body), the dropped ones and
//! why after them. It opens when the review finishes; Esc or Enter closes it.

use crate::protocol::{ReviewFinding, ReviewSeverity};
use crate::tui::popup;
use crate::tui::state::SessionState;
use crate::tui::theme::Theme;
use crate::tui::wrap::wrap_hard;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};

fn severity_style(s: ReviewSeverity, t: &Theme) -> Style {
    match s {
        ReviewSeverity::High => t.bold(Color::Red),
        ReviewSeverity::Medium => t.fg(Color::Yellow),
        ReviewSeverity::Low => t.dim(),
    }
}

fn finding_lines(f: &ReviewFinding, w: usize, t: &Theme, out: &mut Vec<Line<'static>>) {
    out.push(Line::from(vec![
        Span::styled(f.place(), t.bold(Color::Cyan)),
        Span::raw("  "),
        Span::styled(
            f.severity.as_str().to_string(),
            severity_style(f.severity, t),
        ),
        Span::raw("  "),
        Span::styled(f.focus.join(", "), t.dim()),
    ]));
    out.extend(wrap_hard(&f.title, Style::default(), w, &[Span::raw("  ")]));
    for para in f.body.lines().filter(|l| !l.trim().is_empty()) {
        out.extend(wrap_hard(para, t.dim(), w, &[Span::raw("    ")]));
    }
    out.push(Line::raw(""));
}

fn lines(s: &SessionState, w: usize, t: &Theme) -> Vec<Line<'static>> {
    let Some(review) = &s.review else {
        return vec![Line::raw(
            "No review yet: /review, /review base BRANCH or /review commit SHA.",
        )];
    };
    let Some((findings, dropped)) = &review.outcome else {
        let text = format!(
            "Reviewing {} ({} reviewers)…",
            review.target, review.reviewers
        );
        return vec![Line::raw(text)];
    };
    if let Some(why) = &review.unanswered {
        let text = format!(
            "The review of {} did not happen: no reviewer could answer. Nothing was checked.",
            review.target
        );
        let mut out = wrap_hard(&text, t.error(), w, &[]);
        out.extend(wrap_hard(why, t.dim(), w, &[Span::raw("  ")]));
        return out;
    }
    let mut out = Vec::new();
    if findings.is_empty() {
        out.push(Line::raw(format!("No findings in {}.", review.target)));
        out.push(Line::raw(""));
    }
    for f in findings {
        finding_lines(f, w, t, &mut out);
    }
    if !dropped.is_empty() {
        let head = format!("Dropped ({}): not found in the code", dropped.len());
        out.push(Line::styled(head, t.dim()));
        for d in dropped {
            let text = format!("{}  {} — {}", d.finding.place(), d.finding.title, d.reason);
            out.extend(wrap_hard(&text, t.dim(), w, &[Span::raw("  ")]));
        }
    }
    while out.last().is_some_and(|l| l.width() == 0) {
        out.pop();
    }
    out
}

pub fn render(buf: &mut Buffer, area: Rect, s: &SessionState, scroll: &mut usize, t: &Theme) {
    let w = area.width.saturating_sub(4).clamp(20, 100);
    let lines = lines(s, w.saturating_sub(4) as usize, t);
    let rect = popup::centered(area, w, lines.len() as u16 + 3);
    let review = s.review.as_ref();
    let title = if review.is_some_and(|r| r.unanswered.is_some()) {
        Line::styled(" Review: no answer ", t.bold(Color::Red))
    } else {
        let count = (review.and_then(|r| r.outcome.as_ref()))
            .map_or(String::new(), |(f, _)| format!(" ({})", f.len()));
        Line::styled(format!(" Review findings{count} "), t.bold(Color::Cyan))
    };
    popup::scrolled(buf, rect, title, &lines, scroll, t);
}
