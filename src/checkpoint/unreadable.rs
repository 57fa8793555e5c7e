//! Files a checkpoint cannot read (issue 50): the checkpoint goes ahead without them, and
//! each is told once, so an unreadable `secret.txt` no longer turns every checkpoint off.

use std::collections::BTreeSet;

/// The paths found unreadable, and which of them were told.
#[derive(Debug, Default)]
pub(super) struct Unreadable {
    told: BTreeSet<String>,
    untold: Vec<String>,
}

impl Unreadable {
    pub fn found(&mut self, paths: Vec<String>) {
        for path in paths {
            if !self.told.contains(&path) && !self.untold.contains(&path) {
                self.untold.push(path);
            }
        }
    }

    /// The paths not told yet; from now on they count as told.
    pub fn untold(&mut self) -> Vec<String> {
        let untold = std::mem::take(&mut self.untold);
        self.told.extend(untold.iter().cloned());
        untold
    }
}

/// The paths `git add --all --ignore-errors` could not read, from its standard error (git
/// runs with `LC_ALL=C`): a file it could not open, a tracked file it could not stat, a
/// folder it could not list (with its `/`).
pub(super) fn unreadable(stderr: &str) -> Vec<String> {
    let quoted = |rest: &str| {
        let rest = rest.strip_prefix('\'')?;
        rest.rfind('\'').map(|end| rest[..end].to_string())
    };
    let mut paths: Vec<String> = stderr
        .lines()
        .filter_map(|line| {
            if let Some(rest) = line.strip_prefix("error: unable to index file ") {
                quoted(rest)
            } else if let Some(rest) = line.strip_prefix("warning: could not open directory ") {
                let (path, _why) = rest.rsplit_once(": ")?;
                quoted(path)
            } else if line.starts_with("error: ") || line.starts_with("warning: ") {
                None
            } else {
                line.strip_suffix(": Permission denied").map(str::to_string)
            }
        })
        .collect();
    paths.dedup();
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What git 2.47 wrote for an unreadable untracked file, an unlistable untracked folder
    /// and a tracked file in a folder that cannot be listed.
    #[test]
    fn each_unreadable_path_is_read_from_gits_words() {
        let stderr = "warning: could not open directory 'ee/': Permission denied\n\
                      dd/in: Permission denied\n\
                      error: open(\"secret.txt\"): Permission denied\n\
                      error: unable to index file 'secret.txt'\n\
                      fatal: adding files failed";
        assert_eq!(unreadable(stderr), vec!["ee/", "dd/in", "secret.txt"]);
        assert!(unreadable("fatal: not a git repository").is_empty());
    }

    #[test]
    fn each_path_is_told_once() {
        let mut u = Unreadable::default();
        u.found(vec!["a".into(), "b".into()]);
        assert_eq!(u.untold(), vec!["a", "b"]);
        u.found(vec!["b".into(), "c".into()]);
        assert_eq!(u.untold(), vec!["c"]);
        assert!(u.untold().is_empty());
    }
}
