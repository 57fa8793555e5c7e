//! What a conflicted merge reports: each file, why, and where (line ranges on the
//! workspace's side and the worker's), read from `git merge-tree -z` and the conflict
//! markers it leaves in the merged files.

use super::IsolationError;
use super::git::{Git, fields, path_of};
use similar::{Algorithm, DiffOp, capture_diff_slices_deadline};
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::time::{Duration, Instant};

/// Lines of one side of a conflict, numbered from 1. An empty side (`count` 0) is the
/// place where the other side's lines would go: before line `start`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineSpan {
    pub start: usize,
    pub count: usize,
}

impl fmt::Display for LineSpan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.count {
            0 => write!(f, "nothing (before line {})", self.start),
            1 => write!(f, "line {}", self.start),
            n => write!(f, "lines {}\u{2013}{}", self.start, self.start + n - 1),
        }
    }
}

/// One conflicting region: what the workspace has there and what the worker wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hunk {
    pub workspace: LineSpan,
    pub worker: LineSpan,
}

/// One file the merge could not settle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// Relative to the top of the repository.
    pub path: String,
    /// git's name for it: `contents`, `modify/delete`, `add/add`, `binary`, ...
    pub kind: String,
    /// git's own sentence about it (object ids replaced by `workspace` and `worker`).
    pub message: String,
    /// Conflicting regions of a text file; empty for other kinds of conflict.
    pub hunks: Vec<Hunk>,
}

impl fmt::Display for Conflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.path, self.kind)?;
        for (i, h) in self.hunks.iter().enumerate() {
            let sep = if i == 0 { ": " } else { "; " };
            write!(f, "{sep}workspace {} vs worker {}", h.workspace, h.worker)?;
        }
        if self.hunks.is_empty() && !self.message.is_empty() {
            write!(f, ": {}", self.message)?;
        }
        Ok(())
    }
}

/// One entry of merge-tree's conflicted file info.
#[derive(Clone, Debug)]
struct Stage {
    mode: String,
    oid: String,
    stage: u8,
    path: String,
}

/// A file conflicted in its contents only: its mode and its base, ours and theirs blobs.
#[derive(Clone, Debug)]
pub(crate) struct ContentConflict {
    pub path: String,
    pub mode: String,
    pub oids: [String; 3],
}

/// What `git merge-tree --write-tree -z` printed.
#[derive(Clone, Debug)]
pub(crate) struct MergeTree {
    pub tree: String,
    stages: Vec<Stage>,
    /// (paths, type, message) of each CONFLICT message.
    messages: Vec<(Vec<String>, String, String)>,
}

impl MergeTree {
    /// Parses the output; `None` when it has no tree id.
    pub fn parse(out: &[u8]) -> Option<MergeTree> {
        let mut it = fields(out);
        let tree = String::from_utf8_lossy(it.next()?).trim().to_string();
        if tree.is_empty() {
            return None;
        }
        let mut stages = Vec::new();
        for field in it.by_ref() {
            if field.is_empty() {
                break;
            }
            let mut halves = field.splitn(2, |b| *b == b'\t');
            let (Some(meta), Some(path)) = (halves.next(), halves.next()) else {
                continue;
            };
            let meta = String::from_utf8_lossy(meta);
            let mut parts = meta.split(' ');
            let (mode, oid, stage) = (parts.next(), parts.next(), parts.next());
            if let (Some(mode), Some(oid), Some(stage)) =
                (mode, oid, stage.and_then(|s| s.parse().ok()))
            {
                stages.push(Stage {
                    mode: mode.to_string(),
                    oid: oid.to_string(),
                    stage,
                    path: path_of(path),
                });
            }
        }
        let mut messages = Vec::new();
        while let Some(count) = it.next() {
            let Some(count) = std::str::from_utf8(count)
                .ok()
                .and_then(|c| c.parse::<usize>().ok())
            else {
                break;
            };
            let paths: Vec<String> = it.by_ref().take(count).map(path_of).collect();
            let (Some(kind), Some(text)) = (it.next(), it.next()) else {
                break;
            };
            let kind = String::from_utf8_lossy(kind).into_owned();
            if kind.starts_with("CONFLICT") {
                messages.push((
                    paths,
                    kind,
                    String::from_utf8_lossy(text).trim().to_string(),
                ));
            }
        }
        Some(MergeTree {
            tree,
            stages,
            messages,
        })
    }

