//! `squad tool-server`: the far side of an environment. It serves one worker's coding tools
//! (read, write, edit, apply_patch, list, search, run_command, run_tests) inside the root
//! the near side names, with this machine's own sandbox, over [`super::protocol`] on any
//! pair of byte streams (stdin and stdout in the subcommand). The handlers are the very
//! ones a local worker calls (`crate::tools`), so a call answers the same here and there.

use super::protocol::{Hello, Init, Outcome, Reply, Request, VERSION, WireError};
use crate::config::SandboxConfig;
use crate::protocol::AgentId;
use crate::tools::{ToolContext, ToolRegistry, ToolSettings, coding_tools};
use crate::workspace::Workspace;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, BufReader};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("tool server: the near side closed before its init line")]
    NoInit,
    #[error("tool server: bad init line: {0}")]
    BadInit(String),
    #[error("tool server: {0}")]
    Io(#[from] std::io::Error),
}

/// The subcommand: serves on stdin and stdout, or with `hold`, waits until stopped.
pub async fn run(root: Option<std::path::PathBuf>, hold: bool) -> Result<(), ServeError> {
    if hold {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        return Ok(());
    }
    serve(tokio::io::stdin(), tokio::io::stdout(), root).await
}

/// Serves until `input` ends; calls still running then are cancelled. `root`, when given,
/// is the worker's root whatever the init names.
pub async fn serve<R, W>(
    input: R,
    output: W,
    root: Option<std::path::PathBuf>,
) -> Result<(), ServeError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let mut lines = BufReader::new(input).lines();
    let (tx, rx) = mpsc::unbounded_channel::<String>();
    let writer = tokio::spawn(super::protocol::write_lines(rx, output));
    let first = lines.next_line().await?.ok_or(ServeError::NoInit)?;
    let mut init: Init =
        serde_json::from_str(&first).map_err(|e| ServeError::BadInit(e.to_string()))?;
    if let Some(root) = root {
        init.root = root.display().to_string();
    }
    let ctx = match context(&init) {
        Ok(ctx) => ctx,
        Err(error) => {
            send(&tx, &hello(&init.root, String::new(), Some(error)));
            drop(tx);
            let _ = writer.await;
            return Ok(());
        }
    };
    let described = describe_sandbox(&init);
    send(
        &tx,
        &hello(&ctx.workspace.root().display().to_string(), described, None),
    );
    let tools = Arc::new(registry());
    let running: Arc<Mutex<HashMap<u64, CancellationToken>>> = Arc::default();
    while let Some(line) = lines.next_line().await? {
        let request = match serde_json::from_str::<Request>(&line) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!("tool server: unreadable request skipped: {e}");
                continue;
            }
        };
        match request {
            Request::Cancel { id } => {
                if let Some(token) = crate::sync::lock(&running).get(&id) {
                    token.cancel();
                }
            }
            request => {
                let token = ctx.cancel.child_token();
                let id = request_id(&request);
                crate::sync::lock(&running).insert(id, token.clone());
                let call_ctx = ToolContext {
                    cancel: token,
                    ..ctx.clone()
                };
                let (tools, tx, running) = (tools.clone(), tx.clone(), running.clone());
                tokio::spawn(async move {
                    let outcome = answer(&tools, &call_ctx, request).await;
                    crate::sync::lock(&running).remove(&id);
                    send(&tx, &Reply { id, outcome });
                });
            }
        }
    }
    ctx.cancel.cancel();
    drop(tx);
    let _ = writer.await;
    Ok(())
}

fn request_id(request: &Request) -> u64 {
    match request {
        Request::Call { id, .. }
        | Request::Describe { id, .. }
        | Request::Cancel { id }
        | Request::Haves { id, .. }
        | Request::Receive { id, .. }
        | Request::Collect { id, .. }
        | Request::Release { id, .. }
        | Request::Holds { id, .. } => *id,
    }
}

async fn answer(tools: &ToolRegistry, ctx: &ToolContext, request: Request) -> Outcome {
    let (tool, args, describe) = match request {
        Request::Call { tool, args, .. } => (tool, args, false),
        Request::Describe { tool, args, .. } => (tool, args, true),
        Request::Cancel { .. } => return Outcome::Action(None),
        carry => return super::far_git::answer(ctx.workspace.root(), carry).await,
    };
    let Some(handler) = tools.get(&tool) else {
        return Outcome::Error(WireError::from(crate::tools::ToolError::Failed(format!(
            "the tool server has no tool '{tool}' (it serves: {})",
            tools.names().join(", ")
        ))));
    };
    if describe {
        match handler.describe(ctx, &args).await {
            Ok(action) => Outcome::Action(action),
            Err(e) => Outcome::Error(e.into()),
        }
    } else {
        match handler.call(ctx, args).await {
            Ok(output) => Outcome::Output(output),
            Err(e) => Outcome::Error(e.into()),
        }
    }
}

/// The coding tools, as a local worker has them.
pub fn registry() -> ToolRegistry {
    let mut tools = ToolRegistry::new();
    for tool in coding_tools() {
        tools.register(tool);
    }
    tools
}

/// The worker's tool context here: its root (made when missing), the settings the near side
/// sent, and this machine's sandbox at the level it asked for.
fn context(init: &Init) -> Result<ToolContext, String> {
    if init.version != VERSION {
        return Err(format!(
            "protocol version {} here, {} on the near side: use the same squad on both",
            VERSION, init.version
        ));
    }
    std::fs::create_dir_all(&init.root)
        .map_err(|e| format!("cannot make the root {}: {e}", init.root))?;
    let workspace = Workspace::new(std::path::Path::new(&init.root))
        .map_err(|e| format!("cannot open the root {}: {e}", init.root))?;
    let sandbox = sandbox_for(init);
    let confined = sandbox.for_agent(init.sandbox, workspace.root());
    Ok(ToolContext {
        agent_id: AgentId::new(),
        workspace: Arc::new(workspace),
        settings: Arc::new(ToolSettings {
            command_timeout: Duration::from_secs(init.command_timeout_s.max(1)),
            max_output_bytes: init.max_output_bytes,
            read_max_bytes: init.read_max_bytes,
            test_command: init.test_command.clone(),
        }),
        cancel: CancellationToken::new(),
        sandbox: confined,
        editor: None,
    })
}

fn sandbox_for(init: &Init) -> crate::sandbox::Sandbox {
    let config = SandboxConfig {
        mode: init.sandbox.mode,
        network: init.sandbox.network,
        ..SandboxConfig::default()
    };
    crate::sandbox::Sandbox::new(&config, None, crate::sandbox::support())
}

fn describe_sandbox(init: &Init) -> String {
    sandbox_for(init).describe(init.sandbox)
}

fn hello(root: &str, sandbox: String, error: Option<String>) -> Hello {
    Hello {
        version: VERSION,
        root: root.to_string(),
        squad: env!("CARGO_PKG_VERSION").to_string(),
        sandbox,
        git: super::far_git::version(),
        error,
    }
}

fn send<T: serde::Serialize>(tx: &mpsc::UnboundedSender<String>, message: &T) {
    if let Ok(line) = serde_json::to_string(message) {
        let _ = tx.send(line);
    }
}
