//! A worker's change: its worktree as it is now (uncommitted and untracked files
//! included) against its starting point. The figures feed the tree's `+12 −3`, the text
//! the diff view.

use super::IsolationError;
use super::git::{Git, fields, path_of};
use super::seal::Seal;
use super::snapshot::{self, TempIndex};
use super::worktree::Worktree;
use std::path::Path;

/// What happened to one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
    /// A file became a symlink or the reverse.
    TypeChanged,
}

/// One changed file; line counts are 0 for binary files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileChange {
    pub path: String,
    pub kind: ChangeKind,
    pub added: u64,
    pub removed: u64,
    pub binary: bool,
}

/// The files a worker changed, in path order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DiffSummary {
    pub files: Vec<FileChange>,
}

impl DiffSummary {
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    pub fn added(&self) -> u64 {
        self.files.iter().map(|f| f.added).sum()
    }

    pub fn removed(&self) -> u64 {
        self.files.iter().map(|f| f.removed).sum()
    }

    /// `+12 −3`, as the tree shows it.
    pub fn label(&self) -> String {
        format!("+{} \u{2212}{}", self.added(), self.removed())
    }
}

/// The worker's change in figures.
pub fn summary(wt: &Worktree, scratch: &Path) -> Result<DiffSummary, IsolationError> {
    let git = Git::worktree(&wt.seal);
    let now = snapshot::take_in(git, &wt.index, scratch)?;
    summary_between(git, &wt.base, &now.commit)
}

/// The worker's change in figures, reading only `paths` (as git names them) on disk: what
/// a worktree's first call may write while the rest of its files are still being written
/// (see `Worktree::create_lazy_at`). Exact then, since nothing else can differ from `base`
/// yet, and it does not wait for the rest.
pub fn summary_of(
    wt: &Worktree,
    scratch: &Path,
    paths: &[String],
) -> Result<DiffSummary, IsolationError> {
    let temp = TempIndex::copy_of(&wt.index, scratch)?;
    let git = Git::worktree(&wt.seal).with_index(&temp.path);
    // What `git add --all` would take of them: tracked ones, and new ones not ignored.
    let mut args = vec![
        "--literal-pathspecs",
        "ls-files",
        "-z",
        "--cached",
        "--others",
        "--exclude-standard",
        "--",
    ];
    args.extend(paths.iter().map(String::as_str));
    let listed = git.run(&args)?;
    if !listed.is_empty() {
        git.run_with_input(
            &["update-index", "--add", "--remove", "-z", "--stdin"],
            Some(&listed),
        )?;
    }
    let tree = git.text(&["write-tree"])?;
    summary_between(Git::worktree(&wt.seal), &wt.base, &tree)
}

/// The worker's change as a unified diff (binary files are named, not shown).
pub fn text(wt: &Worktree, scratch: &Path) -> Result<String, IsolationError> {
    let git = Git::worktree(&wt.seal);
    let now = snapshot::take_in(git, &wt.index, scratch)?;
    let out = git.run(&[
        "diff-tree",
        "-r",
        "-p",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--no-renames",
        &wt.base,
        &now.commit,
    ])?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// `git diff HEAD -- path` in `dir` (the workspace's repository, or, with `seal`, the
/// worker's worktree that `dir` is in), for a reviewer; `None` when git cannot tell
/// (outside a repository, before the first commit, a worktree refused).
pub fn diff_head(dir: &Path, seal: Option<&Seal>, path: &str) -> Option<String> {
    let (git, path) = match seal {
        Some(seal) => {
            let below = dir.strip_prefix(&seal.work_tree).ok()?;
            let mut rel: Vec<String> = below
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            rel.push(path.to_string());
            (Git::worktree(seal), rel.join("/"))
        }
        None => (Git::new(dir), path.to_string()),
    };
    let args = [
        "--literal-pathspecs",
        "diff",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "HEAD",
        "--",
        &path,
    ];
    let out = git.run(&args).ok()?;
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// Figures of the change from commit `from` to commit `to`.
pub(crate) fn summary_between(
    git: Git<'_>,
    from: &str,
    to: &str,
) -> Result<DiffSummary, IsolationError> {
    let out = git.run(&[
        "diff-tree",
        "-r",
        "-z",
        "--raw",
        "--numstat",
        "--no-ext-diff",
        "--no-textconv",
        "--no-renames",
        from,
        to,
    ])?;
    Ok(parse_raw_numstat(&out))
}

/// Parses `diff-tree -z --raw --numstat`: the raw records (`:meta` then the path) come
/// first, then the numstat ones (`added\tremoved\tpath`, `-` for binary files).
fn parse_raw_numstat(out: &[u8]) -> DiffSummary {
    let mut files: Vec<FileChange> = Vec::new();
    let mut it = fields(out);
    while let Some(field) = it.next() {
        if let Some(meta) = field.strip_prefix(b":") {
            let Some(path) = it.next() else { break };
            let status = meta.split(|b| *b == b' ').nth(4).unwrap_or(b"M");
            let kind = match status.first() {
                Some(b'A') => ChangeKind::Added,
                Some(b'D') => ChangeKind::Deleted,
                Some(b'T') => ChangeKind::TypeChanged,
                _ => ChangeKind::Modified,
            };
            files.push(FileChange {
                path: path_of(path),
                kind,
                added: 0,
                removed: 0,
                binary: false,
            });
            continue;
        }
        let mut parts = field.splitn(3, |b| *b == b'\t');
        let (Some(added), Some(removed), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let path = path_of(path);
        let Some(file) = files.iter_mut().find(|f| f.path == path) else {
            continue;
        };
        let number = |b: &[u8]| std::str::from_utf8(b).ok().and_then(|s| s.parse().ok());
        match (number(added), number(removed)) {
            (Some(a), Some(r)) => {
                file.added = a;
                file.removed = r;
            }
            _ => file.binary = true,
        }
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    DiffSummary { files }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_and_numstat_records_join_by_path() {
        let z = "0000000000000000000000000000000000000000";
        let o = "1111111111111111111111111111111111111111";
        let out = format!(
            ":100644 100644 {o} {o} M\0src/a b.rs\0:000000 100644 {z} {o} A\0new.bin\0\
             :100644 000000 {o} {z} D\0gone.txt\0\
             3\t1\tsrc/a b.rs\0-\t-\tnew.bin\0{}\t2\tgone.txt\0",
            0
        );
        let s = parse_raw_numstat(out.as_bytes());
        let names: Vec<&str> = s.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(names, ["gone.txt", "new.bin", "src/a b.rs"]);
        assert_eq!(s.files[1].kind, ChangeKind::Added);
        assert!(s.files[1].binary);
        assert_eq!((s.files[2].added, s.files[2].removed), (3, 1));
        assert_eq!(s.files[0].kind, ChangeKind::Deleted);
        assert_eq!(s.files[0].removed, 2);
        assert_eq!(s.label(), "+3 \u{2212}3");
    }
}
