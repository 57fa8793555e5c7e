//! Containers a killed squad left behind (issue 52 part 4). Every container a session
//! starts carries its owner: the data dir and the session ([`OWNER_DATA`],
//! [`OWNER_SESSION`]); the next squad on that data dir removes those whose session no
//! longer runs (its lock in `<data>/worktrees/<session>` is free), and never a container
//! without both labels or of another data dir: one squad did not start. A resumed session
//! holds its own lock, so its containers wait for its workers to be reattached
//! ([`sweep_own`] then removes those none took back).

use super::EnvError;
use super::container::{LABEL, engine, remove};
pub use super::container::{OWNER_DATA, OWNER_SESSION, set_owner};
use crate::config::{EnvKind, EnvironmentConfig};
use bollard::query_parameters::ListContainersOptions;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// Removes the containers of environment `name`'s engine that a session of `data` started
/// and that no longer runs; returns their names.
pub async fn sweep(
    name: &str,
    config: &EnvironmentConfig,
    data: &Path,
) -> Result<Vec<String>, EnvError> {
    let gone = |_: &str, session: &str| !crate::isolation::session_runs(data, session);
    remove_where(name, config, data, gone).await
}

/// Removes the containers of `data` on `name`'s engine for which `goes(id, session)`.
async fn remove_where(
    name: &str,
    config: &EnvironmentConfig,
    data: &Path,
    goes: impl Fn(&str, &str) -> bool,
) -> Result<Vec<String>, EnvError> {
    let docker = engine(name, config).await?;
    let filters = HashMap::from([(
        "label".to_string(),
        vec![format!("{OWNER_DATA}={}", data.display())],
    )]);
    let options = ListContainersOptions {
        all: true,
        filters: Some(filters),
        ..Default::default()
    };
    let listed = docker
        .list_containers(Some(options))
        .await
        .map_err(|e| EnvError::new(name, format!("cannot list the engine's containers: {e}")))?;
    let mut removed = Vec::new();
    for c in listed {
        let labels = c.labels.unwrap_or_default();
        let ours = labels.get(OWNER_DATA).map(PathBuf::from).as_deref() == Some(data);
        let (Some(id), Some(session)) = (c.id, labels.get(OWNER_SESSION)) else {
            continue;
        };
        if !ours || !labels.contains_key(LABEL) || !goes(&id, session) {
            continue;
        }
        remove(&docker, &id).await;
        let shown = c.names.and_then(|n| n.into_iter().next()).unwrap_or(id);
        removed.push(shown.trim_start_matches('/').to_string());
    }
    Ok(removed)
}

/// Each engine of `environments`' container ones, once (by socket).
fn engines(
    environments: &BTreeMap<String, EnvironmentConfig>,
) -> Vec<(&String, &EnvironmentConfig)> {
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for (name, config) in environments {
        if config.kind != Some(EnvKind::Container) {
            continue;
        }
        let socket = super::container::socket(config);
        if !seen.contains(&socket) {
            seen.push(socket);
            out.push((name, config));
        }
    }
    out
}

/// Sweeps every container environment of `environments` (engines that do not answer are
/// passed by: a worker's spawn there will say so).
pub async fn sweep_all(
    environments: &BTreeMap<String, EnvironmentConfig>,
    data: &Path,
) -> Vec<String> {
    let mut removed = Vec::new();
    for (name, config) in engines(environments) {
        match sweep(name, config, data).await {
            Ok(names) => removed.extend(names),
            Err(e) => tracing::info!("no sweep of leftover containers: {e}"),
        }
    }
    removed
}

/// After a resume reattached its workers: removes this session's containers (of an
/// earlier run of it) but `kept`, the engine ids of those a worker took back.
pub async fn sweep_own(
    environments: &BTreeMap<String, EnvironmentConfig>,
    kept: &[String],
) -> Vec<String> {
    let Some((data, me)) = super::container::owner() else {
        return Vec::new();
    };
    let data = PathBuf::from(data);
    let goes = |id: &str, session: &str| session == me && !kept.iter().any(|k| k == id);
    let mut removed = Vec::new();
    for (name, config) in engines(environments) {
        match remove_where(name, config, &data, goes).await {
            Ok(names) => removed.extend(names),
            Err(e) => tracing::info!("no sweep of this session's containers: {e}"),
        }
    }
    removed
}
