//! The methods `squad acp` serves: one squad session per ACP session, started from the
//! options the binary loads, and the prompts, cancels and mode changes sent to it.

use super::commands::{self, Ack, Command, Ends};
use super::files::ClientFiles;
use super::rpc::{Rpc, error, invalid_params};
use super::updates::{Children, StopReason, Translator, message_chunk};
use super::{Launcher, mcp, prompt};
use crate::protocol::{AgentId, Event, EventKind, Op};
use crate::runtime::SessionHandle;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AuthMethod, AuthMethodAgent, CancelNotification, ClientCapabilities,
    Implementation, InitializeRequest, InitializeResponse, LoadSessionRequest, LoadSessionResponse,
    McpCapabilities, McpServer, NewSessionRequest, NewSessionResponse, PromptCapabilities,
    PromptRequest, PromptResponse, SessionMode, SessionModeState, SetSessionModeRequest,
    SetSessionModeResponse,
};
use agent_client_protocol::{Error, ErrorCode};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};

/// How long the sessions get to close their logs once the client has gone.
const SHUTDOWN_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// One open session: where its ops go and who waits for its prompt to end.
struct Session {
    ops: mpsc::UnboundedSender<Op>,
    /// The role names, for `session/set_mode`.
    modes: Vec<String>,
    root: AgentId,
    rpc: Rpc,
    waiting: Waiting,
}

/// What the session's event loop needs to end the prompt under way.
#[derive(Clone, Default)]
struct Waiting {
    prompt: Arc<Mutex<Option<oneshot::Sender<StopReason>>>>,
    cancel: Arc<Mutex<bool>>,
    /// The prompt is a command that ends on this event rather than with a turn.
    command: Arc<Mutex<Option<Ack>>>,
}

impl Waiting {
    /// Ends the prompt under way, if one is.
    fn end(&self, reason: StopReason) {
        if let Ok(mut c) = self.command.lock() {
            *c = None;
        }
        let waiter = self.prompt.lock().ok().and_then(|mut p| p.take());
        if let Some(waiter) = waiter {
            let _ = waiter.send(reason);
        }
    }
}

/// Everything the connection's handlers share; cheap to clone.
#[derive(Clone)]
pub struct Server {
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

/// What `session/new` and `session/load` share: the workspace and the client's servers.
struct Open<'a> {
    cwd: &'a Path,
    mcp_servers: &'a [McpServer],
    resume: Option<String>,
}

/// How a user authenticates squad, for clients and the ACP registry (which lists only
/// agents that say): squad handles it itself (`authenticate` succeeds at once), reading the
/// provider's key from the environment when a session starts; a local server needs none.
fn auth_methods() -> Vec<AuthMethod> {
    vec![
        AuthMethod::Agent(
            AuthMethodAgent::new(API_KEY_METHOD, "API key from the environment").description(
                "squad reads the provider's key from the variable its config names \
                 (OPENAI_API_KEY unless [provider] api_key_env says otherwise); set it \
                 before the editor starts squad"
                    .to_string(),
            ),
        ),
        AuthMethod::Agent(
            AuthMethodAgent::new(LOCAL_METHOD, "None: a local server").description(
                "a local OpenAI-compatible server (llama.cpp, vLLM, Ollama) needs no key"
                    .to_string(),
            ),
        ),
    ]
}

pub const API_KEY_METHOD: &str = "api-key-env";
pub const LOCAL_METHOD: &str = "local-server";

impl Server {
    pub fn new(launcher: Launcher) -> Self {
        Self {
            launcher,
            sessions: Arc::default(),
            children: Arc::default(),
            subagents: Arc::default(),
            fs_read: Arc::default(),
            fs_write: Arc::default(),
            following: tokio_util::task::TaskTracker::new(),
        }
    }

    /// `initialize`: remembers what the client offers, says what squad does.
    pub fn initialize(&self, request: &InitializeRequest) -> InitializeResponse {
        let caps: &ClientCapabilities = &request.client_capabilities;
        self.subagents
            .store(caps.subagents.is_some(), Ordering::Relaxed);
        self.fs_read
            .store(caps.fs.read_text_file, Ordering::Relaxed);
        self.fs_write
            .store(caps.fs.write_text_file, Ordering::Relaxed);
        // v1 is the only version squad speaks: a client asking for a later one is told so.
        InitializeResponse::new(agent_client_protocol::schema::ProtocolVersion::V1)
            .agent_capabilities(
                AgentCapabilities::new()
                    .load_session(true)
                    .prompt_capabilities(PromptCapabilities::new().embedded_context(true))
                    .mcp_capabilities(McpCapabilities::new().http(true)),
            )
            .agent_info(
                Implementation::new("squad", env!("CARGO_PKG_VERSION")).title("squad".to_string()),
            )
            .auth_methods(auth_methods())
    }

