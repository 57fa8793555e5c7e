//! Which workspace hook files the user approved. A cloned repository must not run
//! commands on open, so the hooks of a workspace's `.squad/config.toml` run only once the
//! user approved that file's exact content (`squad hooks trust`); any change to the file
//! needs a new approval. Approvals live in squad's data dir, never in the workspace.

use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The SHA-256 of a file's text, in hex: what an approval is for.
pub fn digest(text: &str) -> String {
    Sha256::digest(text.as_bytes())
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
}
