//! The worktrees of one session, by agent: what the runtime calls when a writing worker
//! is spawned (its base, see `base.rs`), when it first writes (its worktree, made from
//! that base), when its diff is shown, when its result is accepted (the merge queue),
//! when it is asked to redo after a conflict, and when it is released. The git work runs
//! on tokio's blocking pool; everything that reads or writes the workspace takes its
//! turn in the one [`MergeQueue`]. Checking a worktree out reads only the repository, so
//! that part runs outside the queue, several at once. A worktree made for a first call
//! that names the files it writes is filled behind that call; everything else here waits
//! for the fill ([`Worktrees::ready`]).

use super::IsolationError;
use super::base::{Base, Bases};
use super::base_checkout::BaseCheckout;
use super::conflicts::Conflict;
use super::diff::{self, DiffSummary};
use super::fill::Fill;
use super::keep;
use super::merge::{self, MergeOutcome};
use super::queue::MergeQueue;
use super::redo;
use super::repo::Repo;
use super::session_dir::SessionDir;
use super::spare::Spare;
use super::worktree::Worktree;
use crate::protocol::AgentId;
use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

type Shared = Arc<Mutex<Worktree>>;

/// How a fill ended; `None` while it runs.
type FillEnd = Option<Result<(), String>>;

/// A worktree's fill (see [`Worktree::create_lazy_at`]), from the start of it until it is
/// known to have ended well.
#[derive(Clone)]
struct Filling {
    end: watch::Receiver<FillEnd>,
    /// The paths its first call may write meanwhile.
    kept: Arc<[String]>,
}

/// Worktrees checked out at once (each with git's parallel checkout).
const CHECKOUTS_AT_ONCE: usize = 4;

/// How long closing waits for a spare still being checked out: 10 s in steps.
const CLOSE_WAIT_STEP: std::time::Duration = std::time::Duration::from_millis(50);
const CLOSE_WAIT_STEPS: u32 = 200;

