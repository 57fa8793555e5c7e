//! A connected agent with its session: each call raced against the agent's faults (its
//! process ending, a line that is not JSON-RPC, no answer in time), so none waits forever.

use super::connection::{Connection, connect};
use super::error::ClientError;
use super::files::Folder;
use super::permission::Permissions;
use super::process::Process;
use super::updates::AgentUpdate;
use super::wire::{Malformed, lines};
use super::{AgentCommand, StopReason};
use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    CancelNotification, ClientCapabilities, ContentBlock, FileSystemCapabilities, Implementation,
    InitializeRequest, NewSessionRequest, PromptRequest, SessionId, TextContent,
};
use agent_client_protocol::{
    JsonRpcRequest, is_connection_terminated, is_incoming_transport_closed,
};
use std::path::Path;
use std::time::Duration;
use tokio::sync::mpsc;

/// How a client deals with its agent.
#[derive(Clone)]
pub struct ClientOptions {
    /// Answers the agent's permission requests.
    pub permissions: Permissions,
    /// For `initialize` and `session/new`.
    pub timeout: Duration,
    /// For a whole prompt turn.
    pub prompt_timeout: Duration,
}

impl ClientOptions {
    pub fn new(permissions: Permissions) -> Self {
        Self {
            permissions,
            timeout: Duration::from_secs(30),
            prompt_timeout: Duration::from_secs(30 * 60),
        }
    }
}

/// An agent squad drives, with its one session in a folder.
pub struct AcpClient {
    connection: Connection,
    session: SessionId,
    process: Process,
    malformed: Malformed,
    updates: mpsc::UnboundedReceiver<AgentUpdate>,
    options: ClientOptions,
}

impl AcpClient {
    /// Starts `agent`, initialises it and opens a session whose cwd is `folder`.
    pub async fn start(
        agent: &AgentCommand,
        folder: &Path,
        options: ClientOptions,
    ) -> Result<Self, ClientError> {
        let folder = Folder::new(folder).map_err(|source| ClientError::Spawn {
            command: agent.command.clone(),
            source,
        })?;
        let mut process = Process::start(agent, folder.root())?;
        let (Some(stdin), Some(stdout)) = (process.stdin.take(), process.stdout.take()) else {
            return Err(ClientError::Spawn {
                command: agent.command.clone(),
                source: std::io::Error::other("no pipes to the agent"),
            });
        };
        let malformed = Malformed::default();
        let transport = lines(stdin, stdout, malformed.clone());
        let (tx, updates) = mpsc::unbounded_channel();
        let root = folder.root().to_path_buf();
        let permissions = options.permissions.clone();
        let Some(connection) = connect(transport, folder, tx, permissions).await else {
            return Err(crashed(&process, "connecting").await);
        };
        let mut client = Self {
            connection,
            session: SessionId::new(""),
            process,
            malformed,
            updates,
            options,
        };
        let files = FileSystemCapabilities::new()
            .read_text_file(true)
            .write_text_file(true);
        let init = InitializeRequest::new(ProtocolVersion::V1)
            .client_capabilities(ClientCapabilities::new().fs(files))
            .client_info(Implementation::new("squad", env!("CARGO_PKG_VERSION")));
        let within = client.options.timeout;
        client.call("initialize", init, within).await?;
        let opened = client
            .call("session/new", NewSessionRequest::new(root), within)
            .await?;
        client.session = opened.session_id;
        Ok(client)
    }

    /// Sends `text` as a prompt and waits for the turn's end; the updates of the turn are
    /// on [`AcpClient::updates`] by then.
    pub async fn prompt(&self, text: &str) -> Result<StopReason, ClientError> {
        self.prompt_within(text, self.options.prompt_timeout).await
    }

    /// [`AcpClient::prompt`], the turn given at most `within` (a worker's wall time left).
    pub async fn prompt_within(
        &self,
        text: &str,
        within: Duration,
    ) -> Result<StopReason, ClientError> {
        let block = ContentBlock::Text(TextContent::new(text));
        let request = PromptRequest::new(self.session.clone(), vec![block]);
        Ok(self
            .call("session/prompt", request, within)
            .await?
            .stop_reason)
    }

    /// The agent's updates, in the order it sent them.
    pub fn updates(&mut self) -> &mut mpsc::UnboundedReceiver<AgentUpdate> {
        &mut self.updates
    }

    /// The agent's updates, taken out so they can be read while a prompt runs (the
    /// client then keeps a closed channel).
    pub fn take_updates(&mut self) -> mpsc::UnboundedReceiver<AgentUpdate> {
        std::mem::replace(&mut self.updates, mpsc::unbounded_channel().1)
    }

    /// Asks the agent to stop its turn (`session/cancel`); the prompt then ends `cancelled`.
    pub fn cancel(&self) -> Result<(), ClientError> {
        let note = CancelNotification::new(self.session.clone());
        self.connection
            .cx
            .send_notification(note)
            .map_err(|e| ClientError::Refused {
                during: "session/cancel",
                message: e.message,
            })
    }

    /// The agent's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.process.pid
    }

    /// Ends the connection, gives the agent a moment to exit on its closed stdin, then
    /// ends its process.
    pub async fn close(mut self) {
        let _ = self.connection.stop.send(());
        let _ = self.process.status_within(Duration::from_secs(2)).await;
        self.process.kill();
    }

    async fn call<R: JsonRpcRequest>(
        &self,
        during: &'static str,
        request: R,
        within: Duration,
    ) -> Result<R::Response, ClientError> {
        let sent = self.connection.cx.send_request(request).block_task();
        let mut exited = self.process.exited.clone();
        tokio::select! {
            answer = sent => match answer {
                Ok(response) => Ok(response),
                Err(e) if is_incoming_transport_closed(&e) || is_connection_terminated(&e) => {
                    Err(crashed(&self.process, during).await)
                }
                Err(e) => Err(ClientError::Refused { during, message: e.message }),
            },
            line = self.malformed.seen() => Err(ClientError::Protocol {
                during,
                line,
                stderr: self.process.stderr.text(),
            }),
            // The watch's guard is let go before the branch awaits (the call stays `Send`).
            () = async { let _ = exited.wait_for(Option::is_some).await; } => {
                Err(crashed(&self.process, during).await)
            }
            () = tokio::time::sleep(within) => Err(ClientError::Timeout {
                during,
                after: within,
                stderr: self.process.stderr.text(),
            }),
        }
    }
}

/// The agent's end, as far as it is known within a moment; its stderr read to the end.
async fn crashed(process: &Process, during: &'static str) -> ClientError {
    let status = process
        .status_within(Duration::from_secs(2))
        .await
        .unwrap_or_else(|| "its output closed".to_string());
    // The reader of its stderr may still hold the last bytes.
    tokio::time::sleep(Duration::from_millis(50)).await;
    ClientError::Crashed {
        during,
        status,
        stderr: process.stderr.text(),
    }
}
