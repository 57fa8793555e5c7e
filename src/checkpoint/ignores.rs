//! The ignore rules a workspace inherits from above it. The store's git sees only the
//! `.gitignore` files inside its work tree, so for a workspace that is a subfolder of a
//! repository (a monorepo's package) the rules of the folders above it (`node_modules/`
//! in the repository's top `.gitignore`) and the user's `info/exclude` are rewritten
//! relative to the workspace, for the store's own `info/exclude`. Else every dependency
//! folder the user ignores would be hashed into the store and removed by a rewind.

use std::path::Path;

/// The rules of `info_exclude` (the user's, relative to the repository's top) and of every
/// `.gitignore` from the top down to the workspace's parent, the workspace being at
/// `prefix` under `top` (`a/b/`, empty at the top), in git's order of precedence: later
/// lines win, deeper files over shallower ones.
pub(super) fn inherited(top: &Path, prefix: &str, info_exclude: Option<&Path>) -> String {
    let rel: Vec<&str> = prefix.split('/').filter(|s| !s.is_empty()).collect();
    let mut out = String::new();
    let mut add = |file: &Path, rel: &[&str]| {
        let Ok(text) = std::fs::read_to_string(file) else {
            return;
        };
        for line in text.lines() {
            if let Some(rule) = rewritten(line, rel) {
                out.push_str(&rule);
                out.push('\n');
            }
        }
    };
    if let Some(exclude) = info_exclude {
        add(exclude, &rel);
    }
    let mut dir = top.to_path_buf();
    for depth in 0..rel.len() {
        add(&dir.join(".gitignore"), &rel[depth..]);
        dir.push(rel[depth]);
    }
    out
}

/// `line` of an ignore file in a folder `rel` above the workspace (its segments from
/// there), as a rule of the workspace's; `None` when it cannot match inside it.
fn rewritten(line: &str, rel: &[&str]) -> Option<String> {
    let line = line.trim_end_matches('\r');
    if line.trim().is_empty() || line.starts_with('#') {
        return None;
    }
    if rel.is_empty() {
        return Some(line.to_string());
    }
    let (neg, body) = match line.strip_prefix('!') {
        Some(rest) => ("!", rest),
        None => ("", line),
    };
    let (body, slash) = match body.strip_suffix('/') {
        Some(rest) => (rest, "/"),
        None => (body, ""),
    };
    // No slash but a trailing one: the pattern matches at any depth, here too.
    if !body.contains('/') {
        return Some(line.to_string());
    }
    let segments: Vec<&str> = body.trim_start_matches('/').split('/').collect();
    for (i, folder) in rel.iter().enumerate() {
        let pattern = segments.get(i)?;
        if *pattern == "**" {
            let rest = segments.get(i + 1..).filter(|r| !r.is_empty())?;
            return Some(format!("{neg}**/{}{slash}", rest.join("/")));
        }
        if !matches(pattern, folder) {
            return None;
        }
    }
    let rest = segments.get(rel.len()..).filter(|r| !r.is_empty())?;
    Some(format!("{neg}/{}{slash}", rest.join("/")))
}

/// Whether the glob `pattern` matches the one path segment `name` (as git's wildmatch
/// does within a segment).
fn matches(pattern: &str, name: &str) -> bool {
    if !pattern.contains(['*', '?', '[', '\\']) {
        return pattern == name;
    }
    globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .is_ok_and(|g| g.compile_matcher().is_match(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_rule_is_rewritten_for_the_subfolder() {
        let rel = ["packages", "app"];
        let cases = [
            ("node_modules/", Some("node_modules/")),
            ("*.log", Some("*.log")),
            ("!keep.log", Some("!keep.log")),
            ("# comment", None),
            ("", None),
            ("/packages/app/dist/", Some("/dist/")),
            ("packages/*/build", Some("/build")),
            ("!packages/app/build/keep", Some("!/build/keep")),
            ("packages/lib/dist", None),
            ("/docs/out", None),
            ("packages/app", None),
            ("packages/**/gen/", Some("**/gen/")),
            ("packages/**", None),
            ("pack?ges/[a-c]pp/tmp", Some("/tmp")),
        ];
        for (line, want) in cases {
            assert_eq!(rewritten(line, &rel).as_deref(), want, "{line:?}");
        }
        assert_eq!(rewritten("/x/y", &[]).as_deref(), Some("/x/y"));
    }

    #[test]
    fn the_files_above_are_read_top_down_after_info_exclude() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path();
        std::fs::create_dir_all(top.join("packages/app")).unwrap();
        std::fs::write(top.join("exclude"), "/packages/app/local/\n").unwrap();
        std::fs::write(top.join(".gitignore"), "node_modules/\n/top-only\n").unwrap();
        std::fs::write(top.join("packages/.gitignore"), "app/dist\n").unwrap();
        std::fs::write(top.join("packages/app/.gitignore"), "own\n").unwrap();
        let rules = inherited(top, "packages/app/", Some(&top.join("exclude")));
        assert_eq!(rules, "/local/\nnode_modules/\n/dist\n");
        let at_top = inherited(top, "", Some(&top.join("exclude")));
        assert_eq!(at_top, "/packages/app/local/\n");
    }
}
