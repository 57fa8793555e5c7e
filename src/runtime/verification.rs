//! When and against what a worker's result is checked: the workspace as it was when the
//! worker took its task (a snapshot), the files its own calls changed since, and the
//! attempt it is on. The rules themselves live in `crate::verify`.

mod reviewer;

pub use reviewer::Start;

use super::engine::Engine;
use crate::protocol::{AgentId, AgentResult, ApprovalAction, ResultStatus, Severity, Verdict};
use crate::sync::lock;
use crate::verify::{self, Evidence, Snapshot};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// A snapshot is reused by workers starting within this long of it, if no agent has
/// changed a file since: a thousand workers spawned at once share one walk of the tree.
const REUSE_FOR: Duration = Duration::from_secs(2);

/// Per-worker verification state, and the shared latest snapshot.
#[derive(Default)]
pub struct Checks {
    tasks: Mutex<HashMap<AgentId, Task>>,
    /// Bumped around every mutating tool call, so a cached snapshot is known stale.
    generation: AtomicU64,
    latest: tokio::sync::Mutex<Option<Cached>>,
    /// Agents started to review a result: their own results are not checked (a review of
    /// a review would never end).
    reviewers: Mutex<HashSet<AgentId>>,
}

struct Cached {
    /// The tree it walked (the workspace, or a worker's worktree).
    root: std::path::PathBuf,
    generation: u64,
    at: Instant,
    snapshot: Arc<Snapshot>,
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
}

impl Checks {
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
        tasks.insert(
            agent,
            Task {
                text: text.to_string(),
                start: Some(start),
                touched: BTreeSet::new(),
                attempts,
                closed: false,
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
        });
        task.attempts = attempts;
        task.closed = closed;
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

/// Runs a mutating call of `agent` and records which files it changed, if the agent's
/// result will be checked: file tools name their file; anything else (a command) is
/// measured by a snapshot before and after. Any mutating call makes cached snapshots stale.
pub async fn record_changes<T>(
    engine: &Engine,
    agent: AgentId,
    action: Option<&ApprovalAction>,
    call: impl Future<Output = T>,
) -> T {
    let tracked = engine.checks.is_tracked(agent);
    let workspace = engine.workspace_for(agent);
    let root = workspace.root();
    let rel = |path: &String| workspace.resolve(path).ok().map(|p| workspace.relative(&p));
    let named: Option<Vec<String>> = match action {
        Some(ApprovalAction::FileChange { path, .. }) => rel(path).map(|p| vec![p]),
        Some(ApprovalAction::Patch { paths, .. }) => Some(paths.iter().filter_map(rel).collect()),
        _ => None,
    };
    let before = match (tracked, &named) {
        (true, None) => Some(take(root).await),
        _ => None,
    };
    engine.checks.files_may_change();
    let out = call.await;
    engine.checks.files_may_change();
    if tracked {
        match (named, before) {
            (Some(paths), _) => engine.checks.touch(agent, paths),
            (None, Some(before)) => {
                let after = take(root).await;
                engine
                    .checks
                    .touch(agent, before.changes_to(&after).paths());
            }
            (None, None) => {}
        }
    }
    out
}

/// Walks the tree off the async threads.
pub async fn take(root: &Path) -> Snapshot {
    let root = root.to_path_buf();
    tokio::task::spawn_blocking(move || Snapshot::take(&root))
        .await
        .unwrap_or_default()
}

/// What became of a returned result.
pub enum Checked {
    /// Not checked (verification off, an honest failure, or no task on record).
    Unchecked,
    /// Passed, or out of corrections: deliver with this verdict attached.
    Deliver(Verdict),
    /// Not passed: the worker gets this correction and the result waits.
    Correct { verdict: Verdict, message: String },
}

/// Checks `result` of `agent` against the workspace and decides what happens to it.
pub async fn check(
    engine: &Engine,
    start_agent: Start<'_>,
    agent: AgentId,
    result: &AgentResult,
    cancel: &CancellationToken,
) -> Checked {
    let Some(role_name) = engine.team.role(agent) else {
        return Checked::Unchecked;
    };
    if engine.checks.is_reviewer(agent) {
        return Checked::Unchecked;
    }
    let role = engine.role(&role_name);
    if !enabled(engine, role.and_then(|r| r.verify)) || result.status == ResultStatus::Failure {
        engine.checks.close(agent);
        return Checked::Unchecked;
    }
    let (text, start, touched, attempt) = {
        let mut tasks = lock(&engine.checks.tasks);
        let Some(task) = tasks.get_mut(&agent).filter(|t| !t.closed) else {
            return Checked::Unchecked;
        };
        let Some(start) = task.start.clone() else {
            return Checked::Unchecked;
        };
        task.attempts += 1;
        (
            task.text.clone(),
            start,
            task.touched.clone(),
            task.attempts,
        )
    };
    let workspace = engine.workspace_for(agent);
    let root = workspace.root();
    // Only files its own calls touched can be its changes: a worker that touched none
    // needs no second walk of the tree.
    let own: BTreeSet<String> = if touched.is_empty() {
        BTreeSet::new()
    } else {
        start
            .changes_to(&take(root).await)
            .paths()
            .intersection(&touched)
            .cloned()
            .collect()
    };
    let mut findings = verify::check_result(
        result,
        &Evidence {
            root,
            start: &start,
            own_changes: &own,
        },
    );
    let ctx = engine.tool_context(agent, &role_name, cancel);
    let timeout = ctx.settings.command_timeout;
    if !own.is_empty()
        && let Some(test) = ctx.settings.test_command.clone()
        && let Some(f) = verify::run_rule(&ctx, "tests", Severity::Error, &test, timeout).await
    {
        findings.push(f);
    }
    let role_rules = role.map(|r| r.verify_rules.as_slice()).unwrap_or_default();
    for rule in engine.config.verify.rules.iter().chain(role_rules) {
        if verify::applies(rule, &own)
            && let Some(f) =
                verify::run_rule(&ctx, &rule.id, rule.severity, &rule.command, timeout).await
        {
            findings.push(f);
        }
    }
    // The reviewer costs a model run: only a result the rules let through gets one.
    if let Some(reviewer) = &engine.config.verify.reviewer
        && !findings.iter().any(|f| f.severity == Severity::Error)
    {
        let review = reviewer::Review {
            worker: agent,
            role: reviewer,
            task: &text,
            result,
            changed: &own,
        };
        findings.extend(reviewer::review(engine, start_agent, review, cancel).await);
    }
    let max = engine.config.verify.max_corrections;
    let verdict = Verdict::of(attempt, max, findings);
    if verdict.passed || attempt > max {
        engine.checks.close(agent);
        return Checked::Deliver(verdict);
    }
    let message = verify::correction_message(&text, &verdict, attempt, max);
    Checked::Correct { verdict, message }
}

fn enabled(engine: &Engine, role_says: Option<bool>) -> bool {
    role_says.unwrap_or(engine.config.verify.enabled)
}

/// Whether results of an agent of `role` are checked at all (no snapshot is taken
/// otherwise). A reviewer's never are.
pub fn enabled_for(engine: &Engine, agent: AgentId, role: &str) -> bool {
    !engine.checks.is_reviewer(agent) && enabled(engine, engine.role(role).and_then(|r| r.verify))
}
