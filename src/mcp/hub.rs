//! Every MCP server of a session: started together and in the background, restarted on
//! the next call after a failure, their tools under one set of unique names, and all of
//! them stopped with the session.

use super::connection::{ConnectError, Connection};
use super::content;
use super::names;
use crate::config::McpServerConfig;
use crate::model::ToolSpec;
use crate::sync::lock;
use rmcp::model::Tool;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

/// Where a server is in its life.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerState {
    /// `enabled = false`: never started.
    Disabled,
    Starting,
    Ready,
    /// Did not start, or went away; the next call of one of its tools starts it again.
    Failed(String),
    /// The session ended.
    Stopped,
}

/// What a front end shows about one server.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerStatus {
    pub name: String,
    pub state: ServerState,
    /// How it is reached: the command line, or the URL.
    pub transport: String,
    /// Its tools, as the model sees them (`NAME__TOOL`).
    pub tools: Vec<String>,
    /// How long its last start took, once it is ready.
    pub started_in: Option<Duration>,
    /// Set on the one change the user must be told about: a failure to start, or a
    /// server that went away. Retries that fail again stay quiet (calls say why).
    pub report: Option<String>,
}

/// One tool of one server, as offered to the model.
#[derive(Clone, Debug)]
pub struct McpTool {
    /// `NAME__TOOL`, unique in the session.
    pub name: String,
    pub server: String,
    /// The server's own name for it.
    pub tool: String,
    pub spec: ToolSpec,
    /// The server annotates it `readOnlyHint: true`: no approval needed.
    pub read_only: bool,
}

pub struct McpHub {
    inner: Arc<Inner>,
}

struct Inner {
    workspace: PathBuf,
    servers: Vec<Server>,
    index: RwLock<Index>,
    status: Option<mpsc::UnboundedSender<ServerStatus>>,
    /// Bumped on every status change, for waiting until no server is starting.
    changes: watch::Sender<u64>,
    stop: CancellationToken,
}

#[derive(Default)]
struct Index {
    tools: Vec<Arc<McpTool>>,
    by_name: HashMap<String, usize>,
    generation: u64,
}

struct Server {
    name: String,
    config: McpServerConfig,
    /// Held while the server starts, so a call waits for a start in progress instead of
    /// starting a second process.
    conn: tokio::sync::Mutex<Option<Arc<Connection>>>,
    state: Mutex<ServerState>,
    /// Its tools as last listed, after `enabled_tools` / `disabled_tools`.
    tools: Mutex<Vec<Tool>>,
    /// Starts begun, so a call that waited on a failed start does not start it again.
    attempts: AtomicU64,
    /// A failure since the last good start was reported already.
    reported: AtomicBool,
    started_in: Mutex<Option<Duration>>,
}

impl McpHub {
    /// The servers of `configs`, not started yet. Status changes go to `status`.
    pub fn new(
        configs: &BTreeMap<String, McpServerConfig>,
        workspace: &Path,
        status: Option<mpsc::UnboundedSender<ServerStatus>>,
    ) -> Self {
        let servers = configs
            .iter()
            .map(|(name, config)| Server {
                name: name.clone(),
                config: config.clone(),
                conn: tokio::sync::Mutex::new(None),
                state: Mutex::new(if config.enabled {
                    ServerState::Starting
                } else {
                    ServerState::Disabled
                }),
                tools: Mutex::new(Vec::new()),
                attempts: AtomicU64::new(0),
                reported: AtomicBool::new(false),
                started_in: Mutex::new(None),
            })
            .collect();
        Self {
            inner: Arc::new(Inner {
                workspace: workspace.to_path_buf(),
                servers,
                index: RwLock::default(),
                status,
                changes: watch::Sender::new(0),
                stop: CancellationToken::new(),
            }),
        }
    }

    /// No servers at all.
    pub fn empty() -> Self {
        Self::new(&BTreeMap::new(), Path::new("."), None)
    }

    /// Starts every enabled server, each in a task of its own, and returns at once.
    pub fn start(&self) {
        for (i, server) in self.inner.servers.iter().enumerate() {
            self.inner.publish(server, None);
            if server.config.enabled {
                let inner = self.inner.clone();
                tokio::spawn(async move {
                    let _ = inner.connection(i).await;
                });
            }
        }
    }

