//! Which files a worker's first write may take before the rest of its worktree is
//! written: the paths its call names, as git names them, when each is a file or absent
//! in the base, below folders only; anything else waits for the whole tree.

use super::IsolationError;
use super::git::{Git, fields, path_of};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Component, Path};

/// `raw`, a path as a tool got it (relative to the workspace's folder, `prefix` below the
/// top), as git names it from the top; `None` where only the disk could tell which file it
/// is (absolute, `..`) or where writing it early could change how the rest is written
/// (`.gitattributes`) or git itself (`.git`).
pub(crate) fn in_tree(prefix: &Path, raw: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for c in prefix.components().chain(Path::new(raw).components()) {
        match c {
            Component::Normal(p) => parts.push(p.to_str()?),
            Component::CurDir => {}
            _ => return None,
        }
    }
    let last = *parts.last()?;
    if last == ".gitattributes" || parts.contains(&".git") {
        return None;
    }
    Some(parts.join("/"))
}

/// `path`'s folders, nearest first (`a/b/c`: `a/b`, `a`).
fn folders_of(path: &str) -> impl Iterator<Item = &str> {
    std::iter::successors(path.rsplit_once('/').map(|(up, _)| up), |p| {
        p.rsplit_once('/').map(|(up, _)| up)
    })
}

/// Mode of a regular file in a git tree (plain or executable); a folder's.
const FILE_MODES: [&str; 2] = ["100644", "100755"];
const FOLDER_MODE: &str = "040000";

/// Whether a first call that writes `paths` (as git names them) may run before the rest of
/// commit `commit` is written, and the ones among them to check out first (those that are
/// files in it). Only when each is a file or absent, below folders or nothing: through a
/// symlink or a submodule the call would write elsewhere than it says, and where the commit
/// has a folder (at the path) or a file (above it) the fill would later overwrite or
/// fail on what the call made.
pub(crate) fn first_checkout(
    git: Git<'_>,
    commit: &str,
    paths: &[String],
) -> Result<Option<Vec<String>>, IsolationError> {
    let asked: BTreeSet<&str> = paths
        .iter()
        .flat_map(|p| std::iter::once(p.as_str()).chain(folders_of(p)))
        .collect();
    // Without `-r`, ls-tree prints what each asked name is in the commit: a file, link or
    // submodule as itself, a folder it descends into as its children.
    let mut args = vec!["--literal-pathspecs", "ls-tree", "-z", commit, "--"];
    args.extend(asked.iter().copied());
    let out = git.run(&args)?;
    let mut modes: HashMap<String, String> = HashMap::new();
    let mut below: HashSet<String> = HashSet::new();
    for entry in fields(&out) {
        let Some(tab) = entry.iter().position(|b| *b == b'\t') else {
            continue;
        };
        let name = path_of(&entry[tab + 1..]);
        below.extend(folders_of(&name).map(str::to_string));
        let mode = String::from_utf8_lossy(&entry[..tab]);
        let mode = mode.split(' ').next().unwrap_or_default().to_string();
        modes.insert(name, mode);
    }
    let mut tracked = Vec::new();
    for path in paths {
        if below.contains(path) {
            return Ok(None);
        }
        match modes.get(path).map(String::as_str) {
            None => {}
            Some(m) if FILE_MODES.contains(&m) => tracked.push(path.clone()),
            Some(_) => return Ok(None),
        }
        let folders_only =
            folders_of(path).all(|up| modes.get(up).is_none_or(|m| m == FOLDER_MODE));
        if !folders_only {
            return Ok(None);
        }
    }
    Ok(Some(tracked))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tools_path_is_named_from_the_top_or_not_at_all() {
        let top = Path::new("");
        assert_eq!(in_tree(top, "src/a.rs").as_deref(), Some("src/a.rs"));
        assert_eq!(
            in_tree(Path::new("ws/sub"), "./a b/c.rs").as_deref(),
            Some("ws/sub/a b/c.rs")
        );
        for refused in [
            "../x",
            "a/../b",
            "/etc/passwd",
            "",
            ".",
            "sub/.gitattributes",
            ".git/config",
        ] {
            assert_eq!(in_tree(top, refused), None, "{refused}");
        }
    }

    #[test]
    fn folders_come_nearest_first() {
        assert_eq!(folders_of("a/b/c").collect::<Vec<_>>(), ["a/b", "a"]);
        assert_eq!(folders_of("c").count(), 0);
    }

    #[test]
    fn only_files_and_new_paths_below_folders_may_be_written_before_the_fill() {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path();
        let git = |args: &[&str]| crate::isolation::test_git(top, args);
        git(&["init", "-q"]);
        std::fs::create_dir_all(top.join("d")).unwrap();
        for f in ["f", "x.sh", "d/g"] {
            std::fs::write(top.join(f), "x\n").unwrap();
        }
        std::os::unix::fs::symlink("d", top.join("link")).unwrap();
        git(&["add", "-A"]);
        git(&["update-index", "--chmod=+x", "x.sh"]);
        git(&["commit", "-qm", "s"]);
        let check = |paths: &[&str]| {
            let paths: Vec<String> = paths.iter().map(|p| p.to_string()).collect();
            first_checkout(Git::new(top), "HEAD", &paths).unwrap()
        };
        let files = ["f", "d/g", "x.sh"].map(String::from).to_vec();
        assert_eq!(check(&["f", "d/g", "x.sh"]), Some(files));
        // New files, in new folders too; `?` is no wildcard.
        assert_eq!(
            check(&["new.txt", "d/new/deeper.txt", "d/g?"]),
            Some(vec![])
        );
        // A folder, a symlink, a path through one or below a file: not before the fill.
        for refused in [
            &["d"][..],
            &["link"],
            &["link/g"],
            &["f/below"],
            &["f", "d"],
        ] {
            assert_eq!(check(refused), None, "{refused:?}");
        }
    }
}
