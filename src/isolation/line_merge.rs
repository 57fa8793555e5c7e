//! A three-way line merge finer than git's where git is too careful: git (like diff3)
//! calls changes that only touch a conflict, one side changing a line and the other
//! adding lines right after it, say. Here two sides' changes conflict only when they
//! really overlap: both change a common base line, or both insert different lines at
//! the same place, or one inserts strictly inside lines the other changed. An insertion
//! at the edge of the other side's change, or changes to neighbouring lines, both land.
//! Used only on files git's merge left conflicted (see `merge.rs`), never on binary ones.

use similar::{Algorithm, DiffOp, capture_diff_slices_deadline};
use std::time::{Duration, Instant};

/// How long one side's diff may take before similar settles for a coarser one (which
/// can only make more conflicts, never lose a line).
const DIFF_DEADLINE: Duration = Duration::from_secs(1);

/// One side's change to the base: base lines `base.0..base.1` became that side's lines
/// `side.0..side.1` (an empty base range is an insertion before base line `base.0`).
#[derive(Clone, Copy, Debug)]
struct Hunk {
    ours: bool,
    base: (usize, usize),
    side: (usize, usize),
}

impl Hunk {
    fn is_insertion(&self) -> bool {
        self.base.0 == self.base.1
    }

    /// Whether this hunk and `other` (of the other side) change the same place.
    fn overlaps(&self, other: &Hunk) -> bool {
        let (a, b) = (self.base, other.base);
        match (self.is_insertion(), other.is_insertion()) {
            (false, false) => a.0 < b.1 && b.0 < a.1,
            (true, true) => a.0 == b.0,
            (true, false) => b.0 < a.0 && a.0 < b.1,
            (false, true) => a.0 < b.0 && b.0 < a.1,
        }
    }
}

/// Lines with their endings (`\n`, `\r\n`), the last one possibly without.
fn lines(text: &[u8]) -> Vec<&[u8]> {
    text.split_inclusive(|b| *b == b'\n').collect()
}

/// The changes from `base` to `side`, neighbouring ones joined, so two hunks of one side
/// always have an unchanged base line between them.
fn hunks(base: &[&[u8]], side: &[&[u8]], ours: bool) -> Vec<Hunk> {
    let deadline = Some(Instant::now() + DIFF_DEADLINE);
    let ops = capture_diff_slices_deadline(Algorithm::Myers, base, side, deadline);
    let mut out: Vec<Hunk> = Vec::new();
    for op in ops {
        if let DiffOp::Equal { .. } = op {
            continue;
        }
        let (b, s) = (op.old_range(), op.new_range());
        match out.last_mut() {
            Some(last) if last.base.1 == b.start && last.side.1 == s.start => {
                last.base.1 = b.end;
                last.side.1 = s.end;
            }
            _ => out.push(Hunk {
                ours,
                base: (b.start, b.end),
                side: (s.start, s.end),
            }),
        }
    }
    out
}

/// The merge of `ours` and `theirs`, both changed from `base`, when no change of one
/// overlaps a change of the other (or overlapping ones are the same change); `None` on a
/// real conflict or when any side is binary (a NUL in its first 8,000 bytes, git's test).
pub(crate) fn merge(base: &[u8], ours: &[u8], theirs: &[u8]) -> Option<Vec<u8>> {
    if [base, ours, theirs]
        .iter()
        .any(|t| t.iter().take(8000).any(|b| *b == 0))
    {
        return None;
    }
    let (b, o, t) = (lines(base), lines(ours), lines(theirs));
    let mut all = hunks(&b, &o, true);
    all.extend(hunks(&b, &t, false));
    // By where they start; an insertion before a change starting at the same line.
    all.sort_by_key(|h| (h.base.0, h.base.1));
    // Groups of hunks that overlap (through one another), in base order.
    let mut groups: Vec<Vec<Hunk>> = Vec::new();
    for h in all {
        match groups.last_mut() {
            Some(g) if g.iter().any(|m| m.ours != h.ours && m.overlaps(&h)) => g.push(h),
            _ => groups.push(vec![h]),
        }
    }
    let mut out: Vec<u8> = Vec::with_capacity(ours.len().max(theirs.len()));
    let mut at = 0;
    for g in groups {
        let start = g.iter().map(|h| h.base.0).min().unwrap_or(at);
        let end = g.iter().map(|h| h.base.1).max().unwrap_or(start);
        out.extend(b[at..start].concat());
        let mine = side_of(&g, true, &b, &o, start, end);
        let other = side_of(&g, false, &b, &t, start, end);
        let text = match (g.iter().any(|h| h.ours), g.iter().any(|h| !h.ours)) {
            (true, false) => mine,
            (false, true) => other,
            _ if mine == other => mine,
            _ => return None,
        };
        out.extend(text);
        at = end;
    }
    out.extend(b[at..].concat());
    Some(out)
}

