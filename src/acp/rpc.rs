//! JSON-RPC 2.0 over stdio, one message per line. Everything written to stdout goes through
//! one writer task, so replies, notifications and our own requests never interleave and
//! nothing else can reach the client's pipe.

use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, oneshot};

/// Standard JSON-RPC error codes, and ACP's "resource not found".
pub mod code {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
}

/// A JSON-RPC error to send back.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct RpcError {
    pub code: i64,
    pub message: String,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(code::INVALID_PARAMS, message)
    }
}

/// The client's answer to one of our requests.
type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, RpcError>>>>>;

/// The agent's side of the connection: cheap to clone, shared by every session.
#[derive(Clone)]
pub struct Rpc {
    out: mpsc::UnboundedSender<Value>,
    pending: Pending,
    next_id: Arc<AtomicU64>,
}

impl Rpc {
    /// Starts the stdout writer; it ends when every `Rpc` is dropped.
    pub fn start() -> Self {
        let (out, mut rx) = mpsc::unbounded_channel::<Value>();
        tokio::spawn(async move {
            let mut stdout = tokio::io::stdout();
            while let Some(msg) = rx.recv().await {
                let mut line = msg.to_string();
                line.push('\n');
                if stdout.write_all(line.as_bytes()).await.is_err() || stdout.flush().await.is_err()
                {
                    tracing::warn!("acp: stdout closed");
                    break;
                }
            }
        });
        Self {
            out,
            pending: Arc::default(),
            next_id: Arc::new(AtomicU64::new(1)),
        }
    }

    fn send(&self, msg: Value) {
        tracing::debug!(target: "squad::acp", "-> {msg}");
        let _ = self.out.send(msg);
    }

    pub fn reply(&self, id: Value, result: Result<Value, RpcError>) {
        match result {
            Ok(result) => self.send(json!({"jsonrpc": "2.0", "id": id, "result": result})),
            Err(e) => self.send(json!({
                "jsonrpc": "2.0",
                "id": id,
                "error": {"code": e.code, "message": e.message},
            })),
        }
    }

    pub fn notify(&self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// A `session/update` notification.
    pub fn update(&self, session_id: &str, update: Value) {
        self.notify(
            "session/update",
            json!({"sessionId": session_id, "update": update}),
        );
    }

    /// Sends a request to the client and waits for its answer.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut p) = self.pending.lock() {
            p.insert(id, tx);
        }
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        rx.await
            .unwrap_or_else(|_| Err(RpcError::new(code::INTERNAL_ERROR, "connection closed")))
    }

    /// Hands a response from the client to the request waiting for it.
    pub fn resolve(&self, msg: &Value) {
        let Some(id) = msg.get("id").and_then(Value::as_u64) else {
            tracing::warn!("acp: a response without a numeric id: {msg}");
            return;
        };
        let waiter = self.pending.lock().ok().and_then(|mut p| p.remove(&id));
        let Some(waiter) = waiter else {
            tracing::warn!("acp: a response to no request of ours: {msg}");
            return;
        };
        let result = match msg.get("error") {
            Some(err) => Err(RpcError::new(
                err.get("code").and_then(Value::as_i64).unwrap_or(0),
                err.get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("error")
                    .to_string(),
            )),
            None => Ok(msg.get("result").cloned().unwrap_or(Value::Null)),
        };
        let _ = waiter.send(result);
    }
}
