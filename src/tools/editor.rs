//! Files as the user's editor has them. A front end inside an editor (ACP's
//! `fs/read_text_file` and `fs/write_text_file`) lets the file tools see unsaved buffers
//! and land edits in them; without one, or where it declines, the tools use the disk.

use super::ToolContext;
use async_trait::async_trait;
use std::path::Path;

#[async_trait]
pub trait EditorFiles: Send + Sync {
    /// The file's text as the editor has it; `None`: not the editor's to say (read the disk).
    async fn read(&self, path: &Path) -> Option<Result<String, String>>;

    /// Writes the file through the editor; `None`: the editor does not write (write the disk).
    async fn write(&self, path: &Path, text: &str) -> Option<Result<(), String>>;
}

/// The file as the user's editor has it (unsaved changes included), when a front end in an
/// editor offers that; `None` reads the disk.
pub(crate) async fn text(ctx: &ToolContext, path: &Path) -> Option<String> {
    let editor = ctx.editor.as_ref()?;
    // Only files on disk: asking about one that is not there gets an error the editor
    // shows the user (a buffer never saved is the rare loss).
    if !tokio::fs::metadata(path).await.is_ok_and(|m| m.is_file()) {
        return None;
    }
    match editor.read(path).await? {
        Ok(text) => Some(text),
        Err(e) => {
            // A file the editor cannot give (say, not there yet) is the disk's to answer.
            tracing::debug!("editor read of {} failed: {e}", path.display());
            None
        }
    }
}
