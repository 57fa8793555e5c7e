//! The file tools through the client (`fs/read_text_file`, `fs/write_text_file`), where it
//! offers them: the editor's unsaved buffers are read, and edits land in them.

use super::rpc::Rpc;
use crate::tools::EditorFiles;
use agent_client_protocol::v1::schema::{ReadTextFileRequest, WriteTextFileRequest};
use async_trait::async_trait;
use std::path::Path;
use std::sync::OnceLock;

pub struct ClientFiles {
    rpc: Rpc,
    /// Known once the session has started (squad makes the id).
    pub session_id: OnceLock<String>,
    read: bool,
    write: bool,
}

impl ClientFiles {
    pub fn new(rpc: Rpc, read: bool, write: bool) -> Self {
        Self {
            rpc,
            session_id: OnceLock::new(),
            read,
            write,
        }
    }
}

#[async_trait]
impl EditorFiles for ClientFiles {
    async fn read(&self, path: &Path) -> Option<Result<String, String>> {
        if !self.read {
            return None;
        }
        let session = self.session_id.get()?;
        let answer = self
            .rpc
            .request(ReadTextFileRequest::new(session.clone(), path))
            .await;
        Some(answer.map(|r| r.content).map_err(|e| e.message))
    }

    async fn write(&self, path: &Path, text: &str) -> Option<Result<(), String>> {
        if !self.write {
            return None;
        }
        let session = self.session_id.get()?;
        let answer = self
            .rpc
            .request(WriteTextFileRequest::new(session.clone(), path, text))
            .await;
        Some(answer.map(|_| ()).map_err(|e| e.message))
    }
}
