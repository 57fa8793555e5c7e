//! Which workspace hooks the user approved. A cloned repository must not run commands on
//! open, and hooks run with the user's rights, outside the agent's sandbox: so a hook that
//! came with the workspace runs only once the user approved it (`squad hooks trust`), and
//! the approval pins the file it is written in, its command, and the content of every
//! workspace file its command names (`.claude/hooks/guard.py`). An agent that edits one of
//! those files, as its sandbox lets it, only makes the hook wait for a new approval.
//! Approvals live in squad's data dir, never in the workspace.

use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The SHA-256 of a file's text, in hex: what an approval is for.
pub fn digest(text: &str) -> String {
    digest_bytes(text.as_bytes())
}

/// The workspace files a hook's command names (a word of it that is a file in `project`,
/// or a path there, after `$CLAUDE_PROJECT_DIR` / `$SQUAD_PROJECT_DIR`), in order.
pub fn pinned_files(command: &str, project: &Path) -> Vec<PathBuf> {
    let project_text = project.to_string_lossy();
    let mut out: Vec<PathBuf> = Vec::new();
    let words = command
        .split(|c: char| c.is_whitespace() || ";&|()<>`=".contains(c))
        .map(|w| w.replace(['"', '\''], ""))
        .filter(|w| !w.is_empty() && !w.starts_with('-'));
    for mut word in words {
        for var in ["CLAUDE_PROJECT_DIR", "SQUAD_PROJECT_DIR"] {
            word = word
                .replace(&format!("${{{var}}}"), &project_text)
                .replace(&format!("${var}"), &project_text);
        }
        let path = project.join(&word);
        let inside = normalize(&path).starts_with(project);
        let named = path.is_file() || (word.contains('/') && !path.exists());
        if inside && named && !out.contains(&path) {
            out.push(path);
        }
    }
    out
}

/// `path` with `.` and `..` taken out, without asking the disk.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// What an approval of a workspace hook is for: the digest of its file (`file_digest`), its
/// command, and each file its command names as it is now (a missing one too: an agent
/// must not be able to create it later).
pub fn approval_key(file_digest: &str, command: &str, project: &Path) -> String {
    let mut text = format!("{file_digest}\n{command}\n");
    for path in pinned_files(command, project) {
        let content = std::fs::read(&path)
            .map(|b| digest_bytes(&b))
            .unwrap_or_else(|_| "missing".to_string());
        // Relative: the same approval whichever way the project's path is spelled.
        let rel = path.strip_prefix(project).unwrap_or(&path);
        text.push_str(&format!("{}\0{content}\n", rel.display()));
    }
    digest(&text)
}

fn digest_bytes(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `<data>/trusted-hooks`: one `DIGEST PATH` line per approved file content.
pub struct TrustStore {
    file: PathBuf,
}

impl TrustStore {
    pub fn new(data_dir: &Path) -> Self {
        Self {
            file: data_dir.join("trusted-hooks"),
        }
    }

    fn digests(&self) -> BTreeSet<String> {
        std::fs::read_to_string(&self.file)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .map(str::to_string)
            .collect()
    }

    pub fn is_trusted(&self, digest: &str) -> bool {
        self.digests().contains(digest)
    }

    /// Records the approval of `path`'s content with `digest`.
    pub fn trust(&self, digest: &str, path: &Path) -> std::io::Result<()> {
        if self.is_trusted(digest) {
            return Ok(());
        }
        if let Some(dir) = self.file.parent() {
            std::fs::create_dir_all(dir)?;
        }
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.file)?;
        writeln!(f, "{digest} {}", path.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_approval_is_for_one_content_and_a_changed_file_is_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let store = TrustStore::new(dir.path());
        let first = digest("[[hooks]]\nevent = \"stop\"\ncommand = \"x\"\n");
        assert!(!store.is_trusted(&first));
        store
            .trust(&first, Path::new("/w/.squad/config.toml"))
            .unwrap();
        store
            .trust(&first, Path::new("/w/.squad/config.toml"))
            .unwrap();
        assert!(store.is_trusted(&first));
        assert_eq!(
            std::fs::read_to_string(dir.path().join("trusted-hooks"))
                .unwrap()
                .lines()
                .count(),
            1
        );
        let changed = digest("[[hooks]]\nevent = \"stop\"\ncommand = \"rm -rf ~\"\n");
        assert_ne!(first, changed);
        assert!(!store.is_trusted(&changed));
        assert_eq!(digest("").len(), 64);
    }

    #[test]
    fn an_approval_pins_the_workspace_files_the_command_names() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        std::fs::create_dir_all(ws.join(".claude/hooks")).unwrap();
        std::fs::write(ws.join(".claude/hooks/guard.py"), "print('ok')\n").unwrap();
        std::fs::write(ws.join("check.sh"), "exit 0\n").unwrap();
        let cmd = r#"python3 "$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.py && sh check.sh > /tmp/x"#;
        assert_eq!(
            pinned_files(cmd, ws),
            [ws.join(".claude/hooks/guard.py"), ws.join("check.sh")]
        );
        let before = approval_key("d", cmd, ws);
        assert_eq!(before, approval_key("d", cmd, ws));
        std::fs::write(ws.join(".claude/hooks/guard.py"), "import os\n").unwrap();
        assert_ne!(before, approval_key("d", cmd, ws), "an edited script");
        assert!(
            pinned_files("cat ../../etc/passwd", ws).is_empty(),
            "outside"
        );
        // A script named but missing is pinned as missing: creating it changes the key.
        let missing = approval_key("d", "sh hooks/later.sh", ws);
        std::fs::create_dir_all(ws.join("hooks")).unwrap();
        std::fs::write(ws.join("hooks/later.sh"), "x").unwrap();
        assert_ne!(missing, approval_key("d", "sh hooks/later.sh", ws));
    }
}
