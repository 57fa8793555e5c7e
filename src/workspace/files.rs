//! The workspace's files as `@path` completion offers them, and the files a message
//! attaches with `@path`. The walk respects `.gitignore` (and `.ignore`), with or without
//! a git repository, and skips hidden entries, as the user's own tools would.

use super::Workspace;
use std::path::Path;

/// More files than this are not listed: completion stays quick on huge trees.
pub const MAX_LISTED: usize = 50_000;
/// An attached file is cut here: a message must not blow an agent's context.
pub const MAX_ATTACHED_BYTES: usize = 64 * 1024;

/// Files under `root`, relative with `/`, sorted; at most `max`.
pub fn list_files(root: &Path, max: usize) -> Vec<String> {
    let walk = ignore::WalkBuilder::new(root)
        .require_git(false)
        .follow_links(false)
        .build();
    let mut out = Vec::new();
    for entry in walk.flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        let parts: Vec<_> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect();
        out.push(parts.join("/"));
        if out.len() >= max {
            break;
        }
    }
    out.sort();
    out
}

/// `text` with each `@path` naming a file in the workspace followed by that file's
/// content, so the model reads what the user pointed at. Tokens that name no file (an
/// e-mail address, a handle) are left as they are; each file is attached once.
pub fn attach_mentions(workspace: &Workspace, text: &str) -> String {
    let mut attached: Vec<String> = Vec::new();
    let mut blocks = String::new();
    for token in text.split_whitespace() {
        let Some(path) = token.strip_prefix('@') else {
            continue;
        };
        let path = path.trim_end_matches([',', '.', ';', ':', ')', '!', '?']);
        if path.is_empty() || attached.iter().any(|a| a == path) {
            continue;
        }
        let Ok(full) = workspace.resolve(path) else {
            continue;
        };
        if !full.is_file() {
            continue;
        }
        let body = match std::fs::read(&full) {
            Ok(bytes) => match String::from_utf8(bytes) {
                Ok(s) => crate::text::clip(&s, MAX_ATTACHED_BYTES),
                Err(_) => "(not text: not attached)".to_string(),
            },
            Err(e) => format!("(cannot read: {e})"),
        };
        blocks.push_str(&format!("\n\n<file path=\"{path}\">\n{body}\n</file>"));
        attached.push(path.to_string());
    }
    format!("{text}{blocks}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_files_and_skips_ignored_and_hidden_ones() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for (p, c) in [
            ("src/main.rs", "fn main() {}"),
            ("README.md", "hi"),
            ("target/debug/x", "bin"),
            (".hidden/y", "h"),
            (".gitignore", "target/\n"),
        ] {
            let f = root.join(p);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, c).unwrap();
        }
        assert_eq!(list_files(root, 100), ["README.md", "src/main.rs"]);
        assert_eq!(list_files(root, 1).len(), 1);
    }

    #[test]
    fn attaches_named_files_once_and_leaves_other_mentions() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/a.rs"), "fn a() {}").unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        let text = attach_mentions(
            &ws,
            "see @src/a.rs, and @src/a.rs; mail me@host @../etc/passwd",
        );
        assert_eq!(
            text,
            "see @src/a.rs, and @src/a.rs; mail me@host @../etc/passwd\n\n\
             <file path=\"src/a.rs\">\nfn a() {}\n</file>"
        );
        assert_eq!(attach_mentions(&ws, "no mention"), "no mention");
    }
}