    /// Waits until no server is starting (for `squad mcp list` and the benches).
    pub async fn wait_started(&self) {
        let mut changes = self.inner.changes.subscribe();
        loop {
            let starting = self
                .inner
                .servers
                .iter()
                .any(|s| *lock(&s.state) == ServerState::Starting);
            if !starting || changes.changed().await.is_err() {
                return;
            }
        }
    }

    pub fn statuses(&self) -> Vec<ServerStatus> {
        self.inner
            .servers
            .iter()
            .map(|s| self.inner.status_of(s, None))
            .collect()
    }

    /// Every tool of every server that ever listed its tools, in a stable order.
    pub fn tools(&self) -> Vec<Arc<McpTool>> {
        read(&self.inner.index).tools.clone()
    }

    pub fn tool(&self, name: &str) -> Option<Arc<McpTool>> {
        let index = read(&self.inner.index);
        index.by_name.get(name).map(|&i| index.tools[i].clone())
    }

    /// Changes whenever the tool list does.
    pub fn generation(&self) -> u64 {
        read(&self.inner.index).generation
    }

    /// The configured, enabled server a tool name points into (`NAME__…`).
    pub fn server_of(&self, name: &str) -> Option<&str> {
        let enabled = self.inner.servers.iter().filter(|s| s.config.enabled);
        names::server_of(name, enabled.map(|s| s.name.as_str()))
    }

    pub fn server_names(&self) -> Vec<String> {
        self.inner.servers.iter().map(|s| s.name.clone()).collect()
    }

    /// Makes sure the server behind `name` is up: waits for a start in progress, or
    /// starts a server that failed or went away. `Err` says why it is not up.
    pub async fn prepare(&self, name: &str) -> Result<(), String> {
        let Some(i) = self.index_of_server(name) else {
            return Ok(());
        };
        self.inner.connection(i).await.map(|_| ())
    }

    /// Calls tool `name` with `args` (a JSON object). `Err` is what the model is told
    /// (the server's error result, a timeout, a server that is down); output of either
    /// kind is capped at `max_bytes`.
    pub async fn call(
        &self,
        name: &str,
        args: Value,
        max_bytes: usize,
        cancel: &CancellationToken,
    ) -> Result<String, String> {
        let tool = self
            .tool(name)
            .ok_or_else(|| format!("unknown MCP tool `{name}`"))?;
        let i = self
            .index_of_server(name)
            .ok_or_else(|| format!("MCP server `{}` is not configured", tool.server))?;
        let server = &self.inner.servers[i];
        let conn = self.inner.connection(i).await?;
        let args = match args {
            Value::Object(map) => map,
            _ => serde_json::Map::new(),
        };
        let timeout = Duration::from_secs(server.config.tool_timeout_s);
        let outcome = tokio::select! {
            r = tokio::time::timeout(timeout, conn.call(&tool.tool, args)) => r,
            _ = cancel.cancelled() => return Err("cancelled by the user".to_string()),
        };
        match outcome {
            Ok(Ok(result)) => {
                let (text, is_error) = content::render(&result, max_bytes);
                if is_error { Err(text) } else { Ok(text) }
            }
            Ok(Err(e)) if conn.is_alive() => Err(format!("MCP server `{}`: {e}", server.name)),
            Ok(Err(e)) => Err(format!(
                "MCP server `{}` went away during the call ({e}); it is started again on \
                 the next call",
                server.name
            )),
            Err(_) => Err(format!(
                "`{name}` did not finish within {} s (tool_timeout_s of MCP server `{}`)",
                server.config.tool_timeout_s, server.name
            )),
        }
    }

    /// Stops every server (and any start in progress); its tools then fail with a clear
    /// error. Idempotent.
    pub async fn shutdown(&self) {
        self.inner.stop.cancel();
        let stops = self.inner.servers.iter().map(|server| async move {
            let conn = server.conn.lock().await.take();
            if let Some(conn) = conn {
                conn.shutdown().await;
            }
            if server.config.enabled {
                self.inner.set_state(server, ServerState::Stopped, None);
            }
        });
        futures::future::join_all(stops).await;
    }

    fn index_of_server(&self, name: &str) -> Option<usize> {
        let server = self.server_of(name)?;
        self.inner.servers.iter().position(|s| s.name == server)
    }
}

