//! The agent's `fs/read_text_file` and `fs/write_text_file`, confined to its folder: a
//! path must be absolute (as ACP says) and lie inside the folder once symlinks are
//! followed; anything else is refused with an error the agent receives, and nothing
//! outside is read or written.

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

    /// `path` as a file inside the folder: its real path, the nearest existing ancestor's
    /// symlinks followed (a file still to be written may not exist yet).
    fn inside(&self, path: &Path) -> Result<PathBuf, String> {
        if !path.is_absolute() {
            return Err(format!("{} is not an absolute path", path.display()));
        }
        if path.components().any(|c| c == Component::ParentDir) {
            return Err(format!("{} goes up with `..`", path.display()));
        }
        let mut existing = path.to_path_buf();
        let mut rest = Vec::new();
        let real = loop {
            match existing.canonicalize() {
                Ok(real) => break real,
                Err(_) => match (existing.file_name(), existing.parent()) {
                    (Some(name), Some(parent)) => {
                        rest.push(name.to_os_string());
                        existing = parent.to_path_buf();
                    }
                    _ => return Err(format!("{} cannot be resolved", path.display())),
                },
            }
        };
        let full = rest.iter().rev().fold(real, |p, name| p.join(name));
        if full.starts_with(&self.root) && full != self.root {
            Ok(full)
        } else {
            Err(format!(
                "{} is outside the folder this agent works in ({})",
                path.display(),
                self.root.display()
            ))
        }
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
