//! The client side of the connection (the `agent-client-protocol` crate's `Client.v1()`):
//! the agent's updates forwarded to squad, its file requests answered inside its folder,
//! its permission requests put to squad off the dispatch loop (an answer may wait for the
//! user while the agent's updates keep coming). No terminal is offered yet.

use super::files::Folder;
use super::permission::{Permissions, ask_of, response};
use super::updates::AgentUpdate;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ReadTextFileRequest, ReadTextFileResponse, RequestPermissionRequest, SessionNotification,
    WriteTextFileRequest, WriteTextFileResponse,
};
use agent_client_protocol::{
    Agent, Client, ConnectTo, Error, ErrorCode, on_receive_notification, on_receive_request,
};
use tokio::sync::{mpsc, oneshot};

/// A running connection: requests go through `cx`; sending on `stop` ends it.
pub(super) struct Connection {
    pub cx: ConnectionTo<Agent>,
    pub stop: oneshot::Sender<()>,
}

/// Connects over `transport`; `None` if the connection ended before it was up.
pub(super) async fn connect(
    transport: impl ConnectTo<Client> + 'static,
    folder: Folder,
    updates: mpsc::UnboundedSender<AgentUpdate>,
    permissions: Permissions,
) -> Option<Connection> {
    let (cx_tx, cx_rx) = oneshot::channel();
    let (stop, stopped) = oneshot::channel::<()>();
    let (read_in, write_in) = (folder.clone(), folder);
    let driver = Client
        .v1()
        .name("squad")
        .on_receive_notification(
            async move |note: SessionNotification, _cx| {
                let _ = updates.send(AgentUpdate::from_acp(note.update));
                Ok(())
            },
            on_receive_notification!(),
        )
        .on_receive_request(
            async move |r: ReadTextFileRequest, responder, _cx| match read_in
                .read(&r.path, r.line, r.limit)
            {
                Ok(content) => responder.respond(ReadTextFileResponse::new(content)),
                Err(message) => responder.respond_with_error(refused(message)),
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |r: WriteTextFileRequest, responder, _cx| match write_in
                .write(&r.path, &r.content)
            {
                Ok(()) => responder.respond(WriteTextFileResponse::new()),
                Err(message) => responder.respond_with_error(refused(message)),
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |r: RequestPermissionRequest, responder, _cx| {
                let ask = permissions.clone();
                tokio::spawn(async move {
                    let decision = ask(ask_of(&r)).await;
                    let _ = responder.respond(response(&r, decision));
                });
                Ok(())
            },
            on_receive_request!(),
        )
        .connect_with(transport, async move |cx| {
            let _ = cx_tx.send(cx.clone());
            tokio::select! {
                _ = stopped => {}
                () = cx.incoming_closed() => {}
            }
            Ok(())
        });
    tokio::spawn(async move {
        if let Err(e) = driver.await {
            tracing::debug!("acp client: connection ended: {e}");
        }
    });
    let cx = cx_rx.await.ok()?;
    Some(Connection { cx, stop })
}

fn refused(message: String) -> Error {
    Error::new(ErrorCode::INVALID_PARAMS, message)
}