    /// `session/new`.
    pub async fn new_session(
        &self,
        request: NewSessionRequest,
        rpc: Rpc,
    ) -> Result<NewSessionResponse, Error> {
        let open = Open {
            cwd: &request.cwd,
            mcp_servers: &request.mcp_servers,
            resume: None,
        };
        let (session_id, modes) = self.open(open, rpc).await?;
        Ok(NewSessionResponse::new(session_id).modes(modes))
    }

    /// `session/load`: the session's history is replayed as updates before the answer.
    pub async fn load_session(
        &self,
        request: LoadSessionRequest,
        rpc: Rpc,
    ) -> Result<LoadSessionResponse, Error> {
        let open = Open {
            cwd: &request.cwd,
            mcp_servers: &request.mcp_servers,
            resume: Some(request.session_id.0.to_string()),
        };
        let (_, modes) = self.open(open, rpc).await?;
        Ok(LoadSessionResponse::new().modes(modes))
    }

    /// Starts the squad session (new or resumed), replays a loaded one's conversation,
    /// then follows its events.
    async fn open(&self, open: Open<'_>, rpc: Rpc) -> Result<(String, SessionModeState), Error> {
        if !open.cwd.is_absolute() {
            return Err(invalid_params("cwd must be an absolute path"));
        }
        let cwd = open
            .cwd
            .canonicalize()
            .map_err(|e| invalid_params(format!("cwd {}: {e}", open.cwd.display())))?;
        let (read, write) = (
            self.fs_read.load(Ordering::Relaxed),
            self.fs_write.load(Ordering::Relaxed),
        );
        let editor = (read || write).then(|| Arc::new(ClientFiles::new(rpc.clone(), read, write)));
        let code = if open.resume.is_some() {
            ErrorCode::RESOURCE_NOT_FOUND
        } else {
            ErrorCode::INTERNAL_ERROR
        };
        let mut opts = (self.launcher)(cwd, open.resume)
            .map_err(|e| error(code, crate::text::error_chain(&e)))?;
        opts.replay_to_frontend = true;
        opts.editor = editor.clone().map(|e| e as _);
        mcp::join(&mut opts.config.mcp_servers, open.mcp_servers);
        // An agent role (another ACP agent) is not a persona this session can become.
        let personas = || opts.roles.iter().filter(|r| r.agent.is_none());
        let modes: Vec<SessionMode> = personas()
            .map(|r| {
                SessionMode::new(r.name.clone(), r.name.clone()).description(r.description.clone())
            })
            .collect();
        let mode_names = personas().map(|r| r.name.clone()).collect();
        let mut handle = crate::runtime::start_session(opts)
            .await
            .map_err(|e| error(code, e.to_string()))?;
        let info = handle.info.clone();
        let session_id = info.session_id.clone();
        if let Some(editor) = &editor {
            let _ = editor.session_id.set(session_id.clone());
        }
        let mut translator = Translator::new(
            session_id.clone(),
            info.root_agent,
            info.workspace.clone(),
            rpc.clone(),
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
            modes: mode_names,
            root: info.root_agent,
            rpc: rpc.clone(),
            waiting: Waiting::default(),
        };
        let waiting = session.waiting.clone();
        if let Ok(mut s) = self.sessions.lock() {
            s.insert(session_id.clone(), session);
        }
        let follower = Follower {
            translator,
            waiting,
            rpc,
            root: info.root_agent,
        };
        self.following.spawn(follower.follow(handle));
        Ok((session_id, SessionModeState::new(info.role, modes)))
    }

    /// `session/prompt`: sends the user's message (or runs the command it is) and answers
    /// once the team is idle (or the command done).
    pub async fn prompt(&self, request: PromptRequest) -> Result<PromptResponse, Error> {
        let session_id = request.session_id.0.to_string();
        let text = prompt::text(&request.prompt)?;
        let (tx, rx) = oneshot::channel();
        {
            let sessions = self.sessions.lock().map_err(|_| poisoned())?;
            let Some(session) = sessions.get(&session_id) else {
                return Err(self.not_promptable(&session_id));
            };
            let mut waiting = session.waiting.prompt.lock().map_err(|_| poisoned())?;
            if waiting.is_some() {
                return Err(invalid_params(
                    "a prompt is already running in this session",
                ));
            }
            let (ops, ack) = match commands::parse(&text, session.root) {
                None => (vec![Op::UserMessage { to: None, text }], None),
                Some(Command {
                    ends: Ends::Now(line),
                    ..
                }) => {
                    session.rpc.update(&session_id, message_chunk(&line));
                    return Ok(PromptResponse::new(StopReason::EndTurn));
                }
                Some(Command { ops, ends }) => match ends {
                    Ends::Ack(ack) => (ops, Some(ack)),
                    _ => (ops, None),
                },
            };
            *waiting = Some(tx);
            if let Ok(mut c) = session.waiting.cancel.lock() {
                *c = false;
            }
            if let Ok(mut c) = session.waiting.command.lock() {
                *c = ack;
            }
            let _ = session.ops.send(Op::Resume);
            for op in ops {
                let _ = session.ops.send(op);
            }
        }
        let reason = rx
            .await
            .map_err(|_| error(ErrorCode::INTERNAL_ERROR, "the session ended"))?;
        Ok(PromptResponse::new(reason))
    }

