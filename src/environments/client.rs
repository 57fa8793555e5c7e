//! The near side of [`super::protocol`]: one connection to a tool server over any pair of
//! byte streams. Calls carry ids, so reading calls run at once over one connection; a
//! reader task hands each reply to its caller. When the stream ends, every call waiting
//! and every later one fails with the reason, naming the environment and what the far
//! side last wrote on stderr.

use super::EnvError;
use super::protocol::{Hello, Init, Outcome, Reply, Request};
use crate::protocol::ApprovalAction;
use crate::tools::ToolError;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, BufReader};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// Longest the far side may take to answer the init (an ssh login, a container exec).
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(30);

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Outcome>>>>;

/// What the far side wrote on stderr lately, for the reason a connection ended.
#[derive(Clone, Default)]
pub struct StderrTail(Arc<Mutex<String>>);

impl StderrTail {
    const KEEP: usize = 2000;

    pub fn push(&self, text: &str) {
        let mut tail = crate::sync::lock(&self.0);
        tail.push_str(text);
        if tail.len() > Self::KEEP {
            let mut cut = tail.len() - Self::KEEP;
            while !tail.is_char_boundary(cut) {
                cut += 1;
            }
            tail.drain(..cut);
        }
    }

    pub fn text(&self) -> String {
        crate::sync::lock(&self.0).trim().to_string()
    }
}

/// One worker's connection to its tool server.
pub struct Remote {
    env: String,
    hello: Hello,
    tx: mpsc::UnboundedSender<String>,
    pending: Pending,
    next_id: AtomicU64,
    /// Why the stream ended, once it has.
    ended: Arc<Mutex<Option<String>>>,
    /// See [`Transport::container`].
    container: Option<String>,
    /// Keeps the transport alive (the child process, the container) as long as this.
    transport: tokio::sync::Mutex<Box<dyn Transport>>,
}

/// What carries a connection: ended by [`Remote::close`], or when dropped (then as far as
/// a drop can: a container's removal is spawned on the runtime, if one still runs).
#[async_trait::async_trait]
pub trait Transport: Send + Sync {
    async fn close(&mut self);

    /// The container it execs in, by the engine's id (a container's transport).
    fn container(&self) -> Option<String> {
        None
    }

    /// Unpacks the tar archive `tar` into the folder `path` there (a container engine's
    /// archive upload: how a base reaches a far side without git).
    async fn upload(&self, _path: &str, _tar: Vec<u8>) -> Result<(), String> {
        Err("this transport carries no archives".into())
    }

    /// The folder `path` there as a tar archive (whose entries start with its name).
    async fn download(&self, _path: &str) -> Result<Vec<u8>, String> {
        Err("this transport carries no archives".into())
    }
}