    /// Whether nothing is left conflicted.
    pub fn is_clean(&self) -> bool {
        self.stages.is_empty() && self.messages.is_empty()
    }

    /// The files git left conflicted in their contents alone (no rename, type or mode
    /// in play), with all three versions: the finer line merge may settle them.
    pub fn content_conflicts(&self) -> Vec<ContentConflict> {
        let mut paths: Vec<&str> = self.stages.iter().map(|s| s.path.as_str()).collect();
        paths.dedup();
        paths
            .into_iter()
            .filter(|p| {
                let said: Vec<_> = self
                    .messages
                    .iter()
                    .filter(|(paths, _, _)| paths.iter().any(|q| q == p))
                    .collect();
                !said.is_empty()
                    && said
                        .iter()
                        .all(|(paths, kind, _)| paths.len() == 1 && kind == "CONFLICT (contents)")
            })
            .filter_map(|p| {
                let stage = |n: u8| self.stages.iter().find(|s| s.path == p && s.stage == n);
                let (base, ours, theirs) = (stage(1)?, stage(2)?, stage(3)?);
                let same_mode = base.mode == ours.mode && ours.mode == theirs.mode;
                (same_mode && self.stages.iter().filter(|s| s.path == p).count() == 3).then(|| {
                    ContentConflict {
                        path: p.to_string(),
                        mode: ours.mode.clone(),
                        oids: [base.oid.clone(), ours.oid.clone(), theirs.oid.clone()],
                    }
                })
            })
            .collect()
    }

    /// `path` was settled in `tree` (which now holds it merged): it is no conflict.
    pub fn settled(&mut self, tree: String, paths: &[String]) {
        self.tree = tree;
        self.stages.retain(|s| !paths.contains(&s.path));
        self.messages
            .retain(|(p, _, _)| !p.iter().all(|q| paths.contains(q)));
    }

    /// The conflicts, one per file in path order, with their hunks. `labels` maps the
    /// object ids git names in its messages to words the reader knows.
    pub fn conflicts(
        &self,
        dir: &Path,
        labels: &[(&str, &str)],
    ) -> Result<Vec<Conflict>, IsolationError> {
        let mut by_path: BTreeMap<String, Conflict> = BTreeMap::new();
        for s in &self.stages {
            by_path.entry(s.path.clone()).or_insert_with(|| Conflict {
                path: s.path.clone(),
                kind: "conflict".into(),
                message: String::new(),
                hunks: Vec::new(),
            });
        }
        for (paths, kind, text) in &self.messages {
            let kind = kind
                .trim_start_matches("CONFLICT")
                .trim()
                .trim_start_matches('(')
                .trim_end_matches(')')
                .to_string();
            let mut text = text.clone();
            for (oid, word) in labels {
                text = text.replace(oid, word);
            }
            for path in paths {
                let Some(c) = by_path.get_mut(path) else {
                    continue;
                };
                // A file's first CONFLICT message is the one that says what went wrong;
                // a binary file's "contents" one follows its "binary" warning.
                if c.message.is_empty() {
                    c.kind = kind.clone();
                    c.message = text.clone();
                }
            }
        }
        let git = Git::new(dir);
        for c in by_path.values_mut() {
            let side = |stage: u8| {
                self.stages
                    .iter()
                    .find(|s| s.path == c.path && s.stage == stage)
            };
            let (Some(ours), Some(theirs)) = (side(2), side(3)) else {
                continue;
            };
            let ours = git.run(&["cat-file", "blob", &ours.oid])?;
            let theirs = git.run(&["cat-file", "blob", &theirs.oid])?;
            let merged = git.run(&["cat-file", "blob", &format!("{}:{}", self.tree, c.path)])?;
            if [&ours, &theirs, &merged].iter().any(|b| is_binary(b)) {
                c.kind = "binary".into();
                continue;
            }
            c.hunks = hunks(
                &String::from_utf8_lossy(&merged),
                &String::from_utf8_lossy(&ours),
                &String::from_utf8_lossy(&theirs),
            );
        }
        Ok(by_path.into_values().collect())
    }
}

