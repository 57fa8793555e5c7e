//! The one path by which the file tools that change files (`write_file`, `edit_file`,
//! `apply_patch`) see what they are about to change and write it: the path confined to the
//! workspace, a directory refused, the file as the user's editor has it (unsaved changes
//! included) or else as the disk has it, and the new content written through the editor
//! where it takes it, else to disk, with the folders it needs (removed again when the write
//! fails) and the file's permissions kept.

use super::{ToolContext, ToolError};
use std::path::{Path, PathBuf};

/// A file a tool is about to change, as it is now.
pub(crate) struct Target {
    /// Inside the workspace.
    pub path: PathBuf,
    /// As the model and the user name it.
    pub rel: String,
    /// What it holds now; `None`: it does not exist.
    pub before: Option<Vec<u8>>,
    /// Its permissions on disk, when it is there.
    pub mode: Option<std::fs::Permissions>,
}

impl Target {
    /// What it holds now as text; `None`: it does not exist, `Err`: it is not UTF-8.
    pub fn text(&self) -> Option<Result<&str, ToolError>> {
        let bytes = self.before.as_deref()?;
        Some(std::str::from_utf8(bytes).map_err(|_| ToolError::not_text(&self.rel)))
    }

    /// What it holds now as shown to the user (a binary file by its size).
    pub fn shown(&self) -> Option<String> {
        self.before.as_deref().map(shown)
    }
}

/// A file's content as a diff or a summary shows it.
pub(crate) fn shown(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_string(),
        Err(_) => format!("(binary file, {} bytes)\n", bytes.len()),
    }
}

/// `path` resolved in the workspace (a path out of it is refused) and what it holds now:
/// the editor's buffer where a front end in an editor has one, else the disk's bytes.
pub(crate) async fn open(ctx: &ToolContext, path: &str) -> Result<Target, ToolError> {
    let target = ctx.workspace.resolve(path)?;
    let rel = ctx.workspace.relative(&target);
    let (before, mode) = match tokio::fs::metadata(&target).await {
        Ok(meta) if meta.is_dir() => return Err(ToolError::is_dir(&rel)),
        Ok(meta) => {
            let text = super::editor::text(ctx, &target).await;
            let bytes = match text {
                Some(text) => text.into_bytes(),
                None => tokio::fs::read(&target)
                    .await
                    .map_err(|e| ToolError::io("read", &rel, e))?,
            };
            (Some(bytes), Some(meta.permissions()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (None, None),
        Err(e) => return Err(ToolError::io("inspect", &rel, e)),
    };
    Ok(Target {
        path: target,
        rel,
        before,
        mode,
    })
}

/// Writes `content` at `target` (`None`: deletes it): through the user's editor when it
/// takes the write, else to disk, creating the folders it needs and removing them again
/// when the write fails. `mode`: permissions to give the file (a moved file keeps its
/// own). Returns the folders it created, deepest first, for an undo.
pub(crate) async fn store(
    ctx: &ToolContext,
    target: &Target,
    content: Option<&[u8]>,
    mode: Option<&std::fs::Permissions>,
) -> Result<Vec<PathBuf>, ToolError> {
    let fail = |e: std::io::Error| cannot_write(&target.rel, e);
    let Some(bytes) = content else {
        tokio::fs::remove_file(&target.path).await.map_err(fail)?;
        return Ok(Vec::new());
    };
    let made = missing_parents(&target.path);
    if let Some(parent) = target.path.parent() {
        tokio::fs::create_dir_all(parent).await.map_err(|e| {
            let folder = ctx.workspace.relative(parent);
            cannot_write(
                &target.rel,
                format!("cannot create its folder '{folder}': {e}"),
            )
        })?;
    }
    let written = write(ctx, target, bytes).await;
    let written = match (written, mode) {
        (Ok(()), Some(mode)) => tokio::fs::set_permissions(&target.path, mode.clone())
            .await
            .map_err(fail),
        (result, _) => result,
    };
    if let Err(e) = written {
        remove_dirs(&made);
        return Err(e);
    }
    Ok(made)
}

async fn write(ctx: &ToolContext, target: &Target, bytes: &[u8]) -> Result<(), ToolError> {
    if let (Some(editor), Ok(text)) = (&ctx.editor, std::str::from_utf8(bytes))
        && let Some(written) = editor.write(&target.path, text).await
    {
        return written.map_err(|e| cannot_write(&target.rel, e));
    }
    tokio::fs::write(&target.path, bytes)
        .await
        .map_err(|e| cannot_write(&target.rel, e))
}

fn cannot_write(rel: &str, why: impl std::fmt::Display) -> ToolError {
    ToolError::Failed(format!("cannot write '{rel}': {why}"))
}

/// Puts `target` back as `open` found it (after a write that `made` these folders).
pub(crate) async fn restore(
    ctx: &ToolContext,
    target: &Target,
    made: &[PathBuf],
) -> Result<(), ToolError> {
    let result = match &target.before {
        Some(bytes) => store(ctx, target, Some(bytes), target.mode.as_ref())
            .await
            .map(drop),
        None => tokio::fs::remove_file(&target.path)
            .await
            .map_err(|e| ToolError::io("remove", &target.rel, e)),
    };
    remove_dirs(made);
    result
}

/// The ancestors of `path` that do not exist yet, deepest first.
fn missing_parents(path: &Path) -> Vec<PathBuf> {
    path.ancestors()
        .skip(1)
        .take_while(|p| std::fs::symlink_metadata(p).is_err())
        .map(Path::to_path_buf)
        .collect()
}

fn remove_dirs(dirs: &[PathBuf]) {
    for dir in dirs {
        // Only empty ones: a folder someone else filled meanwhile stays.
        let _ = std::fs::remove_dir(dir);
    }
}