/// What one side made of base lines `start..end`: its hunks there, base lines between.
fn side_of(
    group: &[Hunk],
    ours: bool,
    base: &[&[u8]],
    side: &[&[u8]],
    start: usize,
    end: usize,
) -> Vec<u8> {
    let mut out = Vec::new();
    let mut at = start;
    for h in group.iter().filter(|h| h.ours == ours) {
        out.extend(base[at..h.base.0].concat());
        out.extend(side[h.side.0..h.side.1].concat());
        at = h.base.1;
    }
    out.extend(base[at..end].concat());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(base: &str, ours: &str, theirs: &str) -> Option<String> {
        merge(base.as_bytes(), ours.as_bytes(), theirs.as_bytes())
            .map(|v| String::from_utf8(v).unwrap())
    }

    #[test]
    fn a_change_and_an_insertion_right_after_it_both_land() {
        // Issue 34's scenario: A changed the one line, B added one after it.
        let base = "marker-4242: hello world\n";
        let a = "marker-4242: hello A\n";
        let b = "marker-4242: hello world\nB-LINE-9\n";
        let both = "marker-4242: hello A\nB-LINE-9\n";
        assert_eq!(m(base, a, b).as_deref(), Some(both));
        assert_eq!(m(base, b, a).as_deref(), Some(both));
        // An insertion right before the changed line goes before it.
        let before = "B-LINE-0\nmarker-4242: hello world\n";
        assert_eq!(
            m(base, a, before).as_deref(),
            Some("B-LINE-0\nmarker-4242: hello A\n")
        );
    }

    #[test]
    fn changes_to_neighbouring_lines_both_land() {
        assert_eq!(
            m("1\n2\n3\n", "one\n2\n3\n", "1\ntwo\n3\n").as_deref(),
            Some("one\ntwo\n3\n")
        );
        // A deletion beside a change.
        assert_eq!(
            m("1\n2\n3\n", "1\n3\n", "1\n2\nthree\n").as_deref(),
            Some("1\nthree\n")
        );
    }

    #[test]
    fn both_changing_one_line_differently_is_a_conflict() {
        assert_eq!(m("1\n2\n3\n", "1\nA\n3\n", "1\nB\n3\n"), None);
        // One deletes what the other changes.
        assert_eq!(m("1\n2\n3\n", "1\n3\n", "1\nB\n3\n"), None);
        // An insertion strictly inside lines the other replaced.
        assert_eq!(m("1\n2\n3\n4\n", "1\nX\n4\n", "1\n2\nnew\n3\n4\n"), None);
        // The same change on both sides is no conflict.
        assert_eq!(
            m("1\n2\n3\n", "1\nB\n3\n", "1\nB\n3\n").as_deref(),
            Some("1\nB\n3\n")
        );
    }

    #[test]
    fn different_insertions_at_one_place_conflict_the_same_one_does_not() {
        assert_eq!(m("1\n2\n", "1\nA\n2\n", "1\nB\n2\n"), None);
        assert_eq!(m("1\n", "1\nA\n", "1\nB\n"), None);
        assert_eq!(
            m("1\n2\n", "1\nA\n2\n", "1\nA\n2\n").as_deref(),
            Some("1\nA\n2\n")
        );
    }

    #[test]
    fn one_side_unchanged_gives_the_other() {
        let (base, other) = ("1\n2\n3\n", "0\n1\nX\n3\n4\n");
        assert_eq!(m(base, base, other).as_deref(), Some(other));
        assert_eq!(m(base, other, base).as_deref(), Some(other));
    }

    #[test]
    fn crlf_lines_keep_their_endings() {
        let base = "one\r\ntwo\r\n";
        let ours = "ONE\r\ntwo\r\n";
        let theirs = "one\r\ntwo\r\nthree\r\n";
        assert_eq!(
            m(base, ours, theirs).as_deref(),
            Some("ONE\r\ntwo\r\nthree\r\n")
        );
        // A line whose ending changed is a changed line.
        assert_eq!(m(base, "one\ntwo\r\n", "ONE\r\ntwo\r\n"), None);
    }

    #[test]
    fn a_last_line_without_a_newline_stays_so() {
        assert_eq!(m("x\ny", "X\ny", "x\nz").as_deref(), Some("X\nz"));
        assert_eq!(m("x\ny", "x\nnew\ny", "x\nY").as_deref(), Some("x\nnew\nY"));
        // Adding a line after it changes it (it gains its newline): with a change of the
        // same line on the other side, that is a conflict.
        assert_eq!(m("x", "X", "x\nmore\n"), None);
    }

    #[test]
    fn binary_files_are_left_to_git() {
        assert_eq!(m("a\0\n", "a\0\n", "b\0\n"), None);
        assert_eq!(m("a\n", "a\nb\n", "\0"), None);
    }
}
