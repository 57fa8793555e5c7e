//! The engine in-process, through its public API, with the real HTTP client pointed at the
//! mock server: what a front end does.
#![allow(dead_code)]

use super::{MockServer, Sandbox};
use ::squad::config::Config;
use ::squad::model::{ClientSettings, OpenAiClient};
use ::squad::protocol::{AgentId, AgentStatus, ApprovalPolicy, Event, EventKind, Op};
use ::squad::roles::load_roles;
use ::squad::runtime::{SessionHandle, SessionOptions, start_session};
use ::squad::session::SessionStore;
use ::squad::tools::{ToolRegistry, coding_tools};
use std::sync::Arc;
use std::time::Duration;

/// A session in the sandbox's workspace that can ask the "user" (the test) for approvals.
pub async fn start_engine(
    mock: &MockServer,
    sb: &Sandbox,
    approval: ApprovalPolicy,
) -> SessionHandle {
    start_engine_with(mock, sb, approval, |_| {}).await
}

/// Like [`start_engine`], with the config changed by `configure` first.
pub async fn start_engine_with(
    mock: &MockServer,
    sb: &Sandbox,
    approval: ApprovalPolicy,
    configure: impl FnOnce(&mut Config),
) -> SessionHandle {
    start_engine_in(mock, sb, approval, configure, None).await
}

/// Like [`start_engine_with`], keeping its log (and the workers' worktrees) in the
/// sandbox's data dir, as the binary does.
pub async fn start_engine_with_data(
    mock: &MockServer,
    sb: &Sandbox,
    approval: ApprovalPolicy,
    configure: impl FnOnce(&mut Config),
) -> SessionHandle {
    let store = SessionStore::new(sb.data_dir().join("sessions"));
    start_engine_in(mock, sb, approval, configure, Some(store)).await
}

async fn start_engine_in(
    mock: &MockServer,
    sb: &Sandbox,
    approval: ApprovalPolicy,
    configure: impl FnOnce(&mut Config),
    store: Option<SessionStore>,
) -> SessionHandle {
    let mut config = Config::default();
    config.provider.base_url = mock.base_url();
    config.provider.api_key_env = String::new();
    configure(&mut config);
    let mut tools = ToolRegistry::new();
    for t in coding_tools() {
        tools.register(t);
    }
    let client = OpenAiClient::new(ClientSettings::from_provider(&config.provider)).unwrap();
    start_session(SessionOptions {
        approval,
        config,
        roles: load_roles(sb.ws()).unwrap(),
        workspace: sb.ws().to_path_buf(),
        role: None,
        can_ask: true,
        model: Arc::new(client),
        tools,
        store,
        resume: None,
        replay_to_frontend: false,
        warnings: Vec::new(),
        notices: Vec::new(),
        editor: None,
    })
    .await
    .unwrap()
}

/// The next event matching `f` within `within`, or `None`; every event read is kept in `seen`.
pub async fn wait_event(
    handle: &mut SessionHandle,
    seen: &mut Vec<Event>,
    within: Duration,
    f: impl Fn(&Event) -> bool,
) -> Option<Event> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let ev = tokio::time::timeout_at(deadline, handle.events.recv())
            .await
            .ok()??;
        seen.push(ev.clone());
        if f(&ev) {
            return Some(ev);
        }
    }
}

/// Like [`wait_event`], but the event must come within 20 s.
pub async fn next_event(
    handle: &mut SessionHandle,
    seen: &mut Vec<Event>,
    f: impl Fn(&Event) -> bool,
) -> Event {
    wait_event(handle, seen, Duration::from_secs(20), f)
        .await
        .expect("the expected event within 20 s")
}

/// The statuses one agent went through, in order.
pub fn statuses_of(seen: &[Event], id: AgentId) -> Vec<AgentStatus> {
    seen.iter()
        .filter(|e| e.agent_id == id)
        .filter_map(|e| match e.kind {
            EventKind::AgentStatus { status, .. } => Some(status),
            _ => None,
        })
        .collect()
}

/// The user says `text` to the active persona.
pub fn say(handle: &SessionHandle, text: &str) {
    handle
        .ops
        .send(Op::UserMessage {
            to: None,
            text: text.into(),
        })
        .expect("the session is alive");
}
