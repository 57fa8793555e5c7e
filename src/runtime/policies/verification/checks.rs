//! What a worker's result is checked against, per worker: the workspace as it was when
//! the worker took its task (a snapshot), the files its own calls changed since, and the
//! attempt it is on. Kept by the verification layer (`layers/verification.rs`) as calls
//! run; read by `verification::check` when a result is returned.

use crate::isolation::ChangeKind;
use crate::protocol::AgentId;
use crate::roles::RoleSet;
pub use crate::runtime::agent_tools::Checked;
use crate::sync::lock;
use crate::verify::{Earlier, Snapshot, Stamp};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A snapshot is reused by workers starting within this long of it, if no agent has
/// changed a file since: a thousand workers spawned at once share one walk of the tree.
const REUSE_FOR: Duration = Duration::from_secs(2);

/// Per-worker verification state, and the shared latest snapshot.
#[derive(Default)]
pub struct Checks {
    /// `[verify] enabled`, and each role's own `verify` where it sets one.
    enabled: bool,
    role_enabled: HashMap<String, bool>,
    tasks: Mutex<HashMap<AgentId, Task>>,
    /// Bumped around every mutating tool call, so a cached snapshot is known stale.
    generation: AtomicU64,
    latest: tokio::sync::Mutex<Option<Cached>>,
    /// Agents started to review a result: their own results are not checked (a review of
    /// a review would never end).
    reviewers: Mutex<HashSet<AgentId>>,
    /// The test command's runs at workers' bases, shared by siblings.
    pub base_tests: crate::verify::BaseRuns,
}

struct Cached {
    /// The tree it walked (the workspace, or a worker's worktree).
    root: std::path::PathBuf,
    generation: u64,
    at: Instant,
    snapshot: Arc<Snapshot>,
}

/// One check of a returned result.
pub struct Attempt {
    /// The task as the worker was given it.
    pub text: String,
    pub start: Arc<Snapshot>,
    pub touched: BTreeSet<String>,
    pub number: u32,
    pub earlier: Earlier,
}

struct Task {
    text: String,
    /// `None` after a resume until the worker's next message (the old one is gone) and
    /// once the task is closed.
    start: Option<Arc<Snapshot>>,
    /// Paths this worker's own calls changed (file tools name theirs; commands are
    /// measured by a snapshot before and after).
    touched: BTreeSet<String>,
    /// Results returned for this task so far.
    attempts: u32,
    /// The result was accepted (or went up as failed verification): the next message is
    /// a new task.
    closed: bool,
    /// What its earlier tasks changed, as it left them: kept for its whole life.
    earlier: Earlier,
}

impl Checks {
    pub fn new(enabled: bool, roles: &RoleSet) -> Self {
        Self {
            enabled,
            role_enabled: roles
                .iter()
                .filter_map(|r| Some((r.name.clone(), r.verify?)))
                .collect(),
            ..Default::default()
        }
    }

    /// Whether results of a worker of `role` are checked at all (its role's `verify`,
    /// else the session's); a reviewer's never are.
    pub fn enabled_for(&self, agent: AgentId, role: &str) -> bool {
        !self.is_reviewer(agent) && self.role_enabled.get(role).copied().unwrap_or(self.enabled)
    }

    pub fn add_reviewer(&self, agent: AgentId) {
        lock(&self.reviewers).insert(agent);
    }

    pub fn is_reviewer(&self, agent: AgentId) -> bool {
        lock(&self.reviewers).contains(&agent)
    }

    /// Whether `agent`'s next message starts a new task (rather than continuing one).
    pub fn starts_task(&self, agent: AgentId) -> bool {
        lock(&self.tasks)
            .get(&agent)
            .is_none_or(|t| t.closed || t.start.is_none())
    }

    /// Records the start of a task: its text and the workspace as it is now.
    pub async fn begin(&self, agent: AgentId, text: &str, root: &Path) {
        let start = self.snapshot(root).await;
        let mut tasks = lock(&self.tasks);
        let attempts = tasks
            .get(&agent)
            .filter(|t| !t.closed)
            .map_or(0, |t| t.attempts);
        let earlier = tasks
            .get_mut(&agent)
            .map(|t| std::mem::take(&mut t.earlier))
            .unwrap_or_default();
        tasks.insert(
            agent,
            Task {
                text: text.to_string(),
                start: Some(start),
                touched: BTreeSet::new(),
                attempts,
                closed: false,
                earlier,
            },
        );
    }