/// Why a server did not start; told in its `failed` state and to the calls that needed it.
#[derive(Debug, thiserror::Error)]
enum StartError {
    #[error(transparent)]
    Connect(#[from] ConnectError),
    #[error("it did not start within {0} s (startup_timeout_s)")]
    Timeout(u64),
    #[error("the session is ending")]
    Ending,
}

impl Inner {
    /// The server's live connection, starting it (again) when it has none.
    async fn connection(self: &Arc<Self>, i: usize) -> Result<Arc<Connection>, String> {
        let server = &self.servers[i];
        let seen = server.attempts.load(Ordering::SeqCst);
        let mut slot = server.conn.lock().await;
        if let Some(conn) = slot.as_ref().filter(|c| c.is_alive()) {
            return Ok(conn.clone());
        }
        if self.stop.is_cancelled() {
            return Err(format!(
                "MCP server `{}` is stopped: the session is ending",
                server.name
            ));
        }
        // A start that ended while this call waited for it: take its word for it.
        if server.attempts.load(Ordering::SeqCst) != seen
            && let ServerState::Failed(why) = lock(&server.state).clone()
        {
            return Err(not_running(&server.name, &why));
        }
        server.attempts.fetch_add(1, Ordering::SeqCst);
        self.set_state(server, ServerState::Starting, None);
        let started = Instant::now();
        match self.open(server).await {
            Ok((conn, tools)) => {
                tracing::info!(
                    "MCP server {} ready in {} ms with {} tools",
                    server.name,
                    started.elapsed().as_millis(),
                    tools.len()
                );
                *lock(&server.tools) = tools;
                *lock(&server.started_in) = Some(started.elapsed());
                self.rebuild_index();
                server.reported.store(false, Ordering::SeqCst);
                let conn = Arc::new(conn);
                *slot = Some(conn.clone());
                self.watch(i, &conn);
                self.set_state(server, ServerState::Ready, None);
                Ok(conn)
            }
            Err(why) => {
                let why = why.to_string();
                *slot = None;
                let first = !server.reported.swap(true, Ordering::SeqCst);
                let report =
                    first.then(|| format!("MCP server `{}` did not start: {why}", server.name));
                self.set_state(server, ServerState::Failed(why.clone()), report);
                Err(not_running(&server.name, &why))
            }
        }
    }

    /// Connects and lists the tools within `startup_timeout_s`; the session's end stops it.
    async fn open(
        self: &Arc<Self>,
        server: &Server,
    ) -> Result<(Connection, Vec<Tool>), StartError> {
        let weak = Arc::downgrade(self);
        let name = server.name.clone();
        let on_change: super::connection::OnToolsChanged =
            Arc::new(move || refresh_later(weak.clone(), name.clone()));
        let work = async {
            let conn = Connection::open(&server.config, &self.workspace, on_change).await?;
            let tools = conn.list_tools().await?;
            Ok::<_, ConnectError>((conn, tools))
        };
        let limit = Duration::from_secs(server.config.startup_timeout_s);
        let (conn, tools) = tokio::select! {
            r = tokio::time::timeout(limit, work) => match r {
                Ok(r) => r?,
                Err(_) => return Err(StartError::Timeout(server.config.startup_timeout_s)),
            },
            _ = self.stop.cancelled() => return Err(StartError::Ending),
        };
        let tools = tools
            .into_iter()
            .filter(|t| server.config.allows_tool(&t.name))
            .collect();
        Ok((conn, tools))
    }

    /// Reports, once, a server that goes away on its own; its tools stay listed and the
    /// next call starts it again.
    fn watch(self: &Arc<Self>, i: usize, conn: &Arc<Connection>) {
        let closed = conn.closed();
        let weak = Arc::downgrade(self);
        let watched = Arc::downgrade(conn);
        tokio::spawn(async move {
            closed.cancelled().await;
            let Some(inner) = weak.upgrade() else { return };
            if inner.stop.is_cancelled() {
                return;
            }
            let server = &inner.servers[i];
            let mut slot = server.conn.lock().await;
            let current = slot
                .as_ref()
                .is_some_and(|c| watched.upgrade().is_some_and(|w| Arc::ptr_eq(c, &w)));
            if !current {
                return;
            }
            let why = match slot.as_ref().and_then(|c| c.stderr_tail()) {
                Some(tail) => format!("it exited (its last words: {tail})"),
                None => "it exited".to_string(),
            };
            if let Some(conn) = slot.take() {
                conn.shutdown().await;
            }
            server.reported.store(true, Ordering::SeqCst);
            let report = format!(
                "MCP server `{}` stopped: {why}; it is started again on the next call of one \
                 of its tools",
                server.name
            );
            inner.set_state(server, ServerState::Failed(why), Some(report));
        });
    }

