//! `squad acp`: the agent side of the Agent Client Protocol on stdin/stdout. An editor
//! starts squad as a subprocess and speaks JSON-RPC to it; each ACP session is a squad
//! session, met like every front end only through `Op`s and `Event`s.
//!
//! stdout carries JSON-RPC and nothing else (one writer, [`rpc::Rpc`]); diagnostics go to
//! the log file.

mod ask;
mod files;
mod mcp;
mod rpc;
mod stop;
mod updates;

use crate::protocol::Op;
use crate::runtime::{SessionHandle, SessionOptions};
use rpc::{Rpc, RpcError, code};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::AsyncBufReadExt;
use tokio::sync::{mpsc, oneshot};
use updates::{Children, StopReason, Translator};

/// How long the sessions get to close their logs once the client has gone.
const SHUTDOWN_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The ACP protocol version this agent speaks.
pub const PROTOCOL_VERSION: u64 = 1;

/// The options of a squad session in a workspace (`cwd`), new or resumed by id. The
/// binary owns config, roles and model loading, so it hands this in.
pub type Launcher =
    Arc<dyn Fn(PathBuf, Option<String>) -> anyhow::Result<SessionOptions> + Send + Sync>;

/// One open session: where its ops go and who waits for its prompt to end.
struct Session {
    ops: mpsc::UnboundedSender<Op>,
    /// The role names, for `session/set_mode`.
    modes: Vec<String>,
    prompt: Arc<Mutex<Option<oneshot::Sender<StopReason>>>>,
    cancel: Arc<Mutex<bool>>,
}

#[derive(Clone)]
struct Agent {
    rpc: Rpc,
    launcher: Launcher,
    sessions: Arc<Mutex<HashMap<String, Session>>>,
    /// Workers shown as child sessions, by child session id.
    children: Children,
    /// The client said it takes child sessions (`clientCapabilities.subagents`).
    subagents: Arc<AtomicBool>,
    /// The client reads and writes files for the tools (`clientCapabilities.fs`).
    fs_read: Arc<AtomicBool>,
    fs_write: Arc<AtomicBool>,
    /// Each session's event loop, waited for at the end so every log is closed.
    following: tokio_util::task::TaskTracker,
}

/// Serves one client until its stdin closes.
pub async fn run(launcher: Launcher) -> anyhow::Result<()> {
    let agent = Agent {
        rpc: Rpc::start(),
        launcher,
        sessions: Arc::default(),
        children: Arc::default(),
        subagents: Arc::default(),
        fs_read: Arc::default(),
        fs_write: Arc::default(),
        following: tokio_util::task::TaskTracker::new(),
    };
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    while let Some(line) = lines.next_line().await? {
        if line.trim().is_empty() {
            continue;
        }
        tracing::debug!(target: "squad::acp", "<- {line}");
        let msg: Value = match serde_json::from_str(&line) {
            Ok(m) => m,
            Err(e) => {
                agent.rpc.reply(
                    Value::Null,
                    Err(RpcError::new(
                        code::PARSE_ERROR,
                        format!("parse error: {e}"),
                    )),
                );
                continue;
            }
        };
        agent.dispatch(msg);
    }
    // The client is gone: every session stops and closes its log.
    let sessions: Vec<_> = agent
        .sessions
        .lock()
        .map(|mut s| s.drain().map(|(_, s)| s.ops).collect())
        .unwrap_or_default();
    for ops in sessions {
        let _ = ops.send(Op::Shutdown);
    }
    agent.following.close();
    if tokio::time::timeout(SHUTDOWN_WAIT, agent.following.wait())
        .await
        .is_err()
    {
        tracing::warn!("acp: sessions still closing after {SHUTDOWN_WAIT:?}; exiting");
    }
    Ok(())
}

