//! One live connection to one MCP server through rmcp: a child process on stdio, or a
//! streamable HTTP session. It knows when the server goes away (its transport reports the
//! end of input) and it never leaves a process behind: a stdio server runs in a process
//! group of its own, killed when the connection is dropped.

use crate::config::McpServerConfig;
use crate::sync::lock;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
    JsonObject, Tool,
};
use rmcp::service::{NotificationContext, RunningService, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess, Transport};
use rmcp::{ClientHandler, Peer, RoleClient, ServiceError, ServiceExt};
use std::collections::VecDeque;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncBufReadExt;
use tokio_util::sync::CancellationToken;

/// How long a server gets to exit on its own once its input is closed.
const EXIT_GRACE: Duration = Duration::from_secs(2);
/// Lines of a server's stderr kept to explain why it failed.
const STDERR_LINES: usize = 3;

/// Why a server could not be connected.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("cannot start `{command}`: {source}")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the variable {0} (bearer_token_env) is not set")]
    MissingToken(String),
    #[error("the MCP handshake failed: {0}")]
    Handshake(String),
    #[error("cannot list its tools: {0}")]
    ListTools(String),
    #[error("neither `command` nor `url` is set")]
    NoTransport,
}

/// Told when the server says its tool list changed.
pub type OnToolsChanged = Arc<dyn Fn() + Send + Sync>;

/// squad as an MCP client: it asks for nothing from the server but its tools, and hears
/// when they change.
struct Client {
    info: ClientConfig,
    on_tools_changed: OnToolsChanged,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        (self.on_tools_changed)();
        std::future::ready(())
    }
}

pub struct Connection {
    peer: Peer<RoleClient>,
    /// Taken by `shutdown`; dropping it also ends the session.
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, Client>>>,
    /// Cancelled when the server's output ends: it exited or the HTTP session closed.
    closed: CancellationToken,
    group: Mutex<ProcessGroup>,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

impl Connection {
    /// Starts or reaches the server and completes the MCP handshake. No timeout here: the
    /// caller bounds it, and dropping this future kills whatever it started.
    pub async fn open(
        config: &McpServerConfig,
        workspace: &Path,
        on_tools_changed: OnToolsChanged,
    ) -> Result<Self, ConnectError> {
        let client = Client {
            info: ClientConfig::new(
                ClientCapabilities::default(),
                Implementation::new("squad", env!("CARGO_PKG_VERSION")),
            ),
            on_tools_changed,
        };
        let closed = CancellationToken::new();
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        let mut group = ProcessGroup(None);
        let handshake =
            |e: rmcp::service::ClientInitializeError| ConnectError::Handshake(e.to_string());
        let service = match (&config.command, &config.url) {
            (Some(command), _) => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(&config.args)
                    .envs(&config.env)
                    .current_dir(config.cwd_in(workspace))
                    .process_group(0)
                    .kill_on_drop(true);
                let spawn_error = |source| ConnectError::Spawn {
                    command: command.clone(),
                    source,
                };
                let (process, err) = TokioChildProcess::builder(cmd)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(spawn_error)?;
                group = ProcessGroup(process.id());
                if let Some(err) = err {
                    tokio::spawn(keep_stderr(err, stderr.clone()));
                }
                let transport = Watched::new(process, closed.clone());
                match client.serve(transport).await {
                    Ok(service) => service,
                    // The process's own words say more than "connection closed".
                    Err(e) => return Err(with_stderr(handshake(e), &stderr)),
                }
            }
            (None, Some(url)) => {
                let mut http = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                if let Some(var) = &config.bearer_token_env {
                    let token = std::env::var(var)
                        .ok()
                        .filter(|t| !t.trim().is_empty())
                        .ok_or_else(|| ConnectError::MissingToken(var.clone()))?;
                    http = http.auth_header(token);
                }
                let transport = StreamableHttpClientTransport::from_config(http);
                client
                    .serve(Watched::new(transport, closed.clone()))
                    .await
                    .map_err(handshake)?
            }
            (None, None) => return Err(ConnectError::NoTransport),
        };
        Ok(Self {
            peer: service.peer().clone(),
            service: tokio::sync::Mutex::new(Some(service)),
            closed,
            group: Mutex::new(group),
            stderr,
        })
    }