    /// After a resume: the attempts a worker had made on its open task.
    pub fn restore_attempts(&self, agent: AgentId, attempts: u32, closed: bool) {
        let mut tasks = lock(&self.tasks);
        let task = tasks.entry(agent).or_insert_with(|| Task {
            text: String::new(),
            start: None,
            touched: BTreeSet::new(),
            attempts: 0,
            closed,
            earlier: Earlier::new(),
        });
        task.attempts = attempts;
        task.closed = closed;
    }

    /// A worker continued after a resume goes on with its open task: what its result is
    /// checked against is taken now (the old process's snapshot went with it), so a result
    /// it returns is still checked, never let through unchecked. `so_far`: what it had
    /// changed in its own worktree (against its base), which stays its own; outside one,
    /// only what changes from now on can be told from others' changes.
    pub async fn resume(&self, agent: AgentId, root: &Path, so_far: &[(String, ChangeKind)]) {
        let open = |tasks: &HashMap<AgentId, Task>| {
            tasks
                .get(&agent)
                .is_some_and(|t| !t.closed && t.start.is_none())
        };
        if !open(&lock(&self.tasks)) {
            return;
        }
        let before = so_far.iter().map(|(path, kind)| {
            let stamp = (*kind != ChangeKind::Added).then_some(Stamp::OTHER);
            (path.clone(), stamp)
        });
        let start = Arc::new(self.snapshot(root).await.as_before(before));
        let mut tasks = lock(&self.tasks);
        if open(&tasks)
            && let Some(task) = tasks.get_mut(&agent)
        {
            task.start = Some(start);
            task.touched
                .extend(so_far.iter().map(|(path, _)| path.clone()));
        }
    }

    pub fn is_tracked(&self, agent: AgentId) -> bool {
        lock(&self.tasks)
            .get(&agent)
            .is_some_and(|t| !t.closed && t.start.is_some())
    }

    pub fn touch(&self, agent: AgentId, paths: impl IntoIterator<Item = String>) {
        if let Some(task) = lock(&self.tasks).get_mut(&agent) {
            task.touched.extend(paths);
        }
    }

    /// A file may change now: cached snapshots are stale.
    pub fn files_may_change(&self) {
        self.generation.fetch_add(1, Ordering::Relaxed);
    }

    pub fn close(&self, agent: AgentId) {
        if let Some(task) = lock(&self.tasks).get_mut(&agent) {
            task.closed = true;
            task.start = None;
            task.touched.clear();
        }
    }

    /// A result was returned for `agent`'s open task: its next attempt, with what it is
    /// checked against (`None`: no task is open, or its snapshot is gone).
    pub fn next_attempt(&self, agent: AgentId) -> Option<Attempt> {
        let mut tasks = lock(&self.tasks);
        let task = tasks.get_mut(&agent).filter(|t| !t.closed)?;
        let start = task.start.clone()?;
        task.attempts += 1;
        Some(Attempt {
            text: task.text.clone(),
            start,
            touched: task.touched.clone(),
            number: task.attempts,
            earlier: task.earlier.clone(),
        })
    }

    /// A result of `agent` was delivered: the files it changed for it, as they are now,
    /// join what its later reports may claim.
    pub fn left(&self, agent: AgentId, files: Earlier) {
        if let Some(task) = lock(&self.tasks).get_mut(&agent) {
            task.earlier.extend(files);
        }
    }

    /// A fresh walk of the tree, or the latest one if nothing can have changed since.
    async fn snapshot(&self, root: &Path) -> Arc<Snapshot> {
        let mut latest = self.latest.lock().await;
        let generation = self.generation.load(Ordering::Relaxed);
        if let Some(c) = latest.as_ref()
            && c.generation == generation
            && c.root == root
            && c.at.elapsed() < REUSE_FOR
        {
            return c.snapshot.clone();
        }
        let snapshot = Arc::new(take(root).await);
        *latest = Some(Cached {
            root: root.to_path_buf(),
            generation,
            at: Instant::now(),
            snapshot: snapshot.clone(),
        });
        snapshot
    }
}

/// Walks the tree off the async threads.
pub async fn take(root: &Path) -> Snapshot {
    let root = root.to_path_buf();
    tokio::task::spawn_blocking(move || Snapshot::take(&root))
        .await
        .unwrap_or_default()
}