impl Agent {
    fn dispatch(&self, msg: Value) {
        let id = msg.get("id").cloned();
        let method = msg
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_string);
        let Some(method) = method else {
            if id.is_some() && (msg.get("result").is_some() || msg.get("error").is_some()) {
                self.rpc.resolve(&msg);
            } else {
                self.rpc.reply(
                    id.unwrap_or(Value::Null),
                    Err(RpcError::new(code::INVALID_REQUEST, "invalid request")),
                );
            }
            return;
        };
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        let agent = self.clone();
        tokio::spawn(async move {
            let result = agent.handle(&method, params).await;
            match id {
                Some(id) => agent.rpc.reply(id, result),
                None => {
                    if let Err(e) = result {
                        tracing::warn!("acp: notification {method} failed: {e}");
                    }
                }
            }
        });
    }

    async fn handle(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        match method {
            "initialize" => {
                let subagents = params
                    .pointer("/clientCapabilities/subagents")
                    .is_some_and(|v| !v.is_null());
                self.subagents.store(subagents, Ordering::Relaxed);
                let offers = |what: &str| {
                    params
                        .pointer(&format!("/clientCapabilities/fs/{what}"))
                        .and_then(Value::as_bool)
                        .unwrap_or(false)
                };
                self.fs_read
                    .store(offers("readTextFile"), Ordering::Relaxed);
                self.fs_write
                    .store(offers("writeTextFile"), Ordering::Relaxed);
                Ok(initialize())
            }
            "authenticate" => Ok(json!({})),
            "session/new" => self.new_session(&params, None).await,
            "session/load" => {
                let id = str_param(&params, "sessionId")?;
                self.new_session(&params, Some(id))
                    .await
                    .map(|_| Value::Null)
            }
            "session/prompt" => self.prompt(&params).await,
            "session/cancel" => self.cancel(&params).map(|()| Value::Null),
            "session/set_mode" => self.set_mode(&params).map(|()| json!({})),
            _ => Err(RpcError::new(
                code::METHOD_NOT_FOUND,
                format!("method not found: {method}"),
            )),
        }
    }

    /// `session/new`, or `session/load` (`resume`): starts the squad session, replays a
    /// loaded one's conversation, then follows its events.
    async fn new_session(&self, params: &Value, resume: Option<String>) -> Result<Value, RpcError> {
        let cwd = PathBuf::from(str_param(params, "cwd")?);
        if !cwd.is_absolute() {
            return Err(RpcError::invalid_params("cwd must be an absolute path"));
        }
        let cwd = cwd
            .canonicalize()
            .map_err(|e| RpcError::invalid_params(format!("cwd {}: {e}", cwd.display())))?;
        let (read, write) = (
            self.fs_read.load(Ordering::Relaxed),
            self.fs_write.load(Ordering::Relaxed),
        );
        let editor = (read || write)
            .then(|| Arc::new(files::ClientFiles::new(self.rpc.clone(), read, write)));
        let loading = resume.is_some();
        let failed = |e: String| {
            let code = if loading {
                code::RESOURCE_NOT_FOUND
            } else {
                code::INTERNAL_ERROR
            };
            RpcError::new(code, e)
        };
        let mut opts = (self.launcher)(cwd, resume).map_err(|e| failed(format!("{e:#}")))?;
        opts.replay_to_frontend = true;
        opts.editor = editor.clone().map(|e| e as _);
        mcp::join(&mut opts.config.mcp_servers, params.get("mcpServers"));
        let modes: Vec<(String, String)> = opts
            .roles
            .iter()
            .map(|r| (r.name.clone(), r.description.clone()))
            .collect();
        let mut handle = crate::runtime::start_session(opts)
            .await
            .map_err(|e| failed(e.to_string()))?;
        let info = handle.info.clone();
        let session_id = info.session_id.clone();
        if let Some(editor) = &editor {
            let _ = editor.session_id.set(session_id.clone());
        }
        let mut translator = Translator::new(
            session_id.clone(),
            info.root_agent,
            info.workspace.clone(),
            self.rpc.clone(),
            handle.ops.clone(),
            self.subagents.load(Ordering::Relaxed),
            self.children.clone(),
        );
        // A loaded session's history is already queued: the client sees it before the reply.
        if info.replayed_seq > 0 {
            while let Ok(ev) = handle.events.try_recv() {
                translator.replay(&ev);
                if ev.seq >= info.replayed_seq {
                    break;
                }
            }
        }
        let session = Session {
            ops: handle.ops.clone(),
            modes: modes.iter().map(|(name, _)| name.clone()).collect(),
            prompt: Arc::default(),
            cancel: Arc::default(),
        };
        let prompt = session.prompt.clone();
        let cancel = session.cancel.clone();
        if let Ok(mut s) = self.sessions.lock() {
            s.insert(session_id.clone(), session);
        }
        self.following
            .spawn(follow(handle, translator, prompt, cancel));
        let available: Vec<Value> = modes
            .iter()
            .map(
                |(name, description)| json!({"id": name, "name": name, "description": description}),
            )
            .collect();
        Ok(json!({
            "sessionId": session_id,
            "modes": {"currentModeId": info.role, "availableModes": available},
        }))
    }

    /// `session/prompt`: sends the user's message and answers once the team is idle.
    async fn prompt(&self, params: &Value) -> Result<Value, RpcError> {
        let session_id = str_param(params, "sessionId")?;
        let text = prompt_text(params.get("prompt"))?;
        let (tx, rx) = oneshot::channel();
        {
            let sessions = self
                .sessions
                .lock()
                .map_err(|_| RpcError::new(code::INTERNAL_ERROR, "session table poisoned"))?;
            let Some(session) = sessions.get(&session_id) else {
                return Err(self.not_promptable(&session_id));
            };
            let mut waiting = session
                .prompt
                .lock()
                .map_err(|_| RpcError::new(code::INTERNAL_ERROR, "prompt state poisoned"))?;
            if waiting.is_some() {
                return Err(RpcError::invalid_params(
                    "a prompt is already running in this session",
                ));
            }
            *waiting = Some(tx);
            if let Ok(mut c) = session.cancel.lock() {
                *c = false;
            }
            let _ = session.ops.send(Op::Resume);
            let _ = session.ops.send(Op::UserMessage { to: None, text });
        }
        let reason = rx
            .await
            .map_err(|_| RpcError::new(code::INTERNAL_ERROR, "the session ended"))?;
        Ok(json!({ "stopReason": reason.as_str() }))
    }

    /// `session/cancel`: squad's graceful stop of the whole team of that session.
    fn cancel(&self, params: &Value) -> Result<(), RpcError> {
        let session_id = str_param(params, "sessionId")?;
        let sessions = self
            .sessions
            .lock()
            .map_err(|_| RpcError::new(code::INTERNAL_ERROR, "session table poisoned"))?;
        let Some(session) = sessions.get(&session_id) else {
            // A child session: cancelling it cancels that worker (and its own workers).
            let child = self
                .children
                .lock()
                .ok()
                .and_then(|c| c.get(&session_id).cloned());
            let (ops, agent_id) = child.ok_or_else(|| unknown(&session_id))?;
            let _ = ops.send(Op::Despawn { agent_id });
            return Ok(());
        };
        if let Ok(mut c) = session.cancel.lock() {
            *c = true;
        }
        let _ = session.ops.send(Op::Stop);
        Ok(())
    }
}

