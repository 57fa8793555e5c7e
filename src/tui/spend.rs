//! `/cost`'s last part: each role's quote beside what its quoted workers spent, and what
//! was spent for nothing (issue 55), from the spend fold the state keeps of the events.

use crate::tui::state::SessionState;
use crate::tui::theme::Theme;
use crate::tui::wrap::wrap;
use ratatui::text::{Line, Span};

/// The lines, `w` wide; none when nothing was quoted nor wasted.
pub fn spend_lines(s: &SessionState, w: usize, theme: &Theme) -> Vec<Line<'static>> {
    let quotes = s.spend.quote_vs_actual();
    let waste = s.spend.waste();
    let mut out = Vec::new();
    let section = |title: &str, rows: Vec<String>, out: &mut Vec<Line<'static>>| {
        if rows.is_empty() {
            return;
        }
        out.push(Line::default());
        out.push(Line::styled(format!("  {title}"), theme.dim()));
        for row in rows {
            out.extend(wrap(
                &[Span::raw(row)],
                w,
                &[Span::raw("    ")],
                &[Span::raw("      ")],
            ));
        }
    };
    let quoted = quotes.iter().map(|q| q.line()).collect();
    section("quote against actual, per role", quoted, &mut out);
    let wasted = waste.lines.iter().map(|l| l.line()).collect();
    section(
        "waste (a worker may be on more than one line)",
        wasted,
        &mut out,
    );
    out
}