/// git's own test: a NUL in the first 8,000 bytes.
fn is_binary(bytes: &[u8]) -> bool {
    bytes.iter().take(8000).any(|b| *b == 0)
}

/// Which conflict marker a line is, if any (`<`, `|`, `=`, `>`).
fn marker(line: &str) -> Option<char> {
    for c in ['<', '|', '=', '>'] {
        let m: String = std::iter::repeat_n(c, 7).collect();
        if let Some(rest) = line.strip_prefix(m.as_str())
            && (rest.is_empty() || (c != '=' && rest.starts_with(' ')))
        {
            return Some(c);
        }
    }
    None
}

/// The conflict regions of `merged` (a file with markers), as line spans of `ours` (the
/// workspace's version) and `theirs` (the worker's). The merged file outside the regions
/// also holds the other side's clean changes, so its line numbers are neither side's:
/// each side's text is rebuilt from it (regions resolved to that side) and lined up with
/// the real file by a diff.
pub(crate) fn hunks(merged: &str, ours: &str, theirs: &str) -> Vec<Hunk> {
    #[derive(PartialEq)]
    enum State {
        Outside,
        Ours,
        Base,
        Theirs,
    }
    let mut state = State::Outside;
    let (mut as_ours, mut as_theirs): (Vec<&str>, Vec<&str>) = (Vec::new(), Vec::new());
    // (start in as_ours, length, start in as_theirs, length)
    let mut regions: Vec<(usize, usize, usize, usize)> = Vec::new();
    let mut open = (0, 0);
    for line in merged.lines() {
        match (&state, marker(line)) {
            (State::Outside, Some('<')) => {
                open = (as_ours.len(), as_theirs.len());
                state = State::Ours;
            }
            (State::Outside, _) => {
                as_ours.push(line);
                as_theirs.push(line);
            }
            (State::Ours, Some('|')) => state = State::Base,
            (State::Ours | State::Base, Some('=')) => state = State::Theirs,
            (State::Ours, _) => as_ours.push(line),
            (State::Base, _) => {}
            (State::Theirs, Some('>')) => {
                regions.push((
                    open.0,
                    as_ours.len() - open.0,
                    open.1,
                    as_theirs.len() - open.1,
                ));
                state = State::Outside;
            }
            (State::Theirs, _) => as_theirs.push(line),
        }
    }
    let ours_lines: Vec<&str> = ours.lines().collect();
    let theirs_lines: Vec<&str> = theirs.lines().collect();
    let deadline = || Some(Instant::now() + Duration::from_secs(1));
    let ours_ops =
        capture_diff_slices_deadline(Algorithm::Myers, &ours_lines, &as_ours, deadline());
    let theirs_ops =
        capture_diff_slices_deadline(Algorithm::Myers, &theirs_lines, &as_theirs, deadline());
    regions
        .into_iter()
        .map(|(os, ol, ts, tl)| Hunk {
            workspace: span(&ours_ops, os, ol, ours_lines.len()),
            worker: span(&theirs_ops, ts, tl, theirs_lines.len()),
        })
        .collect()
}

/// Lines `start..start+len` of the rebuilt text as a span of the real one.
fn span(ops: &[DiffOp], start: usize, len: usize, old_len: usize) -> LineSpan {
    let first = to_old(ops, start, old_len);
    if len == 0 {
        return LineSpan {
            start: first + 1,
            count: 0,
        };
    }
    let last = to_old(ops, start + len - 1, old_len).max(first);
    LineSpan {
        start: first + 1,
        count: last - first + 1,
    }
}

