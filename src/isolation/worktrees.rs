//! The worktrees of one session, by agent: what the runtime calls when a writing worker
//! is spawned, when its diff is shown, when its result is accepted (the merge queue),
//! when it is asked to redo after a conflict, and when it is released. The git work runs
//! on tokio's blocking pool; everything that reads or writes the workspace takes its
//! turn in the one [`MergeQueue`]. Checking a worktree out reads only the repository, so
//! that part runs outside the queue, several at once: workers that start writing
//! together get their worktrees together, from one snapshot of the workspace.

use super::IsolationError;
use super::conflicts::Conflict;
use super::diff::{self, DiffSummary};
use super::merge::{self, MergeOutcome};
use super::queue::MergeQueue;
use super::redo;
use super::repo::Repo;
use super::session_dir::SessionDir;
use super::snapshot::{self, Snapshot};
use super::worktree::{Spare, Worktree};
use crate::protocol::AgentId;
use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::Semaphore;

type Shared = Arc<Mutex<Worktree>>;

/// Worktrees checked out at once (each with git's parallel checkout).
const CHECKOUTS_AT_ONCE: usize = 4;

/// The last snapshot taken for a creation, and when it began.
type Fresh = Arc<Mutex<Option<(Snapshot, Instant)>>>;

/// How long closing waits for a spare still being checked out: 10 s in steps.
const CLOSE_WAIT_STEP: std::time::Duration = std::time::Duration::from_millis(50);
const CLOSE_WAIT_STEPS: u32 = 200;

pub struct Worktrees {
    repo: Arc<Repo>,
    session: Arc<SessionDir>,
    queue: MergeQueue,
    by_agent: Mutex<HashMap<AgentId, Shared>>,
    spares: Arc<Spares>,
    fresh: Fresh,
    checkouts: Arc<Semaphore>,
}

/// The one spare worktree kept ready, once [`Worktrees::warm`] asked for it.
#[derive(Default)]
struct Spares {
    ready: Mutex<Option<Spare>>,
    /// A spare is being checked out (only one at a time).
    making: AtomicBool,
    /// Set by `warm`: make a new spare each time one is used.
    keep: AtomicBool,
    next: AtomicU64,
}

impl Worktrees {
    /// Claims the session's folder under `data` (its lock says the session runs).
    pub fn open(repo: Repo, data: &Path, session: &str) -> Result<Self, IsolationError> {
        let session = SessionDir::claim(data, session, &repo.top)?;
        Ok(Self {
            repo: Arc::new(repo),
            session: Arc::new(session),
            queue: MergeQueue::new(),
            by_agent: Mutex::new(HashMap::new()),
            spares: Arc::new(Spares::default()),
            fresh: Fresh::default(),
            checkouts: Arc::new(Semaphore::new(CHECKOUTS_AT_ONCE)),
        })
    }

    pub fn repo(&self) -> &Repo {
        &self.repo
    }

    /// Where this session's worktrees live.
    pub fn dir(&self) -> &Path {
        &self.session.dir
    }

    /// Gives `agent` its worktree (made from the workspace as it is now) and returns the
    /// root its tools are confined to. An agent that has one keeps it. With a spare ready
    /// (see [`Worktrees::warm`]) this writes only the files that differ from HEAD.
    pub async fn create(&self, agent: AgentId) -> Result<PathBuf, IsolationError> {
        if let Some(root) = self.root(agent) {
            return Ok(root);
        }
        // The snapshot reads the workspace: it takes its turn in the queue.
        let asked = Instant::now();
        let (repo, session, fresh) = (self.repo.clone(), self.session.clone(), self.fresh.clone());
        let base = self
            .queue
            .run(move || shared_snapshot(&repo, &session.scratch, &fresh, asked))
            .await??;
        let _turn = self
            .checkouts
            .acquire()
            .await
            .map_err(|e| IsolationError::Stopped(e.to_string()))?;
        let (repo, session) = (self.repo.clone(), self.session.clone());
        let spare = crate::sync::lock(&self.spares.ready).take();
        let wt = blocking(move || {
            let name = agent.short();
            let from_spare =
                spare.map(|s| Worktree::from_spare_at(&repo, s, &session.dir, &name, &base));
            match from_spare {
                Some(Ok(wt)) => Ok(wt),
                _ => Worktree::create_at(&repo, &session.dir, &name, &base),
            }
        })
        .await?;
        let root = wt.root.clone();
        crate::sync::lock(&self.by_agent).insert(agent, Arc::new(Mutex::new(wt)));
        if self.spares.keep.load(Ordering::Relaxed) {
            tokio::spawn(self.warm());
        }
        Ok(root)
    }