    /// Every tool the server has, all pages.
    pub async fn list_tools(&self) -> Result<Vec<Tool>, ConnectError> {
        self.peer
            .list_all_tools()
            .await
            .map_err(|e| with_stderr(ConnectError::ListTools(e.to_string()), &self.stderr))
    }

    /// One `tools/call`. Dropping the future tells the server the call was abandoned.
    pub async fn call(&self, tool: &str, args: JsonObject) -> Result<CallToolResult, ServiceError> {
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(args);
        self.peer.call_tool(params).await
    }

    /// Cancelled once the server is gone.
    pub fn closed(&self) -> CancellationToken {
        self.closed.clone()
    }

    pub fn is_alive(&self) -> bool {
        !self.closed.is_cancelled() && !self.peer.is_transport_closed()
    }

    /// The last lines the server wrote on stderr, for an error message.
    pub fn stderr_tail(&self) -> Option<String> {
        tail(&self.stderr)
    }

    /// Ends the session: closes the server's input, gives it `EXIT_GRACE` to exit, then
    /// kills its process group.
    pub async fn shutdown(&self) {
        let service = self.service.lock().await.take();
        if let Some(mut service) = service {
            let _ = service.close_with_timeout(EXIT_GRACE).await;
        }
        lock(&self.group).kill();
    }
}

fn with_stderr(e: ConnectError, stderr: &Mutex<VecDeque<String>>) -> ConnectError {
    match (e, tail(stderr)) {
        (ConnectError::Handshake(m), Some(t)) => {
            ConnectError::Handshake(format!("{m}; the server said: {t}"))
        }
        (ConnectError::ListTools(m), Some(t)) => {
            ConnectError::ListTools(format!("{m}; the server said: {t}"))
        }
        (e, _) => e,
    }
}

fn tail(stderr: &Mutex<VecDeque<String>>) -> Option<String> {
    let lines = lock(stderr);
    let text: Vec<&str> = lines.iter().map(String::as_str).collect();
    (!text.is_empty()).then(|| text.join(" | "))
}

/// Reads the server's stderr so it never reaches the terminal (it would tear the TUI):
/// lines go to the log, the last few are kept for error messages.
async fn keep_stderr(err: tokio::process::ChildStderr, keep: Arc<Mutex<VecDeque<String>>>) {
    let mut lines = tokio::io::BufReader::new(err).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!(target: "squad::mcp", "server stderr: {line}");
        if line.trim().is_empty() {
            continue;
        }
        let mut kept = lock(&keep);
        if kept.len() == STDERR_LINES {
            kept.pop_front();
        }
        kept.push_back(crate::text::clip(&line, 300));
    }
}

/// A stdio server's process group (it is the leader). Killed when dropped, so a server
/// and anything it started (`npx`, `uvx` and shell wrappers start more) never outlive
/// the connection, whichever way it ends.
struct ProcessGroup(Option<u32>);

impl ProcessGroup {
    fn kill(&mut self) {
        let Some(pgid) = self.0.take().and_then(|p| libc::pid_t::try_from(p).ok()) else {
            return;
        };
        // SAFETY: kill(2) has no memory-safety preconditions. `pgid` is a group we created
        // for the server; signalling it after it is gone is a harmless ESRCH.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A transport that cancels `closed` when the server's messages end.
struct Watched<T> {
    inner: T,
    closed: CancellationToken,
}

impl<T> Watched<T> {
    fn new(inner: T, closed: CancellationToken) -> Self {
        Self { inner, closed }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Watched<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        let closed = self.closed.clone();
        let next = self.inner.receive();
        async move {
            let message = next.await;
            if message.is_none() {
                closed.cancel();
            }
            message
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.closed.cancel();
        self.inner.close()
    }
}