impl Agent {
    /// `session/set_mode`: hands the session to that role, as `/role NAME` does.
    fn set_mode(&self, params: &Value) -> Result<(), RpcError> {
        let session_id = str_param(params, "sessionId")?;
        let mode = str_param(params, "modeId")?;
        let sessions = self
            .sessions
            .lock()
            .map_err(|_| RpcError::new(code::INTERNAL_ERROR, "session table poisoned"))?;
        let session = sessions
            .get(&session_id)
            .ok_or_else(|| self.not_promptable(&session_id))?;
        if !session.modes.contains(&mode) {
            return Err(RpcError::invalid_params(format!(
                "unknown mode `{mode}`; the modes are {}",
                session.modes.join(", ")
            )));
        }
        let _ = session.ops.send(Op::SwitchPersona { role: mode });
        Ok(())
    }

    /// Why a prompt cannot go to this session id.
    fn not_promptable(&self, session_id: &str) -> RpcError {
        let child = self
            .children
            .lock()
            .is_ok_and(|c| c.contains_key(session_id));
        if child {
            RpcError::invalid_params(format!(
                "{session_id} is a worker's child session: prompt its parent session"
            ))
        } else {
            unknown(session_id)
        }
    }
}

/// Follows a session's events until it ends, ending prompts as the team comes to rest.
async fn follow(
    mut handle: SessionHandle,
    mut translator: Translator,
    prompt: Arc<Mutex<Option<oneshot::Sender<StopReason>>>>,
    cancel: Arc<Mutex<bool>>,
) {
    while let Some(ev) = handle.events.recv().await {
        // The last event of a session that was shut down.
        if matches!(ev.kind, crate::protocol::EventKind::Summary { .. }) {
            break;
        }
        if cancel.lock().map(|c| *c).unwrap_or(false) {
            translator.turn.cancelled = true;
        }
        if let Some(reason) = translator.event(&ev) {
            let waiter = prompt.lock().ok().and_then(|mut p| p.take());
            if let Some(waiter) = waiter {
                let _ = waiter.send(reason);
            }
        }
    }
    tracing::info!("acp: session {} ended", translator.session_id);
}

fn initialize() -> Value {
    json!({
        "protocolVersion": PROTOCOL_VERSION,
        "agentCapabilities": {
            "loadSession": true,
            "promptCapabilities": {"image": false, "audio": false, "embeddedContext": true},
            "mcpCapabilities": {"http": true, "sse": false},
        },
        "authMethods": [],
        "agentInfo": {"name": "squad", "title": "squad", "version": env!("CARGO_PKG_VERSION")},
    })
}

fn unknown(session_id: &str) -> RpcError {
    RpcError::new(
        code::RESOURCE_NOT_FOUND,
        format!("unknown session: {session_id}"),
    )
}

fn str_param(params: &Value, key: &str) -> Result<String, RpcError> {
    params
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| RpcError::invalid_params(format!("missing string parameter `{key}`")))
}

/// The prompt's content blocks as one message: text as is, embedded files with their text,
/// links by their URI.
fn prompt_text(prompt: Option<&Value>) -> Result<String, RpcError> {
    let blocks = prompt
        .and_then(Value::as_array)
        .ok_or_else(|| RpcError::invalid_params("`prompt` must be an array of content blocks"))?;
    let mut parts = Vec::new();
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(t) = block.get("text").and_then(Value::as_str) {
                    parts.push(t.to_string());
                }
            }
            Some("resource_link") => {
                if let Some(uri) = block.get("uri").and_then(Value::as_str) {
                    parts.push(format!("[file: {uri}]"));
                }
            }
            Some("resource") => {
                let r = &block["resource"];
                let uri = r.get("uri").and_then(Value::as_str).unwrap_or("");
                match r.get("text").and_then(Value::as_str) {
                    Some(text) => parts.push(format!("[file: {uri}]\n```\n{text}\n```")),
                    None => parts.push(format!("[file: {uri}]")),
                }
            }
            _ => {}
        }
    }
    let text = parts.join("\n");
    if text.trim().is_empty() {
        return Err(RpcError::invalid_params("the prompt has no text"));
    }
    Ok(text)
}