impl Remote {
    /// Sends `init` over `writer`, waits for the far side's hello on `reader`.
    pub async fn connect<R, W>(
        env: &str,
        reader: R,
        writer: W,
        init: &Init,
        stderr: StderrTail,
        transport: Box<dyn Transport>,
    ) -> Result<Self, EnvError>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let fail = |reason: String| EnvError::new(env, reason);
        let (tx, rx) = mpsc::unbounded_channel::<String>();
        tokio::spawn(super::protocol::write_lines(rx, writer));
        let line = serde_json::to_string(init).map_err(|e| fail(e.to_string()))?;
        let _ = tx.send(line);
        let mut lines = BufReader::new(reader).lines();
        let first = tokio::time::timeout(HELLO_TIMEOUT, lines.next_line()).await;
        let stderr_says = |what: &str| {
            let tail = stderr.text();
            if tail.is_empty() {
                what.to_string()
            } else {
                format!("{what}: {tail}")
            }
        };
        let hello: Hello = match first {
            Err(_) => return Err(fail(stderr_says("the tool server did not answer in 30 s"))),
            Ok(Err(e)) => return Err(fail(stderr_says(&format!("reading the tool server: {e}")))),
            Ok(Ok(None)) => {
                return Err(fail(stderr_says(
                    "the tool server ended before it answered",
                )));
            }
            Ok(Ok(Some(line))) => serde_json::from_str(&line).map_err(|_| {
                fail(stderr_says(&format!(
                    "not a squad tool server (it answered {:?})",
                    line.chars().take(200).collect::<String>()
                )))
            })?,
        };
        if let Some(error) = &hello.error {
            return Err(fail(error.clone()));
        }
        let pending: Pending = Arc::default();
        let ended: Arc<Mutex<Option<String>>> = Arc::default();
        tokio::spawn(read_replies(
            lines,
            pending.clone(),
            ended.clone(),
            env.to_string(),
            stderr,
        ));
        Ok(Self {
            env: env.to_string(),
            hello,
            tx,
            pending,
            next_id: AtomicU64::new(1),
            ended,
            container: transport.container(),
            transport: tokio::sync::Mutex::new(transport),
        })
    }

    /// Ends the connection and what carries it (the child, the container), waiting for it.
    pub async fn close(&self) {
        self.transport.lock().await.close().await;
    }

    /// What the far side said of itself.
    pub fn hello(&self) -> &Hello {
        &self.hello
    }

    pub fn env(&self) -> &str {
        &self.env
    }

    /// The container it execs in, if a container carries it.
    pub fn container(&self) -> Option<&str> {
        self.container.as_deref()
    }

    /// Why the connection ended, once it has.
    pub fn lost(&self) -> Option<String> {
        crate::sync::lock(&self.ended).clone()
    }

    /// See [`Transport::upload`].
    pub async fn upload(&self, path: &str, tar: Vec<u8>) -> Result<(), String> {
        self.transport.lock().await.upload(path, tar).await
    }

    /// See [`Transport::download`].
    pub async fn download(&self, path: &str) -> Result<Vec<u8>, String> {
        self.transport.lock().await.download(path).await
    }

    /// Asks one of the carrying requests (`far_git.rs` answers), for its output.
    pub async fn carry(&self, make: impl FnOnce(u64) -> Request) -> Result<String, ToolError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        match self.ask(id, &make(id)).await? {
            Outcome::Output(output) => Ok(output),
            Outcome::Error(e) => Err(e.into()),
            Outcome::Action(_) => Err(self.garbled()),
        }
    }

    /// Runs `tool` there; `cancel` stops it there too.
    pub async fn call(
        &self,
        tool: &str,
        args: Value,
        cancel: &CancellationToken,
    ) -> Result<String, ToolError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let request = Request::Call {
            id,
            tool: tool.to_string(),
            args,
        };
        let reply = tokio::select! {
            reply = self.ask(id, &request) => reply?,
            () = cancel.cancelled() => {
                crate::sync::lock(&self.pending).remove(&id);
                self.send(&Request::Cancel { id });
                return Err(ToolError::Cancelled);
            }
        };
        match reply {
            Outcome::Output(output) => Ok(output),
            Outcome::Error(e) => Err(e.into()),
            Outcome::Action(_) => Err(self.garbled()),
        }
    }

    /// What the user would be asked to approve for this call there.
    pub async fn describe(
        &self,
        tool: &str,
        args: &Value,
    ) -> Result<Option<ApprovalAction>, ToolError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let request = Request::Describe {
            id,
            tool: tool.to_string(),
            args: args.clone(),
        };
        match self.ask(id, &request).await? {
            Outcome::Action(action) => Ok(action),
            Outcome::Error(e) => Err(e.into()),
            Outcome::Output(_) => Err(self.garbled()),
        }
    }

    async fn ask(&self, id: u64, request: &Request) -> Result<Outcome, ToolError> {
        let (tx, rx) = oneshot::channel();
        crate::sync::lock(&self.pending).insert(id, tx);
        if let Some(why) = crate::sync::lock(&self.ended).clone() {
            crate::sync::lock(&self.pending).remove(&id);
            return Err(ToolError::Failed(why));
        }
        self.send(request);
        rx.await.map_err(|_| {
            ToolError::Failed(
                crate::sync::lock(&self.ended)
                    .clone()
                    .unwrap_or_else(|| format!("environment '{}': connection lost", self.env)),
            )
        })
    }

    fn send(&self, request: &Request) {
        if let Ok(line) = serde_json::to_string(request) {
            let _ = self.tx.send(line);
        }
    }

    fn garbled(&self) -> ToolError {
        ToolError::Failed(format!(
            "environment '{}': the tool server answered out of turn",
            self.env
        ))
    }
}

async fn read_replies<R: AsyncRead + Unpin>(
    mut lines: tokio::io::Lines<BufReader<R>>,
    pending: Pending,
    ended: Arc<Mutex<Option<String>>>,
    env: String,
    stderr: StderrTail,
) {
    let why = loop {
        match lines.next_line().await {
            Ok(Some(line)) => match serde_json::from_str::<Reply>(&line) {
                Ok(reply) => {
                    if let Some(tx) = crate::sync::lock(&pending).remove(&reply.id) {
                        let _ = tx.send(reply.outcome);
                    }
                }
                Err(e) => tracing::warn!("environment '{env}': unreadable reply skipped: {e}"),
            },
            Ok(None) => break "the tool server ended".to_string(),
            Err(e) => break format!("reading the tool server: {e}"),
        }
    };
    // Give stderr's reader a moment to take the far side's last words.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let tail = stderr.text();
    let why = if tail.is_empty() {
        format!("environment '{env}': connection lost: {why}")
    } else {
        format!("environment '{env}': connection lost: {why}: {tail}")
    };
    *crate::sync::lock(&ended) = Some(why);
    // Dropping the senders wakes every waiting call with the reason above.
    crate::sync::lock(&pending).clear();
}