    /// Checks out a spare worktree in the background of the caller's choosing, and from
    /// then on another each time one is used, so that giving a worker its worktree costs
    /// a snapshot and the files that differ from HEAD rather than writing the whole tree.
    /// The price is one more checkout of the repository on disk. The future is `'static`:
    /// spawn it. Does nothing while a spare is ready or being made.
    pub fn warm(&self) -> impl Future<Output = ()> + Send + 'static {
        self.spares.keep.store(true, Ordering::Relaxed);
        let (repo, session, spares) =
            (self.repo.clone(), self.session.clone(), self.spares.clone());
        async move {
            if !spares.keep.load(Ordering::Relaxed)
                || crate::sync::lock(&spares.ready).is_some()
                || spares.making.swap(true, Ordering::AcqRel)
            {
                return;
            }
            let n = spares.next.fetch_add(1, Ordering::Relaxed);
            let made = {
                let repo = repo.clone();
                blocking(move || Spare::create(&repo, &session.dir, n)).await
            };
            match made {
                // The session closed meanwhile: nobody will take it.
                Ok(Some(spare)) if !spares.keep.load(Ordering::Relaxed) => {
                    let top = repo.top.clone();
                    if let Err(e) = blocking(move || spare.remove(&top)).await {
                        tracing::warn!("spare worktree: {e}");
                    }
                }
                Ok(Some(spare)) => *crate::sync::lock(&spares.ready) = Some(spare),
                Ok(None) => {}
                Err(e) => tracing::warn!("no spare worktree: {e}"),
            }
            spares.making.store(false, Ordering::Release);
        }
    }

    /// Whether a spare is ready now.
    pub fn spare_ready(&self) -> bool {
        crate::sync::lock(&self.spares.ready).is_some()
    }

    /// Removes the spare worktree, if any (when the session ends; otherwise the next
    /// start's clean-up does it).
    pub async fn close(&self) -> Result<(), IsolationError> {
        self.spares.keep.store(false, Ordering::Relaxed);
        // A spare being made is removed by its maker once done; wait for that (bounded:
        // the next start's clean-up removes what is left).
        for _ in 0..CLOSE_WAIT_STEPS {
            if !self.spares.making.load(Ordering::Acquire) {
                break;
            }
            tokio::time::sleep(CLOSE_WAIT_STEP).await;
        }
        let Some(spare) = crate::sync::lock(&self.spares.ready).take() else {
            return Ok(());
        };
        let repo = self.repo.clone();
        blocking(move || spare.remove(&repo.top)).await
    }

    /// Takes back the worktree an earlier run of this session made for `agent` (resume).
    pub fn reopen(&self, agent: AgentId) -> Option<PathBuf> {
        let wt = Worktree::reopen(&self.repo, &self.session.dir, &agent.short())?;
        let root = wt.root.clone();
        crate::sync::lock(&self.by_agent).insert(agent, Arc::new(Mutex::new(wt)));
        Some(root)
    }

    /// The root of `agent`'s worktree, if it has one.
    pub fn root(&self, agent: AgentId) -> Option<PathBuf> {
        let wt = self.get(agent).ok()?;
        Some(crate::sync::lock(&wt).root.clone())
    }

    /// What git writes for a commit in `agent`'s worktree (see [`Worktree::git_writable`]);
    /// empty when it has none.
    pub fn git_writable(&self, agent: AgentId) -> Vec<PathBuf> {
        self.get(agent)
            .map(|wt| crate::sync::lock(&wt).git_writable())
            .unwrap_or_default()
    }

    /// The worker's change in figures (`+12 −3`).
    pub async fn diff(&self, agent: AgentId) -> Result<DiffSummary, IsolationError> {
        let (wt, scratch) = (self.get(agent)?, self.session.scratch.clone());
        blocking(move || diff::summary(&crate::sync::lock(&wt), &scratch)).await
    }

    /// The worker's change as a unified diff.
    pub async fn diff_text(&self, agent: AgentId) -> Result<String, IsolationError> {
        let (wt, scratch) = (self.get(agent)?, self.session.scratch.clone());
        blocking(move || diff::text(&crate::sync::lock(&wt), &scratch)).await
    }

    /// Queues the worker's change for merging into the workspace and waits for its turn
    /// (merges run one at a time, in the order they were queued).
    pub async fn merge(&self, agent: AgentId) -> Result<MergeOutcome, IsolationError> {
        let (wt, repo, scratch) = self.parts(agent)?;
        let fresh = self.fresh.clone();
        self.queue
            .run(move || {
                // The workspace changes: later workers start from its new state.
                crate::sync::lock(&fresh).take();
                merge::merge_into_workspace(&repo, &mut crate::sync::lock(&wt), &scratch)
            })
            .await?
    }

    /// Moves the worker's worktree onto the workspace's current state; the files it
    /// returns hold conflict markers (in the worktree only) for the worker to settle.
    pub async fn redo(&self, agent: AgentId) -> Result<Vec<Conflict>, IsolationError> {
        let (wt, repo, scratch) = self.parts(agent)?;
        self.queue
            .run(move || redo::redo_on_current(&repo, &mut crate::sync::lock(&wt), &scratch))
            .await?
    }

    /// Removes the worker's worktree and branch (its change was merged or discarded).
    /// False when it had none.
    pub async fn remove(&self, agent: AgentId) -> Result<bool, IsolationError> {
        let Some(wt) = crate::sync::lock(&self.by_agent).remove(&agent) else {
            return Ok(false);
        };
        let repo = self.repo.clone();
        blocking(move || crate::sync::lock(&wt).remove(&repo.top)).await?;
        Ok(true)
    }

    fn get(&self, agent: AgentId) -> Result<Shared, IsolationError> {
        crate::sync::lock(&self.by_agent)
            .get(&agent)
            .cloned()
            .ok_or_else(|| IsolationError::NoWorktree(agent.short()))
    }

    fn parts(&self, agent: AgentId) -> Result<(Shared, Arc<Repo>, PathBuf), IsolationError> {
        Ok((
            self.get(agent)?,
            self.repo.clone(),
            self.session.scratch.clone(),
        ))
    }
}

/// The snapshot a creation asked for at `asked` starts from: the last one when it began
/// after that (so it holds everything written before the worker's first change; the
/// creations queued behind one snapshot all share the next) and no merge came since, else
/// a new one. Runs in the merge queue.
fn shared_snapshot(
    repo: &Repo,
    scratch: &Path,
    fresh: &Fresh,
    asked: Instant,
) -> Result<Snapshot, IsolationError> {
    if let Some((snap, began)) = crate::sync::lock(fresh).as_ref()
        && *began >= asked
    {
        return Ok(snap.clone());
    }
    let began = Instant::now();
    let snap = snapshot::take(&repo.top, &repo.index, scratch)?;
    *crate::sync::lock(fresh) = Some((snap.clone(), began));
    Ok(snap)
}

/// Runs git work off the async threads.
async fn blocking<T: Send + 'static>(
    job: impl FnOnce() -> Result<T, IsolationError> + Send + 'static,
) -> Result<T, IsolationError> {
    tokio::task::spawn_blocking(job)
        .await
        .map_err(|e| IsolationError::Stopped(e.to_string()))?
}
