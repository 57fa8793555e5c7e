//! Project instructions: `AGENTS.md` in the workspace root and in its parent folders up to
//! the git root, read once at session start and given to every agent in its system
//! message, outermost first so the nearer file has the last word.

use std::path::{Path, PathBuf};

pub const FILE_NAME: &str = "AGENTS.md";

#[derive(Clone, Debug, PartialEq)]
pub struct Instructions {
    /// What goes in the system message (the files' text, cut to the cap with a note).
    pub text: String,
    /// The files read, outermost first.
    pub files: Vec<PathBuf>,
    /// Their size in all, before any cut.
    pub bytes: u64,
    pub cut: bool,
}

/// The `AGENTS.md` files that apply to `workspace`, or `None` when there are none. Parent
/// folders are read only inside a git repository (up to its root), so a stray file in a
/// home or temp folder never leaks into unrelated projects.
pub fn load_instructions(workspace: &Path, max_bytes: usize) -> Option<Instructions> {
    let mut dirs = vec![workspace.to_path_buf()];
    if !workspace.join(".git").exists() {
        let mut up = workspace.parent();
        let mut found = false;
        let mut chain = Vec::new();
        while let Some(dir) = up {
            chain.push(dir.to_path_buf());
            if dir.join(".git").exists() {
                found = true;
                break;
            }
            up = dir.parent();
        }
        if found {
            dirs.extend(chain);
        }
    }
    dirs.reverse();
    let mut files = Vec::new();
    let mut text = String::new();
    for dir in dirs {
        let path = dir.join(FILE_NAME);
        let Ok(content) = std::fs::read_to_string(&path) else {
            continue;
        };
        if content.trim().is_empty() {
            continue;
        }
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        let shown = path
            .strip_prefix(workspace)
            .map(Path::to_path_buf)
            .unwrap_or_else(|_| path.clone());
        text.push_str(&format!("## {}\n{}", shown.display(), content.trim_end()));
        files.push(path);
    }
    if files.is_empty() {
        return None;
    }
    let bytes = text.len() as u64;
    let cut = text.len() > max_bytes;
    if cut {
        let mut end = max_bytes;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str(&format!(
            "\n[squad: the project instructions were cut at {max_bytes} of {bytes} bytes; \
             read the files themselves for the rest]"
        ));
    }
    Some(Instructions {
        text,
        files,
        bytes,
        cut,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_up_to_the_git_root_outermost_first_and_cuts_with_a_note() {
        let root = tempfile::tempdir().unwrap();
        let repo = root.path().join("repo");
        let ws = repo.join("sub");
        std::fs::create_dir_all(ws.join("deeper")).unwrap();
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::write(root.path().join(FILE_NAME), "outside the repo").unwrap();
        std::fs::write(repo.join(FILE_NAME), "repo rules").unwrap();
        std::fs::write(ws.join(FILE_NAME), "sub rules").unwrap();
        let i = load_instructions(&ws, 10_000).unwrap();
        assert_eq!(i.files.len(), 2);
        assert!(!i.text.contains("outside"));
        let (repo_at, sub_at) = (i.text.find("repo rules"), i.text.find("sub rules"));
        assert!(repo_at < sub_at, "{}", i.text);
        assert!(!i.cut);
        let cut = load_instructions(&ws, 12).unwrap();
        assert!(cut.cut && cut.text.contains("cut at 12 of"));
        // Outside a repository only the workspace's own file counts.
        let lone = tempfile::tempdir().unwrap();
        assert_eq!(load_instructions(lone.path(), 100), None);
        std::fs::write(lone.path().join(FILE_NAME), "only me").unwrap();
        assert_eq!(load_instructions(lone.path(), 100).unwrap().files.len(), 1);
    }
}