pub struct Worktrees {
    repo: Arc<Repo>,
    session: Arc<SessionDir>,
    queue: MergeQueue,
    by_agent: Mutex<HashMap<AgentId, Shared>>,
    spares: Arc<Spares>,
    bases: Arc<Bases>,
    checkouts: Arc<Semaphore>,
    /// Worktrees whose files are being written behind their first call, or could not all
    /// be, by agent.
    fills: Mutex<HashMap<AgentId, Filling>>,
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
            bases: Arc::default(),
            checkouts: Arc::new(Semaphore::new(CHECKOUTS_AT_ONCE)),
            fills: Mutex::new(HashMap::new()),
        })
    }

    pub fn repo(&self) -> &Repo {
        &self.repo
    }

    /// Where this session's worktrees live.
    pub fn dir(&self) -> &Path {
        &self.session.dir
    }

    /// The base of a worker spawned now (see `base.rs`): the current one while the
    /// workspace has not changed, else a new snapshot, taken in the merge queue.
    pub async fn base(&self) -> Result<Arc<Base>, IsolationError> {
        let (repo, session, bases) = (self.repo.clone(), self.session.clone(), self.bases.clone());
        let asked = std::time::Instant::now();
        self.queue
            .run(move || bases.now(&repo, &session.scratch, asked))
            .await?
    }

    /// Whether the workspace still is `base`, so a worker on it may read the workspace
    /// itself. A walk of the work tree on the blocking pool; no git process.
    pub async fn still(&self, base: &Arc<Base>) -> bool {
        let (repo, bases, base) = (self.repo.clone(), self.bases.clone(), base.clone());
        blocking(move || Ok(bases.still(&base, &repo.top)))
            .await
            .unwrap_or(false)
    }

    /// squad wrote in the workspace (outside a merge): the next spawn gets a new base.
    pub fn workspace_changed(&self) {
        self.bases.changed();
    }

    /// Gives `agent` its worktree, made from the workspace's current base, and returns the
    /// root its tools are confined to. An agent that has one keeps it. With a spare ready
    /// (see [`Worktrees::warm`]) this writes only the files that differ from HEAD.
    pub async fn create(&self, agent: AgentId) -> Result<PathBuf, IsolationError> {
        self.create_for(agent, None, None)
            .await
            .map(|(root, _)| root)
    }

    /// [`Worktrees::create`] from `base` (the workspace as it was when the worker was
    /// spawned; the current base without it), for a call that writes only `writes` (paths
    /// as its tool got them), when its handler can tell. Without a spare, such a call need not wait for the
    /// whole tree: the worktree is made without files, those of `writes` are checked out,
    /// and the rest is written on a thread of its own behind the call (see
    /// [`Worktree::create_lazy_at`]). The flag says so: the call may run now, and anything
    /// else in the worktree waits for [`Worktrees::ready`].
    pub async fn create_for(
        &self,
        agent: AgentId,
        writes: Option<&[String]>,
        base: Option<Arc<Base>>,
    ) -> Result<(PathBuf, bool), IsolationError> {
        if let Some(root) = self.root(agent) {
            return Ok((root, false));
        }
        let base = match base {
            Some(base) => base,
            None => self.base().await?,
        };
        let base = base.snapshot.clone();
        let turn = self
            .checkouts
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| IsolationError::Stopped(e.to_string()))?;
        let (repo, session) = (self.repo.clone(), self.session.clone());
        let spare = crate::sync::lock(&self.spares.ready).take();
        let writes = writes.map(<[String]>::to_vec);
        let (wt, fill) = blocking(move || {
            let name = agent.short();
            let from_spare =
                spare.map(|s| Worktree::from_spare_at(&repo, s, &session.dir, &name, &base));
            match (from_spare, writes) {
                (Some(Ok(wt)), _) => Ok((wt, None)),
                (_, Some(writes)) => {
                    Worktree::create_lazy_at(&repo, &session.dir, &name, &base, &writes)
                }
                (_, None) => {
                    Worktree::create_at(&repo, &session.dir, &name, &base).map(|wt| (wt, None))
                }
            }
        })
        .await?;
        let root = wt.root.clone();
        let early = fill.is_some();
        // Known before the worktree is: nothing may find it without its fill.
        if let Some(fill) = fill {
            // The fill keeps the checkout's place among the ones at once.
            self.start_fill(agent, fill, Some(turn), Fill::run);
        }
        crate::sync::lock(&self.by_agent).insert(agent, Arc::new(Mutex::new(wt)));
        if self.spares.keep.load(Ordering::Relaxed) {
            tokio::spawn(self.warm());
        }
        Ok((root, early))
    }

    /// Runs `fill` (with `run`) on a thread of its own: it outlives the call that made the
    /// worktree, and holds `turn` until done. [`Worktrees::ready`] hears how it ended.
    fn start_fill(
        &self,
        agent: AgentId,
        fill: Fill,
        turn: Option<OwnedSemaphorePermit>,
        run: impl FnOnce(&Fill) -> Result<(), IsolationError> + Send + 'static,
    ) {
        let (tell, end) = watch::channel(None);
        let kept: Arc<[String]> = fill.kept().into();
        crate::sync::lock(&self.fills).insert(
            agent,
            Filling {
                end,
                kept: kept.clone(),
            },
        );
        let name = agent.short();
        let spawned = std::thread::Builder::new()
            .name(format!("fill-{name}"))
            .spawn(move || {
                let _turn = turn;
                let ended = run(&fill).map_err(|e| e.to_string());
                if let Err(e) = &ended {
                    tracing::warn!("worktree {name}: {e}");
                }
                tell.send_replace(Some(ended));
            });
        if let Err(e) = spawned {
            let (_, end) = watch::channel(Some(Err(format!("cannot start writing them: {e}"))));
            crate::sync::lock(&self.fills).insert(agent, Filling { end, kept });
        }
    }

    /// Waits until `agent`'s worktree holds all its files: at once, unless it is being
    /// filled behind its first call. `Err` when they could not all be written (then for
    /// good: its calls must not run in a half-written tree).
    pub async fn ready(&self, agent: AgentId) -> Result<(), IsolationError> {
        let Some(mut end) = crate::sync::lock(&self.fills)
            .get(&agent)
            .map(|f| f.end.clone())
        else {
            return Ok(());
        };
        // Bound by the fill's thread: it sends its end, or drops the sender if it dies.
        let ended = end.wait_for(Option::is_some).await.map(|e| e.clone());
        match ended {
            Ok(Some(Ok(()))) => {
                let mut fills = crate::sync::lock(&self.fills);
                if fills.get(&agent).is_some_and(|f| f.end.same_channel(&end)) {
                    fills.remove(&agent);
                }
                Ok(())
            }
            Ok(Some(Err(e))) => Err(IsolationError::Unwritten(e)),
            Ok(None) | Err(_) => Err(IsolationError::Unwritten(
                "the writing stopped before it ended".to_string(),
            )),
        }
    }

    /// Why `agent`'s worktree cannot be used: its fill failed. `None` while it runs, once
    /// it is done, or without one.
    pub fn unwritten(&self, agent: AgentId) -> Option<String> {
        let fills = crate::sync::lock(&self.fills);
        let ended = fills.get(&agent)?.end.borrow().clone();
        ended?.err()
    }

    /// The paths `agent`'s first call may write while its worktree is still being filled.
    fn filling(&self, agent: AgentId) -> Option<Arc<[String]>> {
        let fills = crate::sync::lock(&self.fills);
        let f = fills.get(&agent)?;
        f.end.borrow().is_none().then(|| f.kept.clone())
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
        // The process must not end while a fill's git still writes.
        let running: Vec<_> = crate::sync::lock(&self.fills)
            .values()
            .map(|f| f.end.clone())
            .collect();
        for mut end in running {
            let _ = end.wait_for(Option::is_some).await;
        }
        let Some(spare) = crate::sync::lock(&self.spares.ready).take() else {
            return Ok(());
        };
        let repo = self.repo.clone();
        blocking(move || spare.remove(&repo.top)).await
    }

    /// Takes back the worktree an earlier run of this session made for `agent` (resume).
    /// A fill a crash cut short is run again, behind (see [`Worktrees::ready`]): every
    /// file written anew but those its first call may have written. One whose making a
    /// crash cut short is taken down, so the worker's next write makes it anew.
    pub fn reopen(&self, agent: AgentId) -> Option<PathBuf> {
        let name = agent.short();
        let Some(wt) = Worktree::reopen(&self.repo, &self.session.dir, &name) else {
            if let Err(e) = Worktree::discard_unmade(&self.repo, &self.session.dir, &name) {
                tracing::warn!("worktree {name}, cut off while being made: {e}");
            }
            return None;
        };
        let root = wt.root.clone();
        match wt.unfinished_fill() {
            Ok(None) => {}
            Ok(Some(fill)) => {
                let turn = self.checkouts.clone().try_acquire_owned().ok();
                self.start_fill(agent, fill, turn, Fill::resume);
            }
            Err(e) => {
                let (_, end) = watch::channel(Some(Err(e.to_string())));
                let kept = Arc::from(Vec::new());
                crate::sync::lock(&self.fills).insert(agent, Filling { end, kept });
            }
        }
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

    /// The seal of `agent`'s worktree, if it has one.
    pub fn seal(&self, agent: AgentId) -> Option<super::Seal> {
        let wt = self.get(agent).ok()?;
        Some(crate::sync::lock(&wt).seal.clone())
    }

    /// The worker's change in figures (`+12 −3`). While its worktree is being filled, of
    /// the paths its first call may write (the only ones that can differ then), without
    /// waiting: the first call's result is not held up.
    pub async fn diff(&self, agent: AgentId) -> Result<DiffSummary, IsolationError> {
        let (wt, scratch) = (self.get(agent)?, self.session.scratch.clone());
        if let Some(kept) = self.filling(agent) {
            return blocking(move || diff::summary_of(&crate::sync::lock(&wt), &scratch, &kept))
                .await;
        }
        self.ready(agent).await?;
        blocking(move || diff::summary(&crate::sync::lock(&wt), &scratch)).await
    }

    /// The worker's change as a unified diff.
    pub async fn diff_text(&self, agent: AgentId) -> Result<String, IsolationError> {
        self.ready(agent).await?;
        let (wt, scratch) = (self.get(agent)?, self.session.scratch.clone());
        blocking(move || diff::text(&crate::sync::lock(&wt), &scratch)).await
    }

    /// Queues the worker's change for merging into the workspace and waits for its turn
    /// (merges run one at a time, in the order they were queued).
    pub async fn merge(&self, agent: AgentId) -> Result<MergeOutcome, IsolationError> {
        self.ready(agent).await?;
        let (wt, repo, scratch) = self.parts(agent)?;
        let bases = self.bases.clone();
        self.queue
            .run(move || {
                let merged =
                    merge::merge_into_workspace(&repo, &mut crate::sync::lock(&wt), &scratch);
                // The workspace changed: workers spawned from now on get a new base.
                if matches!(&merged, Ok(MergeOutcome::Merged { files, .. }) if !files.is_empty()) {
                    bases.changed();
                }
                merged
            })
            .await?
    }

    /// Takes a merged change back out of the workspace, in the merge queue.
    pub async fn unmerge(
        &self,
        record: super::MergeRecord,
        force: bool,
    ) -> Result<super::UnmergeOutcome, IsolationError> {
        let (repo, scratch) = (self.repo.clone(), self.session.scratch.clone());
        let bases = self.bases.clone();
        self.queue
            .run(move || {
                let undone = super::unmerge(&repo, &record, &scratch, force);
                if matches!(&undone, Ok(super::UnmergeOutcome::Undone { .. })) {
                    bases.changed();
                }
                undone
            })
            .await?
    }

    /// Moves the worker's worktree onto the workspace's current state; the files it
    /// returns hold conflict markers (in the worktree only) for the worker to settle.
    pub async fn redo(&self, agent: AgentId) -> Result<Vec<Conflict>, IsolationError> {
        self.ready(agent).await?;
        let (wt, repo, scratch) = self.parts(agent)?;
        self.queue
            .run(move || redo::redo_on_current(&repo, &mut crate::sync::lock(&wt), &scratch))
            .await?
    }

    /// The commit `agent`'s worktree is measured from: the base it was made from, moved by
    /// a merge or a redo. `None` when it has no worktree.
    pub fn base_of(&self, agent: AgentId) -> Option<String> {
        let wt = self.get(agent).ok()?;
        Some(crate::sync::lock(&wt).base.clone())
    }

    /// A clean checkout of `commit` beside the workers' worktrees, to run the tests at a
    /// worker's base. Reads only the repository: outside the merge queue, and counted
    /// among the checkouts at once.
    pub async fn check_out_base(&self, commit: &str) -> Result<BaseCheckout, IsolationError> {
        let _turn = self
            .checkouts
            .acquire()
            .await
            .map_err(|e| IsolationError::Stopped(e.to_string()))?;
        let (repo, session, commit) = (self.repo.clone(), self.session.clone(), commit.to_string());
        blocking(move || BaseCheckout::create(&repo, &session.dir, &commit)).await
    }

    /// Removes a checkout [`Worktrees::check_out_base`] made.
    pub async fn remove_base(&self, checkout: BaseCheckout) -> Result<(), IsolationError> {
        let repo = self.repo.clone();
        blocking(move || checkout.remove(&repo.top)).await
    }

    /// Commits the worker's change onto its branch `squad/<short id>` (its files stay as
    /// they are), so that it outlives the worktree; `why` goes in the commit's message.
    /// False when it changed nothing.
    pub async fn keep(&self, agent: AgentId, why: String) -> Result<bool, IsolationError> {
        self.ready(agent).await?;
        let (wt, scratch) = (self.get(agent)?, self.session.scratch.clone());
        blocking(move || keep::keep_in_worktree(&crate::sync::lock(&wt), &scratch, &why)).await
    }

    /// Merges the change kept on `branch` (its worktree is gone) into the workspace, in
    /// the merge queue; the branch goes once merged. `None`: there is no such branch.
    pub async fn merge_kept(&self, branch: String) -> Result<Option<MergeOutcome>, IsolationError> {
        let (repo, scratch) = (self.repo.clone(), self.session.scratch.clone());
        let bases = self.bases.clone();
        self.queue
            .run(move || {
                let merged = keep::merge_kept(&repo, &branch, &scratch);
                if matches!(&merged, Ok(Some(MergeOutcome::Merged { files, .. })) if !files.is_empty()) {
                    bases.changed();
                }
                merged
            })
            .await?
    }

    /// Whether `branch` holds a kept change (see [`Worktrees::keep`]).
    pub async fn holds_kept(&self, branch: String) -> bool {
        let repo = self.repo.clone();
        blocking(move || keep::kept(&repo.top, &branch))
            .await
            .is_ok_and(|k| k.is_some())
    }

    /// Removes the worker's worktree; its branch too, unless `keep_branch` (it holds the
    /// worker's unmerged change, see [`Worktrees::keep`]). False when it had none.
    pub async fn remove_keeping(
        &self,
        agent: AgentId,
        keep_branch: bool,
    ) -> Result<bool, IsolationError> {
        // Not under a fill's git; a worktree that could not be filled goes all the same.
        let _ = self.ready(agent).await;
        crate::sync::lock(&self.fills).remove(&agent);
        let Some(wt) = crate::sync::lock(&self.by_agent).remove(&agent) else {
            return Ok(false);
        };
        let (repo, kept) = (self.repo.clone(), wt.clone());
        let removed = blocking(move || {
            let wt = crate::sync::lock(&wt);
            if keep_branch {
                wt.remove_keeping_branch(&repo.top)
            } else {
                wt.remove(&repo.top)
            }
        })
        .await;
        if let Err(e) = removed {
            // Still there (a worktree whose metadata a worker changed is kept): still known.
            crate::sync::lock(&self.by_agent).insert(agent, kept);
            return Err(e);
        }
        Ok(true)
    }

    /// Removes the worker's worktree and branch (its change was merged or discarded).
    /// False when it had none.
    pub async fn remove(&self, agent: AgentId) -> Result<bool, IsolationError> {
        self.remove_keeping(agent, false).await
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

/// Runs git work off the async threads.
async fn blocking<T: Send + 'static>(
    job: impl FnOnce() -> Result<T, IsolationError> + Send + 'static,
) -> Result<T, IsolationError> {
    tokio::task::spawn_blocking(job)
        .await
        .map_err(|e| IsolationError::Stopped(e.to_string()))?
}
