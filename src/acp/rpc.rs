//! The agent's side of the connection, as the sessions use it: `session/update`
//! notifications and requests to the client (permissions, `fs/*`). The
//! `agent-client-protocol` crate owns the JSON-RPC: framing, ids, matching answers, and
//! the one writer of stdout, so nothing else can reach the client's pipe.

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{SessionNotification, SessionUpdate};
use agent_client_protocol::{Client, Error, ErrorCode, JsonRpcRequest};

/// Cheap to clone, shared by every session of the connection.
#[derive(Clone)]
pub struct Rpc {
    cx: ConnectionTo<Client>,
}

impl Rpc {
    pub fn new(cx: ConnectionTo<Client>) -> Self {
        Self { cx }
    }

    /// A `session/update` notification. A closed connection is only logged: the client
    /// is gone and the session closes with it.
    pub fn update(&self, session_id: &str, update: SessionUpdate) {
        let note = SessionNotification::new(session_id.to_string(), update);
        if let Err(e) = self.cx.send_notification(note) {
            tracing::debug!("acp: update not sent: {e}");
        }
    }

    /// Sends a request to the client and waits for its answer, off the dispatch loop (the
    /// callers are session tasks, never message handlers).
    pub async fn request<R: JsonRpcRequest>(&self, request: R) -> Result<R::Response, Error> {
        self.cx.send_request(request).block_task().await
    }
}

/// A JSON-RPC error with our own words as its message (the crate's constructors give the
/// code's generic text).
pub fn error(code: ErrorCode, message: impl Into<String>) -> Error {
    Error::new(code, message)
}

pub fn invalid_params(message: impl Into<String>) -> Error {
    error(ErrorCode::INVALID_PARAMS, message)
}
