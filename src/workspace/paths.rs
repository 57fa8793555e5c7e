//! PLACEHOLDER — to be replaced by real path confinement.
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum PathError {
    #[error("path '{path}' is outside the workspace: {why}")]
    Escapes { path: String, why: String },
}

/// The workspace root; every tool path is resolved against it and confined to it.
#[derive(Clone, Debug)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    pub fn new(root: &Path) -> std::io::Result<Self> {
        Ok(Self { root: root.canonicalize()? })
    }
    pub fn root(&self) -> &Path {
        &self.root
    }
    /// Resolves a path the model gave (relative to the root) to an absolute path inside it.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, PathError> {
        Ok(self.root.join(path))
    }
}
