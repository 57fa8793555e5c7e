//! A resumed session's placed workers (issue 52 part 4). Each one that was live gets its
//! far side again before its next call (`Placements::resolve` waits for it): reattached,
//! by a new connection to the same root, where its container or host still runs and holds
//! its work; else started there again from what of its change came back (the commit the
//! log names, which its worktree here holds), sent as its base as at a spawn. Where
//! neither can be, it ends failed with the reason, naming the environment and what of its
//! work is here and there. This session's containers that no worker took back go after.

use super::open::placed;
use super::{PlacedWorker, Placements};
use crate::config::{Config, EnvKind};
use crate::environments::carry::{self, Carried, Way};
use crate::environments::protocol::{Init, Request};
use crate::environments::{Remote, container};
use crate::protocol::{AgentStatus, FarSide};
use crate::session::ReplayedAgent;
use crate::tools::ToolSettings;
use std::path::Path;
use std::sync::Arc;

/// A resumed worker whose far side is reopened: live, not released, placed.
fn reopens(agent: &ReplayedAgent) -> Option<&FarSide> {
    let ended = matches!(agent.status, AgentStatus::Failed | AgentStatus::Cancelled)
        || (agent.status == AgentStatus::Completed && !agent.options.keep);
    (!agent.released && !ended).then_some(agent.far_side.as_ref()?)
}

/// Begins reopening the far side of each of `agents` that was placed and live; then this
/// session's containers none took back are removed.
pub fn reopen_all(
    placements: &Arc<Placements>,
    config: &Arc<Config>,
    repo: &Path,
    settings: impl Fn(&ReplayedAgent) -> Arc<ToolSettings>,
    agents: &[ReplayedAgent],
) {
    let mut jobs = Vec::new();
    for agent in agents {
        let Some(far) = reopens(agent) else {
            continue;
        };
        let (tx, rx) = tokio::sync::watch::channel(None);
        placements.reopening(agent.id, rx);
        let (p, config, repo) = (placements.clone(), config.clone(), repo.to_path_buf());
        let (far, settings, id) = (far.clone(), settings(agent), agent.id);
        jobs.push(tokio::spawn(async move {
            let outcome = match reopen(&config, &repo, &settings, &far).await {
                Ok(worker) => {
                    let container = worker.remote.container().map(str::to_string);
                    p.register(id, Arc::new(worker));
                    tracing::info!("worker {} back in environment '{}'", id.short(), far.env);
                    (Ok(()), container)
                }
                Err(why) => (Err(why), None),
            };
            let _ = tx.send(Some(outcome.0));
            outcome.1
        }));
    }
    let environments = config.environments.clone();
    tokio::spawn(async move {
        let mut kept = Vec::new();
        for job in jobs {
            kept.extend(job.await.ok().flatten());
        }
        for name in crate::environments::sweep::sweep_own(&environments, &kept).await {
            tracing::info!("removed container {name}: no resumed worker took it back");
        }
    });
}

/// `far` again: reattached, or started there from its last commit here; else why not.
pub async fn reopen(
    config: &Config,
    repo: &Path,
    settings: &ToolSettings,
    far: &FarSide,
) -> Result<PlacedWorker, String> {
    let fail = |why: String| format!("environment '{}': {why} ({})", far.env, kept(far));
    let Some(env) = config.environments.get(&far.env) else {
        return Err(fail(
            "it is no longer in the config: the worker can be neither reattached nor \
             started there again"
                .into(),
        ));
    };
    let level = crate::sandbox::Level::of_session(&config.sandbox);
    let init = Init::new(&far.root, level, settings);
    let cannot = |e: crate::environments::EnvError| fail(format!("cannot reach it: {}", e.reason));
    let attached = match (&far.container, env.kind) {
        (Some(id), Some(EnvKind::Container)) => container::reattach(&far.env, env, id, &init)
            .await
            .map_err(cannot)?,
        _ => None,
    };
    let remote = match attached {
        Some(remote) => remote,
        None => crate::environments::connect(&far.env, env, &init)
            .await
            .map_err(cannot)?,
    };
    if holds(&remote, far).await {
        return Ok(again(
            far,
            remote,
            repo,
            far.base.clone(),
            far.applied.clone(),
        ));
    }
    let store = far.store.clone().unwrap_or_else(|| {
        let workdir = env.workdir_or_default().trim_end_matches('/');
        format!("{workdir}/.squad-store.git")
    });
    match restart(&remote, repo, far, &store).await {
        Ok((carried, pending)) => Ok(restarted(far, remote, repo, carried, pending)),
        Err(e) => {
            remote.close().await;
            Err(fail(format!("cannot start the worker there again: {e}")))
        }
    }
}

