//! The agent's `fs/read_text_file` and `fs/write_text_file`, confined to its folder: a
//! path must be absolute (as ACP says), lie under the folder, and pass the workspace's
//! rules there (`workspace/paths.rs`, the rules every squad tool's path passes);
//! anything else is refused with an error the agent receives, and nothing outside is
//! read or written.

use crate::workspace::Workspace;
use std::path::{Component, Path, PathBuf};

/// The folder an agent may read and write in.
#[derive(Clone, Debug)]
pub(super) struct Folder {
    root: PathBuf,
}

impl Folder {
    pub fn new(root: &Path) -> std::io::Result<Self> {
        Ok(Self {
            root: root.canonicalize()?,
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `path` as a file inside the folder, by the workspace's rules
    /// (`crate::workspace::Workspace::resolve`: symlinks followed, a dangling one refused,
    /// a file still to be written may not exist yet), after ACP's own: absolute, no `..`.
    fn inside(&self, path: &Path) -> Result<PathBuf, String> {
        if !path.is_absolute() {
            return Err(format!("{} is not an absolute path", path.display()));
        }
        if path.components().any(|c| c == Component::ParentDir) {
            return Err(format!("{} goes up with `..`", path.display()));
        }
        let outside = || {
            format!(
                "{} is outside the folder this agent works in ({})",
                path.display(),
                self.root.display()
            )
        };
        let rel = path.strip_prefix(&self.root).map_err(|_| outside())?;
        if rel.as_os_str().is_empty() {
            return Err(outside());
        }
        let workspace = Workspace::new(&self.root).map_err(|e| e.to_string())?;
        workspace
            .resolve(&rel.to_string_lossy())
            .map_err(|e| match e {
                crate::workspace::PathError::Escapes { .. } => outside(),
                other => other.to_string(),
            })
    }

    /// The text of `path`, from line `line` (1-based) for `limit` lines when given.
    pub fn read(
        &self,
        path: &Path,
        line: Option<u32>,
        limit: Option<u32>,
    ) -> Result<String, String> {
        let file = self.inside(path)?;
        let text =
            std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", path.display()))?;
        if line.is_none() && limit.is_none() {
            return Ok(text);
        }
        let skip = line.map_or(0, |l| l.saturating_sub(1) as usize);
        let take = limit.map_or(usize::MAX, |l| l as usize);
        Ok(text.split_inclusive('\n').skip(skip).take(take).collect())
    }

    /// Writes `content` to `path`, making its folders.
    pub fn write(&self, path: &Path, content: &str) -> Result<(), String> {
        let file = self.inside(path)?;
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        std::fs::write(&file, content).map_err(|e| format!("{}: {e}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inside_is_read_and_written_and_outside_is_refused() {
        let top = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        let folder = Folder::new(top.path()).unwrap();
        let root = folder.root().to_path_buf();
        folder
            .write(&root.join("sub/new.txt"), "a\nb\nc\n")
            .unwrap();
        assert_eq!(
            folder.read(&root.join("sub/new.txt"), None, None).unwrap(),
            "a\nb\nc\n"
        );
        assert_eq!(
            folder
                .read(&root.join("sub/new.txt"), Some(2), Some(1))
                .unwrap(),
            "b\n"
        );

        let outside = other.path().join("secret.txt");
        std::fs::write(&outside, "secret").unwrap();
        let refused = folder.read(&outside, None, None).unwrap_err();
        assert!(refused.contains("outside the folder"), "{refused}");
        assert!(folder.write(&other.path().join("x"), "x").is_err());
        assert!(!other.path().join("x").exists());
        assert!(folder.read(Path::new("relative.txt"), None, None).is_err());
        assert!(folder.write(&root.join("../escape.txt"), "x").is_err());
        // A symlink inside that points out is outside.
        std::os::unix::fs::symlink(other.path(), root.join("link")).unwrap();
        assert!(
            folder
                .read(&root.join("link/secret.txt"), None, None)
                .is_err()
        );
        assert!(folder.write(&root.join("link/new.txt"), "x").is_err());
        assert!(!other.path().join("new.txt").exists());
    }
}