    fn set_state(&self, server: &Server, state: ServerState, report: Option<String>) {
        *lock(&server.state) = state;
        self.publish(server, report);
    }

    fn publish(&self, server: &Server, report: Option<String>) {
        if let Some(tx) = &self.status {
            let _ = tx.send(self.status_of(server, report));
        }
        self.changes.send_modify(|n| *n += 1);
    }

    fn status_of(&self, server: &Server, report: Option<String>) -> ServerStatus {
        let tools = read(&self.index)
            .tools
            .iter()
            .filter(|t| t.server == server.name)
            .map(|t| t.name.clone())
            .collect();
        let transport = match (&server.config.command, &server.config.url) {
            (Some(command), _) => std::iter::once(command.as_str())
                .chain(server.config.args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            (None, Some(url)) => url.clone(),
            (None, None) => String::new(),
        };
        ServerStatus {
            name: server.name.clone(),
            state: lock(&server.state).clone(),
            transport,
            tools,
            started_in: *lock(&server.started_in),
            report,
        }
    }

    /// Names every server's tools again, together, so they stay unique.
    fn rebuild_index(&self) {
        let listed: Vec<(String, Vec<Tool>)> = self
            .servers
            .iter()
            .map(|s| (s.name.clone(), lock(&s.tools).clone()))
            .collect();
        let pairs: Vec<(&str, &Tool)> = listed
            .iter()
            .flat_map(|(server, tools)| tools.iter().map(move |t| (server.as_str(), t)))
            .collect();
        let names = names::assign(pairs.iter().map(|(s, t)| (*s, t.name.as_ref())));
        let tools: Vec<Arc<McpTool>> = pairs
            .iter()
            .zip(names)
            .map(|((server, tool), name)| Arc::new(adapt(server, tool, name)))
            .collect();
        let by_name = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.clone(), i))
            .collect();
        let mut index = self.index.write().unwrap_or_else(|p| p.into_inner());
        let generation = index.generation + 1;
        *index = Index {
            tools,
            by_name,
            generation,
        };
    }
}

/// Lists a server's tools again after it said they changed, off the connection's own
/// task (a request from inside its notification handler would wait on itself).
fn refresh_later(hub: Weak<Inner>, server: String) {
    tokio::spawn(async move {
        let Some(inner) = hub.upgrade() else { return };
        let Some(s) = inner.servers.iter().find(|s| s.name == server) else {
            return;
        };
        let conn = s.conn.lock().await.clone();
        let Some(conn) = conn else { return };
        match conn.list_tools().await {
            Ok(tools) => {
                let tools = tools
                    .into_iter()
                    .filter(|t| s.config.allows_tool(&t.name))
                    .collect();
                *lock(&s.tools) = tools;
                inner.rebuild_index();
                inner.publish(s, None);
            }
            Err(e) => tracing::warn!("MCP server {server}: {e}"),
        }
    });
}

/// The server's tool as the chat API takes it: its schema (an object schema, with the
/// `$schema` marker some providers reject removed) and its description.
fn adapt(server: &str, tool: &Tool, name: String) -> McpTool {
    let mut schema = Value::Object((*tool.input_schema).clone());
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
        map.entry("type").or_insert_with(|| Value::from("object"));
        map.entry("properties")
            .or_insert_with(|| Value::Object(Default::default()));
    }
    let description = tool
        .description
        .as_deref()
        .or(tool.title.as_deref())
        .unwrap_or_default()
        .to_string();
    McpTool {
        spec: ToolSpec {
            name: name.clone(),
            description,
            parameters: schema,
            freeform: None,
        },
        name,
        server: server.to_string(),
        tool: tool.name.to_string(),
        read_only: tool
            .annotations
            .as_ref()
            .and_then(|a| a.read_only_hint)
            .unwrap_or(false),
    }
}

fn not_running(server: &str, why: &str) -> String {
    format!("MCP server `{server}` is not running: {why}. It is started again on the next call.")
}

fn read(index: &RwLock<Index>) -> std::sync::RwLockReadGuard<'_, Index> {
    index.read().unwrap_or_else(|p| p.into_inner())
}