    /// `session/cancel`: squad's graceful stop of the whole team of that session; on a
    /// child session, cancelling that worker (and its own workers) only.
    pub fn cancel(&self, note: &CancelNotification) -> Result<(), Error> {
        let session_id = note.session_id.0.as_ref();
        let sessions = self.sessions.lock().map_err(|_| poisoned())?;
        let Some(session) = sessions.get(session_id) else {
            let child = self
                .children
                .lock()
                .ok()
                .and_then(|c| c.get(session_id).cloned());
            let (ops, agent_id) = child.ok_or_else(|| unknown(session_id))?;
            let _ = ops.send(Op::Despawn { agent_id });
            return Ok(());
        };
        if let Ok(mut c) = session.waiting.cancel.lock() {
            *c = true;
        }
        let _ = session.ops.send(Op::Stop);
        Ok(())
    }

    /// `session/set_mode`: hands the session to that role, as `/role NAME` does.
    pub fn set_mode(
        &self,
        request: &SetSessionModeRequest,
    ) -> Result<SetSessionModeResponse, Error> {
        let session_id = request.session_id.0.as_ref();
        let mode = request.mode_id.0.to_string();
        let sessions = self.sessions.lock().map_err(|_| poisoned())?;
        let session = sessions
            .get(session_id)
            .ok_or_else(|| self.not_promptable(session_id))?;
        if !session.modes.contains(&mode) {
            return Err(invalid_params(format!(
                "unknown mode `{mode}`; the modes are {}",
                session.modes.join(", ")
            )));
        }
        let _ = session.ops.send(Op::SwitchPersona { role: mode });
        Ok(SetSessionModeResponse::new())
    }

    /// The client is gone: every session stops and closes its log (10 s at most).
    pub async fn shutdown(&self) {
        let sessions: Vec<_> = self
            .sessions
            .lock()
            .map(|mut s| s.drain().map(|(_, s)| s.ops).collect())
            .unwrap_or_default();
        for ops in sessions {
            let _ = ops.send(Op::Shutdown);
        }
        self.following.close();
        if tokio::time::timeout(SHUTDOWN_WAIT, self.following.wait())
            .await
            .is_err()
        {
            tracing::warn!("acp: sessions still closing after {SHUTDOWN_WAIT:?}; exiting");
        }
    }

    /// Why a prompt cannot go to this session id.
    fn not_promptable(&self, session_id: &str) -> Error {
        let child = self
            .children
            .lock()
            .is_ok_and(|c| c.contains_key(session_id));
        if child {
            invalid_params(format!(
                "{session_id} is a worker's child session: prompt its parent session"
            ))
        } else {
            unknown(session_id)
        }
    }
}

/// A session's event loop: its updates to the client, and the end of each prompt.
struct Follower {
    translator: Translator,
    waiting: Waiting,
    rpc: Rpc,
    root: AgentId,
}

impl Follower {
    /// Follows a session's events until it ends, ending prompts as the team comes to rest
    /// (or a command is done).
    async fn follow(mut self, mut handle: SessionHandle) {
        while let Some(ev) = handle.events.recv().await {
            // The last event of a session that was shut down.
            if matches!(ev.kind, EventKind::Summary { .. }) {
                break;
            }
            if let Some(reason) = self.event(&ev) {
                self.waiting.end(reason);
            }
        }
        tracing::info!("acp: session {} ended", self.translator.session_id);
    }

    fn event(&mut self, ev: &Event) -> Option<StopReason> {
        let cancelled = self.waiting.cancel.lock().map(|c| *c).unwrap_or(false);
        if cancelled {
            self.translator.turn.cancelled = true;
        }
        let ended = self.translator.event(ev);
        let Some(ack) = self.waiting.command.lock().ok().and_then(|c| *c) else {
            return ended;
        };
        // A command's prompt ends on its own event; a turn's end is not its end.
        if cancelled && matches!(ev.kind, EventKind::Idle) {
            return Some(StopReason::Cancelled);
        }
        let line = commands::ended(ack, ev, self.root)?;
        let session_id = &self.translator.session_id;
        self.rpc.update(session_id, message_chunk(&line));
        Some(StopReason::EndTurn)
    }
}

/// ACP's "resource not found", naming the session (the crate's own has no words).
fn unknown(session_id: &str) -> Error {
    error(
        ErrorCode::RESOURCE_NOT_FOUND,
        format!("unknown session: {session_id}"),
    )
    .data(serde_json::json!({ "sessionId": session_id }))
}

fn poisoned() -> Error {
    error(ErrorCode::INTERNAL_ERROR, "session state poisoned")
}
