//! The tool server's protocol: JSON lines over a byte stream (stdio of a child, of `ssh`,
//! of a container exec). The near side writes an [`Init`] first, then [`Request`]s; the far
//! side answers the init with a [`Hello`], then each request with a [`Reply`] of the same
//! id, in any order (reading calls run at once). One line per message, so any transport
//! that carries bytes both ways carries it.

use crate::protocol::ApprovalAction;
use crate::tools::ToolError;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Bumped when a message changes shape; a far side of another version is refused.
pub const VERSION: u32 = 3;

/// What the far side needs before the first call: where the worker's root is and what its
/// tools may do there. The far side's own sandbox applies the level.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Init {
    pub version: u32,
    /// The worker's root there; made when missing.
    pub root: String,
    pub sandbox: crate::sandbox::Level,
    pub command_timeout_s: u64,
    pub max_output_bytes: usize,
    pub read_max_bytes: usize,
    pub test_command: Option<String>,
}

impl Init {
    /// The init of a worker whose root there is `root`, with this side's tool settings.
    pub fn new(
        root: &str,
        sandbox: crate::sandbox::Level,
        settings: &crate::tools::ToolSettings,
    ) -> Self {
        Self {
            version: VERSION,
            root: root.to_string(),
            sandbox,
            command_timeout_s: settings.command_timeout.as_secs(),
            max_output_bytes: settings.max_output_bytes,
            read_max_bytes: settings.read_max_bytes,
            test_command: settings.test_command.clone(),
        }
    }
}

/// The far side's answer to [`Init`]: it runs, where, and what it is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    pub version: u32,
    /// The root, resolved there.
    pub root: String,
    /// `squad --version` there.
    pub squad: String,
    /// What the far side's sandbox gives commands (`Sandbox::describe`).
    pub sandbox: String,
    /// `git --version` there, when git runs there: the worker's base can then come as a
    /// bundle and its change go back as one ([`Request::Receive`], [`Request::Collect`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<String>,
    /// Set instead of the rest when the far side cannot serve (a root it cannot make).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// Run tool `tool` with `args`.
    Call { id: u64, tool: String, args: Value },
    /// What the user would be asked to approve for this call.
    Describe { id: u64, tool: String, args: Value },
    /// Stop call `id` (the near side's cancel).
    Cancel { id: u64 },
    /// The commits the git store at `store` holds for squad (answered as a JSON list of
    /// ids; empty without a store): what a bundle need not carry again.
    Haves { id: u64, store: String },
    /// Takes the worker's base `commit` into the store (from `bundle`, base64, unless the
    /// store holds it) and checks it out as the root, a worktree of the store.
    Receive {
        id: u64,
        store: String,
        commit: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bundle: Option<String>,
    },
    /// Commits everything in the root and answers a [`Collected`]: the worker's change
    /// since `base`, as a bundle.
    Collect {
        id: u64,
        base: String,
        message: String,
    },
    /// Removes the root's worktree from the store (the worker is gone).
    Release { id: u64, store: String },
    /// Whether the root still holds the worker's work (a resumed worker reattaching): a
    /// worktree whose commits hold `base` where its work travels by git (`store` set),
    /// else a root with files in it. Answered with an error saying what is missing.
    Holds {
        id: u64,
        base: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        store: Option<String>,
    },
}

/// What [`Request::Collect`] answers (as JSON in its output).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Collected {
    /// The root's commit: `base` itself when nothing changed.
    pub commit: String,
    /// The ref the bundle carries (under [`COLLECTED_REF`], one per root).
    #[serde(default)]
    pub reference: String,
    /// The commits since `base`, a git bundle in base64, whose one ref is `reference`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle: Option<String>,
}

/// Where a collected bundle's ref lives.
pub const COLLECTED_REF: &str = "refs/squad/collected";

/// The ref a bundle of base `commit` carries, on both sides.
pub fn base_ref(commit: &str) -> String {
    format!("refs/squad/carried/{commit}")
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    pub id: u64,
    #[serde(flatten)]
    pub outcome: Outcome,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A call's output.
    Output(String),
    /// A describe's answer.
    Action(Option<ApprovalAction>),
    Error(WireError),
}

/// A [`ToolError`] on the wire: its kind survives, so the model reads the same text as
/// from a local call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireError {
    pub kind: ErrorKind,
    pub message: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    InvalidArguments,
    Failed,
    NotFound,
    Denied,
    Cancelled,
}

impl From<ToolError> for WireError {
    fn from(e: ToolError) -> Self {
        let (kind, message) = match e {
            ToolError::InvalidArguments(m) => (ErrorKind::InvalidArguments, m),
            ToolError::Path(p) => (ErrorKind::Failed, p.to_string()),
            ToolError::Failed(m) => (ErrorKind::Failed, m),
            ToolError::NotFound(m) => (ErrorKind::NotFound, m),
            ToolError::Denied(m) => (ErrorKind::Denied, m),
            ToolError::Cancelled => (ErrorKind::Cancelled, String::new()),
        };
        Self { kind, message }
    }
}

impl From<WireError> for ToolError {
    fn from(e: WireError) -> Self {
        match e.kind {
            ErrorKind::InvalidArguments => Self::InvalidArguments(e.message),
            ErrorKind::Failed => Self::Failed(e.message),
            ErrorKind::NotFound => Self::NotFound(e.message),
            ErrorKind::Denied => Self::Denied(e.message),
            ErrorKind::Cancelled => Self::Cancelled,
        }
    }
}

/// Writes each line the channel gives, until it closes or the far side stops reading: the
/// one writer both ends of the protocol use.
pub async fn write_lines<W: tokio::io::AsyncWrite + Unpin>(
    mut rx: tokio::sync::mpsc::UnboundedReceiver<String>,
    mut out: W,
) {
    use tokio::io::AsyncWriteExt;
    while let Some(mut line) = rx.recv().await {
        line.push('\n');
        if out.write_all(line.as_bytes()).await.is_err() || out.flush().await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_one_json_line_each_way_and_errors_keep_their_text() {
        let req = Request::Call {
            id: 7,
            tool: "read_file".into(),
            args: serde_json::json!({"path": "a\nb"}),
        };
        let line = serde_json::to_string(&req).unwrap();
        assert!(!line.contains('\n'));
        assert_eq!(serde_json::from_str::<Request>(&line).unwrap(), req);
        let reply: Reply =
            serde_json::from_str(r#"{"id":7,"error":{"kind":"denied","message":"no"}}"#).unwrap();
        let Outcome::Error(e) = reply.outcome else {
            panic!("an error")
        };
        let local = ToolError::Denied("no".into()).to_string();
        assert_eq!(ToolError::from(e).to_string(), local);
        let ws = crate::workspace::Workspace::new(std::path::Path::new("/")).unwrap();
        let path = || ToolError::Path(ws.resolve("../x").unwrap_err());
        let back = ToolError::from(WireError::from(path()));
        assert_eq!(back.to_string(), path().to_string());
    }
}
