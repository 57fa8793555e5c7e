//! Removing the stores no session has used for a while (`squad sessions --prune`), and the
//! oldest ones when all stores together pass a size cap (checked as a session starts).
//! A store a running session has claimed ([`Live`](super::Live)) is never removed.

use super::live::{LIVE, last_used, workspace_of};
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// A store being removed is first renamed to this, so a session that starts meanwhile
/// makes a fresh one instead of writing into one half gone.
const PRUNING: &str = ".pruning-";

/// What to keep.
#[derive(Clone, Copy, Debug)]
pub struct Keep {
    /// Stores unused for longer go.
    pub max_age: Duration,
    /// When all stores together take more (bytes on disk), the oldest go until they do not.
    pub max_bytes: u64,
}

impl Keep {
    /// What `[checkpoints]` says.
    pub fn from_config(c: &crate::config::CheckpointsConfig) -> Self {
        Self {
            max_age: Duration::from_secs(c.keep_days.saturating_mul(86_400)),
            max_bytes: c.max_total_mb.saturating_mul(1_000_000),
        }
    }
}

/// One store removed.
#[derive(Clone, Debug)]
pub struct PrunedStore {
    pub workspace: Option<PathBuf>,
    pub bytes: u64,
    /// How long it had not been used.
    pub idle: Duration,
}

/// What a prune did.
#[derive(Clone, Debug, Default)]
pub struct Pruned {
    pub removed: Vec<PrunedStore>,
    /// Stores left because a running session uses them, though old enough to go.
    pub live: usize,
    /// Bytes on disk of the stores left.
    pub left: u64,
}

struct Store {
    dir: PathBuf,
    idle: Duration,
    bytes: u64,
}

/// Removes the stores under `data` unused for longer than `keep.max_age` (always when
/// `by_age`, else only once all of them pass `keep.max_bytes`), then the least recently
/// used while they still pass it; none that a running session claimed.
pub fn prune(data: &Path, keep: Keep, by_age: bool) -> Pruned {
    let top = data.join("checkpoints");
    let now = SystemTime::now();
    let mut stores: Vec<Store> = Vec::new();
    for entry in std::fs::read_dir(&top).into_iter().flatten().flatten() {
        let dir = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(PRUNING) {
            let _ = std::fs::remove_dir_all(&dir);
            continue;
        }
        if name.len() != 16 || !name.chars().all(|c| c.is_ascii_hexdigit()) || !dir.is_dir() {
            continue;
        }
        let idle = last_used(&dir)
            .and_then(|t| now.duration_since(t).ok())
            .unwrap_or_default();
        let bytes = size(&dir);
        stores.push(Store { dir, idle, bytes });
    }
    stores.sort_by_key(|s| std::cmp::Reverse(s.idle));
    let mut total: u64 = stores.iter().map(|s| s.bytes).sum();
    let over = total > keep.max_bytes;
    let mut done = Pruned::default();
    for store in stores {
        let old = (by_age || over) && store.idle > keep.max_age;
        if !old && total <= keep.max_bytes {
            continue;
        }
        let workspace = workspace_of(&store.dir);
        if remove(&top, &store.dir) {
            total -= store.bytes;
            done.removed.push(PrunedStore {
                workspace,
                bytes: store.bytes,
                idle: store.idle,
            });
        } else if old {
            done.live += 1;
        }
    }
    done.left = total;
    done
}

/// What `squad sessions --prune` prints.
pub fn pruned_text(p: &Pruned) -> String {
    let mb = |b: u64| format!("{:.1} MB", b as f64 / 1e6);
    let mut out = String::new();
    for r in &p.removed {
        let ws = (r.workspace.as_ref()).map_or("a workspace".into(), |w| w.display().to_string());
        let days = r.idle.as_secs() / 86_400;
        out.push_str(&format!(
            "removed the checkpoints of {ws} ({}, unused for {days} days)\n",
            mb(r.bytes)
        ));
    }
    if p.removed.is_empty() {
        out.push_str("no checkpoints to remove\n");
    }
    if p.live > 0 {
        out.push_str(&format!(
            "kept {} old enough to go: a running session uses them\n",
            p.live
        ));
    }
    out.push_str(&format!("checkpoints left: {}\n", mb(p.left)));
    out
}

/// Removes the store `dir` unless a session holds it: false when one does (or it could
/// not be moved aside).
fn remove(top: &Path, dir: &Path) -> bool {
    let Ok(mark) = File::options()
        .create(true)
        .append(true)
        .open(dir.join(LIVE))
    else {
        return false;
    };
    if !crate::sync::try_lock(&mark) {
        return false;
    }
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
    let aside = top.join(format!("{PRUNING}{}", name.unwrap_or_default()));
    if std::fs::rename(dir, &aside).is_err() {
        return false;
    }
    let _ = std::fs::remove_dir_all(&aside);
    true
}

/// Bytes on disk under `dir` (allocated blocks, as `du` counts them).
pub(super) fn size(dir: &Path) -> u64 {
    let mut total = 0;
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            match entry.metadata() {
                Ok(m) if m.is_dir() => todo.push(entry.path()),
                Ok(m) => total += m.blocks() * 512,
                Err(_) => {}
            }
        }
    }
    total
}