/// The line of the real text that line `k` of the rebuilt one stands for.
fn to_old(ops: &[DiffOp], k: usize, old_len: usize) -> usize {
    for op in ops {
        let (old, new) = (op.old_range(), op.new_range());
        if new.contains(&k) {
            return match op {
                DiffOp::Equal { .. } => old.start + (k - new.start),
                _ => old.start.min(old_len),
            };
        }
    }
    old_len
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_recognised_only_whole() {
        assert_eq!(marker("<<<<<<< abc"), Some('<'));
        assert_eq!(marker("<<<<<<<"), Some('<'));
        assert_eq!(marker("||||||| base"), Some('|'));
        assert_eq!(marker("======="), Some('='));
        assert_eq!(marker("======= x"), None);
        assert_eq!(marker(">>>>>>> def"), Some('>'));
        assert_eq!(marker("<<<<<<<<"), None);
        assert_eq!(marker("a <<<<<<< b"), None);
    }

    #[test]
    fn hunks_count_lines_of_each_side_not_of_the_merged_file() {
        // The worker also added two lines at the top, cleanly; the conflict is on "b".
        let ours = "a\nB-ours\nc\n";
        let theirs = "new1\nnew2\na\nB-theirs\nB-theirs-2\nc\n";
        let merged = "new1\nnew2\na\n<<<<<<< o\nB-ours\n||||||| b\nb\n=======\nB-theirs\nB-theirs-2\n>>>>>>> t\nc\n";
        let h = hunks(merged, ours, theirs);
        assert_eq!(
            h,
            vec![Hunk {
                workspace: LineSpan { start: 2, count: 1 },
                worker: LineSpan { start: 4, count: 2 },
            }]
        );
    }

    #[test]
    fn an_empty_side_is_placed_before_the_next_line() {
        let ours = "a\nc\n";
        let theirs = "a\nX\nc\n";
        let merged = "a\n<<<<<<< o\n=======\nX\n>>>>>>> t\nc\n";
        let h = hunks(merged, ours, theirs);
        assert_eq!(h[0].workspace, LineSpan { start: 2, count: 0 });
        assert_eq!(h[0].worker, LineSpan { start: 2, count: 1 });
        assert_eq!(h[0].workspace.to_string(), "nothing (before line 2)");
    }

    #[test]
    fn merge_tree_output_parses_into_stages_and_messages() {
        let out = b"treeid\x00100644 aaa 1\tf x.txt\x00100644 bbb 2\tf x.txt\x00100644 ccc 3\tf x.txt\0\
                    100644 ddd 2\tg.txt\0\0\
                    1\0f x.txt\0Auto-merging\0Auto-merging f x.txt\n\0\
                    1\0f x.txt\0CONFLICT (contents)\0CONFLICT (content): Merge conflict in f x.txt\n\0\
                    1\0g.txt\0CONFLICT (modify/delete)\0CONFLICT (modify/delete): g.txt deleted in ttt and modified in ooo.\n\0";
        let m = MergeTree::parse(out).unwrap();
        assert_eq!(m.tree, "treeid");
        assert_eq!(m.stages.len(), 4);
        assert_eq!(m.stages[0].path, "f x.txt");
        assert_eq!(m.messages.len(), 2);
        assert_eq!(m.messages[1].0, vec!["g.txt".to_string()]);
        assert!(MergeTree::parse(b"").is_none());
    }

    #[test]
    fn conflicts_describe_themselves() {
        let c = Conflict {
            path: "src/a.rs".into(),
            kind: "contents".into(),
            message: String::new(),
            hunks: vec![Hunk {
                workspace: LineSpan { start: 3, count: 2 },
                worker: LineSpan { start: 3, count: 1 },
            }],
        };
        assert_eq!(
            c.to_string(),
            "src/a.rs (contents): workspace lines 3\u{2013}4 vs worker line 3"
        );
    }
}