/// The worker started there again from `carried`. Killed as a change (`pending`) was
/// applied here, it goes on there from that change, and its next bring-back measures
/// from what the worktree here surely holds after looking whether it holds that change
/// too (`settle`), so what comes back is right either way and nothing is applied twice.
fn restarted(
    far: &FarSide,
    remote: Remote,
    repo: &Path,
    carried: Carried,
    pending: Option<String>,
) -> PlacedWorker {
    let base = carried.base.clone();
    let mut worker = placed(&far.env, remote, carried, repo.to_path_buf());
    match pending {
        Some(pending) => {
            worker.applied = std::sync::Mutex::new(far.applied.clone());
            worker.applying = std::sync::Mutex::new(Some(pending));
        }
        None => worker.applied = std::sync::Mutex::new(base),
    }
    worker
}

/// Whether the far side still holds the worker's work in its root.
async fn holds(remote: &Remote, far: &FarSide) -> bool {
    let (base, store) = (far.base.clone(), far.store.clone());
    let answer = remote.carry(|id| Request::Holds { id, base, store }).await;
    if let Err(e) = &answer {
        tracing::info!("environment '{}': not reattached: {e}", far.env);
    }
    answer.is_ok()
}

/// The worker reattached to its root there, as the log left it.
fn again(
    far: &FarSide,
    remote: Remote,
    repo: &Path,
    base: String,
    applied: String,
) -> PlacedWorker {
    let way = match &far.store {
        Some(store) => Way::Git {
            store: store.clone(),
        },
        None => Way::Archive,
    };
    let carried = Carried {
        way,
        root: far.root.clone(),
        base,
    };
    let mut worker = placed(&far.env, remote, carried, repo.to_path_buf());
    worker.applied = std::sync::Mutex::new(applied);
    // Killed while it was applied here: the next bring-back looks whether it is.
    worker.applying = std::sync::Mutex::new(far.applying.clone());
    worker
}

/// Sends the tree of its last commit here as its base: the one the log says was being
/// applied at the kill when this repository holds it (it came back, so it is kept under
/// its returned ref), else the last one that came back. Returns the first with it.
async fn restart(
    remote: &Remote,
    repo: &Path,
    far: &FarSide,
    store: &str,
) -> Result<(Carried, Option<String>), String> {
    let git = crate::isolation::Git::new(repo);
    let tree_of = |commit: &str| git.text(&["rev-parse", &format!("{commit}^{{tree}}")]);
    let pending = far
        .applying
        .as_ref()
        .and_then(|c| tree_of(c).ok().map(|tree| (c.clone(), tree)));
    let tree = match &pending {
        Some((_, tree)) => tree.clone(),
        None => tree_of(&far.applied)
            .map_err(|e| format!("its last commit {} is not here: {e}", far.applied))?,
    };
    let carried = carry::send_base(remote, repo, &tree, store)
        .await
        .map_err(|e| e.reason)?;
    Ok((carried, pending.map(|(commit, _)| commit)))
}

/// What of a worker's work is kept, for a reason it ends with.
fn kept(far: &FarSide) -> String {
    let here = if far.applied == far.base {
        "none of its change had come back".to_string()
    } else {
        format!(
            "its change up to commit {} came back and is in its worktree here",
            far.applied
        )
    };
    let there = match &far.container {
        Some(id) => format!("what it did after that was in container {id}"),
        None => format!(
            "what it did after that is in {} there, if it is still there",
            far.root
        ),
    };
    format!("{here}; {there}")
}
