//! Short human figures (tokens, dollars, durations) and width-aware truncation.

use std::time::Duration;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// `850`, `12.3k`, `4.1M`: fits a narrow column.
pub fn tokens(n: u64) -> String {
    if n < 1_000 {
        n.to_string()
    } else if n < 1_000_000 {
        format!("{:.1}k", n as f64 / 1_000.0)
    } else {
        format!("{:.1}M", n as f64 / 1_000_000.0)
    }
}

/// `812 B`, `1.2 KB`, `3.4 MB`.
pub fn bytes(n: u64) -> String {
    if n < 1024 {
        format!("{n} B")
    } else if n < 1024 * 1024 {
        format!("{:.1} KB", n as f64 / 1024.0)
    } else {
        format!("{:.1} MB", n as f64 / (1024.0 * 1024.0))
    }
}

/// Three decimals under a dollar (agents often cost fractions of a cent), two above.
pub fn cost(usd: f64) -> String {
    if usd < 1.0 {
        format!("${usd:.3}")
    } else {
        format!("${usd:.2}")
    }
}

/// `42s`, `3m07s`, `1h02m`.
pub fn elapsed(d: Duration) -> String {
    let s = d.as_secs();
    if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    }
}

/// Tool durations: `12ms`, `1.2s`, `3m07s`.
pub fn millis(ms: u64) -> String {
    if ms < 1_000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{:.1}s", ms as f64 / 1_000.0)
    } else {
        elapsed(Duration::from_millis(ms))
    }
}

pub fn width(s: &str) -> usize {
    UnicodeWidthStr::width(s)
}

/// Cuts `s` to at most `max` columns, ending with `…` when something was cut.
pub fn truncate(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut w = 0;
    for c in s.chars() {
        let cw = c.width().unwrap_or(0);
        if w + cw > max - 1 {
            break;
        }
        out.push(c);
        w += cw;
    }
    out.push('…');
    out
}

/// Keeps the end of `s` (paths are most telling at the end): `…/src/tui/mod.rs`.
pub fn truncate_left(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let mut rev = Vec::new();
    let mut w = 0;
    for c in s.chars().rev() {
        let cw = c.width().unwrap_or(0);
        if w + cw > max - 1 {
            break;
        }
        rev.push(c);
        w += cw;
    }
    let mut out = String::from("…");
    out.extend(rev.into_iter().rev());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures() {
        assert_eq!(tokens(999), "999");
        assert_eq!(tokens(12_345), "12.3k");
        assert_eq!(tokens(4_100_000), "4.1M");
        assert_eq!(cost(0.0042), "$0.004");
        assert_eq!(cost(12.5), "$12.50");
        assert_eq!(elapsed(Duration::from_secs(187)), "3m07s");
        assert_eq!(elapsed(Duration::from_secs(3720)), "1h02m");
        assert_eq!(millis(1234), "1.2s");
    }

    #[test]
    fn truncation_respects_width() {
        assert_eq!(truncate("hello world", 6), "hello…");
        assert_eq!(truncate("hi", 6), "hi");
        assert_eq!(truncate_left("src/tui/mod.rs", 8), "…/mod.rs");
        assert_eq!(width(&truncate("日本語テキスト", 5)), 5);
    }
}
