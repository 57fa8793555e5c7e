//! Path confinement: every path a tool touches is resolved against the workspace root and
//! refused if it could lead outside it (absolute paths, escaping `..`, symlinks out).
//!
//! The check resolves symlinks at the time of the call; a process that swaps a directory for
//! a symlink between the check and the use is outside what this guards against (the model
//! is not an adversary with a second process; the aim is to stop mistakes and stray paths).

use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

/// The rule, repeated in every refusal so the model learns what to send instead.
const RULE: &str = "paths are relative to the workspace root (e.g. 'src/main.rs', or '.' for the root) and must stay inside it";

#[derive(Debug, thiserror::Error)]
pub enum PathError {
    #[error("path '{path}' is absolute; {RULE}{hint}")]
    Absolute {
        path: String,
        /// Suggests the relative form when the absolute path lies inside the root.
        hint: String,
    },
    #[error("path '{path}' is outside the workspace: {why}; {RULE}")]
    Escapes { path: String, why: String },
    #[error("path '{path}' cannot be used: {why}; {RULE}")]
    Invalid { path: String, why: String },
    #[error("cannot resolve path '{path}': {source}")]
    Io {
        path: String,
        #[source]
        source: io::Error,
    },
}

/// The workspace root; every tool path is resolved against it and confined to it.
#[derive(Clone, Debug)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// Canonicalizes `root` so that containment checks compare real paths.
    pub fn new(root: &Path) -> io::Result<Self> {
        Ok(Self {
            root: root.canonicalize()?,
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves a path the model gave (relative to the root) to an absolute path inside it.
    ///
    /// Works for paths that do not exist yet (files about to be written): the deepest
    /// existing ancestor is resolved and checked, and the missing rest is appended. Existing
    /// symlinks along the way are followed, so the result is the real location, and refused
    /// if that is outside the root. `""` and `"."` are the root.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, PathError> {
        let rel = self.normalize(path)?;
        let full = self.root.join(&rel);

        // Walk up to the deepest entry that exists without following a final symlink, so a
        // dangling symlink counts as existing (writing through it could create a file
        // anywhere).
        let mut existing = full.clone();
        let mut missing: Vec<OsString> = Vec::new();
        while existing != self.root && std::fs::symlink_metadata(&existing).is_err() {
            match existing.file_name() {
                Some(name) => missing.push(name.to_os_string()),
                None => break,
            }
            existing.pop();
        }

        let real = match existing.canonicalize() {
            Ok(real) => real,
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                let shown = self.relative(&existing);
                return Err(PathError::Invalid {
                    path: path.to_string(),
                    why: format!("'{shown}' is a symlink whose target does not exist"),
                });
            }
            Err(source) => {
                return Err(PathError::Io {
                    path: path.to_string(),
                    source,
                });
            }
        };
        if !real.starts_with(&self.root) {
            let (link, to) = self.escaping_link(&existing).unwrap_or((existing, real));
            return Err(PathError::Escapes {
                path: path.to_string(),
                why: format!(
                    "'{}' is a symlink to '{}', which is outside",
                    self.relative(&link),
                    to.display()
                ),
            });
        }
        Ok(missing.into_iter().rev().fold(real, |acc, c| acc.join(c)))
    }

    /// How a path under the root is shown to the model and the user: relative, with `/`,
    /// `.` for the root itself. Paths outside the root are shown in full.
    pub fn relative(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
            Ok(rel) => rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/"),
            Err(_) => path.display().to_string(),
        }
    }

    /// The first component of `path` (under the root) whose real location is outside the
    /// root, with that location: names the symlink to blame rather than the whole path.
    fn escaping_link(&self, path: &Path) -> Option<(PathBuf, PathBuf)> {
        let rel = path.strip_prefix(&self.root).ok()?;
        let mut prefix = self.root.clone();
        for component in rel.components() {
            prefix.push(component);
            if let Ok(real) = prefix.canonicalize()
                && !real.starts_with(&self.root)
            {
                return Some((prefix, real));
            }
        }
        None
    }

    /// Lexical clean-up: drops `.`, applies `..` (refusing any that climbs above the root)
    /// and refuses absolute paths. Symlinks are dealt with afterwards, on the real files.
    fn normalize(&self, path: &str) -> Result<PathBuf, PathError> {
        if path.contains('\0') {
            return Err(PathError::Invalid {
                path: path.escape_debug().to_string(),
                why: "it contains a NUL byte".to_string(),
            });
        }
        let given = Path::new(path);
        if given.has_root() {
            return Err(PathError::Absolute {
                path: path.to_string(),
                hint: self.absolute_hint(given),
            });
        }
        let mut out = PathBuf::new();
        for component in given.components() {
            match component {
                Component::CurDir => {}
                Component::Normal(name) => out.push(name),
                Component::ParentDir => {
                    if !out.pop() {
                        return Err(PathError::Escapes {
                            path: path.to_string(),
                            why: "'..' climbs above the workspace root".to_string(),
                        });
                    }
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(PathError::Absolute {
                        path: path.to_string(),
                        hint: self.absolute_hint(given),
                    });
                }
            }
        }
        Ok(out)
    }

    /// Models often echo the absolute path they saw in command output; tell them the
    /// relative form instead of just saying no.
    fn absolute_hint(&self, given: &Path) -> String {
        match given.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => "; use '.' instead".to_string(),
            Ok(rel) => format!("; use '{}' instead", rel.display()),
            Err(_) => String::new(),
        }
    }
}

#[cfg(test)]
mod tests;
