//! A placed worker's spawn: which environment (the spawn's `environment`, else its
//! role's; only one the config defines), and its far side made ready before the worker
//! is counted: connected, its base sent and checked out there. A failure names the
//! environment and leaves nothing behind (the container removed, the root there gone).

pub use super::registry::PlacedWorker;
use super::registry::Placements;
use crate::config::{Config, EnvKind};
use crate::environments::carry::{self, Carried};
use crate::environments::protocol::{Init, Request};
use crate::environments::{Remote, placed_tools};
use crate::isolation::Base;
use crate::protocol::AgentId;
use crate::roles::Role;
use crate::tools::ToolContext;
use std::sync::{Arc, Mutex};

/// The environment a worker of `role` runs in: `asked` (the spawn's), else the role's;
/// `None`: here, in-process (also for a `local` environment).
pub fn chosen(config: &Config, role: &Role, asked: Option<&str>) -> Result<Option<String>, String> {
    let asked = asked.map(str::trim).filter(|a| !a.is_empty());
    let Some(name) = asked.or(role.environment.as_deref()) else {
        return Ok(None);
    };
    let Some(env) = config.environments.get(name) else {
        let defined: Vec<&str> = config.environments.keys().map(String::as_str).collect();
        let known = if defined.is_empty() {
            "the config defines none ([environments.NAME] tables); leave `environment` out".into()
        } else {
            format!("the config defines: {}", defined.join(", "))
        };
        return Err(format!("no environment named `{name}`: {known}"));
    };
    Ok((env.kind != Some(EnvKind::Local)).then(|| name.to_string()))
}

/// Connects to environment `env` for worker `id` and sends it `base`; `ctx`: the
/// spawning agent's tool context (the repository, the tools' settings).
pub async fn open(
    config: &Config,
    ctx: &ToolContext,
    id: AgentId,
    env: &str,
    base: Option<&Arc<Base>>,
) -> Result<Arc<PlacedWorker>, String> {
    let Some(base) = base else {
        return Err(format!(
            "environment '{env}': a worker placed there needs a worktree of its own here, \
             in a git repository, for its change to come back (set isolation = \"worktree\"; \
             a worker under a supervisor's worktree cannot be placed)"
        ));
    };
    let level = crate::sandbox::Level::of_session(&config.sandbox);
    let config = config
        .environments
        .get(env)
        .ok_or_else(|| format!("no environment named `{env}`"))?;
    let workdir = config.workdir_or_default().trim_end_matches('/');
    let root = format!("{workdir}/squad-{}", id.short());
    let store = format!("{workdir}/.squad-store.git");
    let init = Init::new(&root, level, &ctx.settings);
    let remote = crate::environments::connect(env, config, &init)
        .await
        .map_err(|e| format!("cannot start the worker: {e}"))?;
    let repo = ctx.workspace.root().to_path_buf();
    let carried = match carry::send_base(&remote, &repo, &base.snapshot.tree, &store).await {
        Ok(carried) => carried,
        Err(e) => {
            abandon(&remote, &store).await;
            return Err(format!("cannot start the worker: {e}"));
        }
    };
    Ok(Arc::new(placed(env, remote, carried, repo)))
}

pub(super) fn placed(
    env: &str,
    remote: Remote,
    carried: Carried,
    repo: std::path::PathBuf,
) -> PlacedWorker {
    let remote = Arc::new(remote);
    let tools = placed_tools(remote.clone())
        .into_iter()
        .map(|t| (t.spec().name, t))
        .collect();
    let applied = Mutex::new(carried.base.clone());
    PlacedWorker {
        env: env.to_string(),
        remote,
        carried,
        repo,
        tools,
        applied,
        applying: Mutex::new(None),
        keep_there: std::sync::atomic::AtomicBool::new(false),
        dirty: std::sync::atomic::AtomicBool::new(true),
        bringing: tokio::sync::Mutex::new(()),
    }
}

/// A far side that could not be made ready: its root there and the connection go.
async fn abandon(remote: &Remote, store: &str) {
    if remote.hello().git.is_some() {
        let store = store.to_string();
        let _ = remote.carry(|id| Request::Release { id, store }).await;
    }
    remote.close().await;
}

/// A far side made ready for worker `id` that was not counted after all (the team filled
/// up meanwhile, its budget could not be set aside): its root there and its container go.
pub async fn unplace(placements: Option<&Placements>, id: AgentId, worker: &PlacedWorker) {
    if let Some(p) = placements {
        p.unregister(id);
    }
    worker.release().await;
}

/// The spawn's part: `env`'s far side for worker `id` made ready, or `None` when it runs
/// here (`env` is `None`).
pub async fn place(
    placements: Option<&Placements>,
    config: &Config,
    ctx: &ToolContext,
    (id, env): (AgentId, Option<&str>),
    base: Option<&Arc<Base>>,
) -> Result<Option<Arc<PlacedWorker>>, String> {
    let Some(env) = env else {
        return Ok(None);
    };
    match placements {
        Some(p) if p.enabled() => open(config, ctx, id, env, base).await.map(Some),
        _ => Err(format!(
            "environment '{env}': this session places no workers"
        )),
    }
}
