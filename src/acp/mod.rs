//! `squad acp`: the agent side of the Agent Client Protocol on stdin/stdout. An editor
//! starts squad as a subprocess and speaks JSON-RPC to it; each ACP session is a squad
//! session, met like every front end only through `Op`s and `Event`s.
//!
//! The `agent-client-protocol` crate (Zed's, the protocol's reference SDK) owns the wire:
//! its schema types are every message, and its v1 agent connection frames, dispatches and
//! answers (malformed JSON, unknown methods and bad params get their JSON-RPC errors there).
//! stdout carries JSON-RPC and nothing else; diagnostics go to the log file.

mod ask;
mod commands;
mod files;
mod mcp;
mod prompt;
mod rpc;
mod sessions;
mod stop;
mod tool_calls;
mod updates;

use crate::runtime::SessionOptions;
use agent_client_protocol::v1::schema::{
    AuthenticateRequest, AuthenticateResponse, CancelNotification, InitializeRequest,
    LoadSessionRequest, NewSessionRequest, PromptRequest, SetSessionModeRequest,
};
use agent_client_protocol::{LineDirection, Stdio, on_receive_notification, on_receive_request};
use rpc::Rpc;
use sessions::Server;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

/// The options of a squad session in a workspace (`cwd`), new or resumed by id. The
/// binary owns config, roles and model loading, so it hands this in.
pub type Launcher =
    Arc<dyn Fn(PathBuf, Option<String>) -> anyhow::Result<SessionOptions> + Send + Sync>;

/// Serves one client until its stdin closes, then lets every session close its log.
pub async fn run(launcher: Launcher) -> anyhow::Result<()> {
    let server = Server::new(launcher);
    // Every line in and out, for `SQUAD_LOG=debug`; never to stdout.
    let stdio = Stdio::new().with_debug(|line, direction| match direction {
        LineDirection::Stdin => tracing::debug!(target: "squad::acp", "<- {line}"),
        _ => tracing::debug!(target: "squad::acp", "-> {line}"),
    });
    let (s_init, s_new, s_load, s_prompt, s_mode, s_cancel) = (
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
    );
    let served = agent_client_protocol::Agent
        .v1()
        .name("squad")
        .on_receive_request(
            async move |request: InitializeRequest, responder, _cx| {
                responder.respond(s_init.initialize(&request))
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async |request: AuthenticateRequest, responder, _cx| {
                // The key is read when a session starts; an unknown method is an error.
                let id = request.method_id.0.as_ref();
                if id == sessions::API_KEY_METHOD || id == sessions::LOCAL_METHOD {
                    responder.respond(AuthenticateResponse::new())
                } else {
                    responder.respond_with_error(rpc::invalid_params(format!(
                        "unknown auth method `{id}`; squad offers `{}` and `{}`",
                        sessions::API_KEY_METHOD,
                        sessions::LOCAL_METHOD
                    )))
                }
            },
            on_receive_request!(),
        )
        // Starting a session, and a prompt above all, take long: they run off the
        // dispatch loop, which goes on reading (a cancel, the answer to a permission).
        .on_receive_request(
            async move |request: NewSessionRequest, responder, cx| {
                let (server, rpc) = (s_new.clone(), Rpc::new(cx));
                off_loop(async move {
                    let result = server.new_session(request, rpc.clone()).await;
                    let opened = result.as_ref().ok().map(|r| r.session_id.0.to_string());
                    let _ = responder.respond_with_result(result);
                    // After the answer, so the client knows the session it is about.
                    if let Some(id) = opened {
                        commands::advertise(&rpc, &id);
                    }
                });
                Ok(())
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest, responder, cx| {
                let (server, rpc) = (s_load.clone(), Rpc::new(cx));
                off_loop(async move {
                    let id = request.session_id.0.to_string();
                    let result = server.load_session(request, rpc.clone()).await;
                    let loaded = result.is_ok();
                    let _ = responder.respond_with_result(result);
                    if loaded {
                        commands::advertise(&rpc, &id);
                    }
                });
                Ok(())
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, _cx| {
                let server = s_prompt.clone();
                off_loop(async move {
                    let _ = responder.respond_with_result(server.prompt(request).await);
                });
                Ok(())
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest, responder, _cx| {
                responder.respond_with_result(s_mode.set_mode(&request))
            },
            on_receive_request!(),
        )
        .on_receive_notification(
            async move |note: CancelNotification, _cx| {
                if let Err(e) = s_cancel.cancel(&note) {
                    tracing::warn!("acp: session/cancel: {}", e.message);
                }
                Ok(())
            },
            on_receive_notification!(),
        )
        .connect_with(stdio, async |cx| {
            cx.incoming_closed().await;
            Ok(())
        })
        .await;
    // The client is gone (or the connection broke): every session stops and closes its log.
    server.shutdown().await;
    served.map_err(|e| anyhow::anyhow!("acp connection: {e:?}"))
}

/// Runs a handler's long work on the runtime, so the dispatch loop is free at once.
fn off_loop(work: impl Future<Output = ()> + Send + 'static) {
    tokio::spawn(work);
}
