//! Where each agent writes, as the runtime applies `crate::isolation`: a writing worker
//! gets its own git worktree at its first call that may change files and its tools are
//! rooted there from then on (when that call names the only files it writes, the rest of
//! the tree is written behind it, and every other use waits for that); the agents below it
//! share that worktree; everyone else works in the workspace, where
//! workers' writes are leased (`isolation/leases.rs`). When a worker's result goes up its
//! change is merged (`isolation/merge.rs`); before a follow-up its worktree is moved onto
//! the workspace's current state; when it is despawned, released or the session ends its
//! worktree goes.
//!
//! Each worker has one base, the workspace as it was when it was spawned (`base.rs`): it
//! reads from it until it writes, its worktree is made from it, and it merges from it.
//!
//! It knows the team, never the engine: `spawn_agent` calls `base_for_spawn` and
//! `give_base`; the isolation layer (`layers/isolation.rs`) calls
//! [`WorkerIsolation::before_task`] (a worker's message), `before_read` (a call that only
//! reads), `before_change`, `claim_write` and `after_mutation` (around a call whose handler
//! may change files), `wait_for_files` and `unwritten` (before any call, and a task),
//! `settle` (its turns ended) and `clean_up` (despawn, release); the hook layer calls
//! `wait_for_files` too; the session calls `open`, `close` (shutdown) and `diff_text`
//! (`Op::ShowDiff`).

use crate::config::IsolationMode;
use crate::isolation::{Base, ChangeKind, Isolation, Leases, Removed, Worktrees};
use crate::protocol::{AgentId, DiffStat, EventKind, MergeState};
use crate::roles::RoleSet;
use crate::runtime::team::Team;
use crate::workspace::Workspace;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The session's isolation: which agents have a worktree, and the leases on the shared
/// workspace.
pub struct WorkerIsolation {
    pub(super) worktrees: Option<Arc<Worktrees>>,
    pub(super) leases: Arc<Leases>,
    /// `[team] isolation`.
    pub(super) default_mode: IsolationMode,
    /// Each role's own `isolation`, where it sets one.
    pub(super) role_modes: HashMap<String, IsolationMode>,
    /// Agents with a worktree of their own.
    pub(super) own: Mutex<HashMap<AgentId, Place>>,
    /// `spawn_agent`'s `isolation`, by worker.
    pub(super) chosen: Mutex<HashMap<AgentId, IsolationMode>>,
    /// The base of each worker that has none of the above yet (see `base.rs`).
    pub(super) bases: Mutex<HashMap<AgentId, Arc<Base>>>,
    /// The session is ending: agents stopping now are not despawned.
    pub(super) closing: AtomicBool,
    /// A spare worktree has been asked for (after the first worker's).
    pub(super) warming: AtomicBool,
    /// Owners already told that their worktree's files could not all be written.
    pub(super) told_unwritten: Mutex<HashSet<AgentId>>,
    /// The verdict of each worker's latest checked result (`kept.rs` reads it).
    pub(super) verdicts: Mutex<HashMap<AgentId, crate::protocol::Verdict>>,
    /// The session's board, whose leases a merge conflict names (`tasks/leases.rs`).
    pub board: std::sync::OnceLock<Arc<crate::runtime::tasks::TaskBoard>>,
}

/// An agent's own worktree.
pub(super) struct Place {
    workspace: Arc<Workspace>,
    /// Where its change stands (`None`: nothing changed since its start or last merge).
    state: Option<MergeState>,
    /// Its result went up since its last task began: the next task starts from the
    /// workspace's current state.
    pub(super) settled: bool,
}

impl WorkerIsolation {
    /// Sets up isolation for a session on `workspace`: worktrees under `<data>/worktrees`
    /// when the config asks for them and the workspace is in a git repository, shared
    /// with leases otherwise (also without a data dir). Removes the worktrees of sessions
    /// that no longer run; returns them for the front ends.
    pub fn open(
        mode: IsolationMode,
        roles: &RoleSet,
        workspace: &Path,
        data: Option<&Path>,
        session: &str,
    ) -> (Self, Vec<Removed>) {
        let (isolation, removed) = match data {
            Some(data) => {
                let started = crate::isolation::start(mode, workspace, data, session);
                (started.isolation, started.removed)
            }
            None => (
                Isolation::Shared {
                    leases: Arc::new(Leases::new()),
                    why: (mode == IsolationMode::Worktree)
                        .then(|| "the session keeps no data dir".to_string()),
                },
                Vec::new(),
            ),
        };
        let (worktrees, leases) = match isolation {
            Isolation::Worktrees(w) => (Some(w), Arc::new(Leases::new())),
            Isolation::Shared { leases, why } => {
                if let Some(why) = why {
                    tracing::info!("workers share the workspace: {why}");
                }
                (None, leases)
            }
        };
        let me = Self {
            worktrees,
            leases,
            default_mode: mode,
            role_modes: roles
                .iter()
                .filter_map(|r| Some((r.name.clone(), r.isolation?)))
                .collect(),
            own: Mutex::new(HashMap::new()),
            chosen: Mutex::new(HashMap::new()),
            bases: Mutex::new(HashMap::new()),
            closing: AtomicBool::new(false),
            warming: AtomicBool::new(false),
            told_unwritten: Mutex::new(HashSet::new()),
            verdicts: Mutex::new(HashMap::new()),
            board: std::sync::OnceLock::new(),
        };
        (me, removed)
    }

    /// `spawn_agent`'s `isolation` for `agent`.
    pub fn choose(&self, agent: AgentId, mode: IsolationMode) {
        crate::sync::lock(&self.chosen).insert(agent, mode);
    }

    /// The workspace `agent`'s tools are confined to: its own worktree, else the nearest
    /// supervisor's, else the session's workspace.
    pub fn workspace_for(
        &self,
        team: &Team,
        agent: AgentId,
        shared: &Arc<Workspace>,
    ) -> Arc<Workspace> {
        self.isolated_root(team, agent)
            .unwrap_or_else(|| shared.clone())
    }

    /// The worktree `agent` works in, its own or a supervisor's.
    pub(super) fn isolated_root(&self, team: &Team, agent: AgentId) -> Option<Arc<Workspace>> {
        let owner = self.owner(team, agent)?;
        crate::sync::lock(&self.own)
            .get(&owner)
            .map(|p| p.workspace.clone())
    }

    /// `agent`, or the nearest supervisor above it, with a worktree of its own.
    pub(super) fn owner(&self, team: &Team, agent: AgentId) -> Option<AgentId> {
        let own = crate::sync::lock(&self.own);
        if own.is_empty() {
            return None;
        }
        let mut next = Some(agent);
        while let Some(id) = next {
            if own.contains_key(&id) {
                return Some(id);
            }
            next = team.parent(id);
        }
        None
    }

    /// What git writes for a commit in the worktree `agent` works in (its own or its
    /// supervisor's), for its sandbox: never the user's checkout. Empty outside worktrees.
    pub fn git_writable(&self, team: &Team, agent: AgentId) -> Vec<std::path::PathBuf> {
        match (self.worktrees.as_ref(), self.owner(team, agent)) {
            (Some(w), Some(owner)) => w.git_writable(owner),
            _ => Vec::new(),
        }
    }

    /// The seal of the worktree `agent` works in (its own or its supervisor's): how squad
    /// runs git there. `None` outside worktrees.
    pub fn seal(&self, team: &Team, agent: AgentId) -> Option<crate::isolation::Seal> {
        self.worktrees.as_ref()?.seal(self.owner(team, agent)?)
    }

    /// The session's worktrees and the base commit of the worktree `agent` works in (its
    /// own or a supervisor's): where its tests are run to learn what already failed before
    /// it started. `None` outside a worktree.
    pub fn tests_base(&self, team: &Team, agent: AgentId) -> Option<(Arc<Worktrees>, String)> {
        let worktrees = self.worktrees.clone()?;
        let commit = worktrees.base_of(self.owner(team, agent)?)?;
        Some((worktrees, commit))
    }

    /// Whether `agent` has a worktree of its own.
    pub fn has_own(&self, agent: AgentId) -> bool {
        crate::sync::lock(&self.own).contains_key(&agent)
    }

    pub(super) fn set_state(&self, agent: AgentId, state: Option<MergeState>) {
        if let Some(p) = crate::sync::lock(&self.own).get_mut(&agent) {
            p.state = state;
        }
    }

    pub(super) fn state(&self, agent: AgentId) -> Option<MergeState> {
        crate::sync::lock(&self.own)
            .get(&agent)
            .and_then(|p| p.state)
    }

    /// Takes back, on resume, the worktree an earlier run of the session made for a
    /// restored worker. Its next task starts from the workspace's current state; until
    /// then its change counts as unmerged (it was kept because it might be).
    pub fn reopen(&self, agent: AgentId) {
        let Some(root) = self.worktrees.as_ref().and_then(|w| w.reopen(agent)) else {
            return;
        };
        match Workspace::new(&root) {
            Ok(ws) => {
                self.insert(agent, ws, true);
                self.set_state(agent, Some(MergeState::Pending));
            }
            Err(e) => tracing::warn!("worktree {} of {agent} is unusable: {e}", root.display()),
        }
    }

    pub(super) fn insert(&self, agent: AgentId, workspace: Workspace, settled: bool) {
        crate::sync::lock(&self.own).insert(
            agent,
            Place {
                workspace: Arc::new(workspace),
                state: None,
                settled,
            },
        );
    }

    /// Whether a worker of `role` that is about to change files does so in a worktree of
    /// its own (its spawn's `isolation`, else its role's, else the session's).
    pub(super) fn wants_worktree(&self, agent: AgentId, role: &str) -> bool {
        let mode = crate::sync::lock(&self.chosen)
            .get(&agent)
            .copied()
            .or_else(|| self.role_modes.get(role).copied())
            .unwrap_or(self.default_mode);
        mode == IsolationMode::Worktree
    }

    /// The session is ending: agents that stop from now on keep their worktrees.
    pub fn begin_closing(&self) {
        self.closing.store(true, Ordering::Relaxed);
    }

    pub fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Relaxed)
    }
}

/// Tells the front ends about worktrees of ended sessions removed at start.
pub fn announce(team: &Team, removed: &[Removed]) {
    for r in removed.iter().filter(|r| r.problem.is_some()) {
        tracing::warn!(
            "stale worktree {}: {}",
            r.path.display(),
            r.problem.as_deref().unwrap_or_default()
        );
    }
    if !removed.is_empty() {
        team.emit(
            team.root(),
            EventKind::StaleWorktreesRemoved {
                worktrees: removed.iter().map(|r| r.path.clone()).collect(),
                kept_branches: removed
                    .iter()
                    .filter(|r| r.kept)
                    .map(|r| r.branch.clone())
                    .collect(),
            },
        );
    }
}

impl WorkerIsolation {
    /// Before a worker takes up a message that starts a task: one whose result already
    /// went up is moved onto the workspace's current state first. Returns a note for the
    /// message when that left conflict markers in its worktree.
    pub async fn before_task(&self, team: &Team, agent: AgentId) -> Option<String> {
        let worktrees = self.worktrees.as_ref()?;
        self.base_for_task(team, agent).await;
        let settled = crate::sync::lock(&self.own)
            .get_mut(&agent)
            .map(|p| std::mem::take(&mut p.settled));
        match settled {
            Some(true) => self.redo(team, worktrees, agent).await,
            Some(false) | None => None,
        }
    }

    /// Before a call that may change files: a worker gets its worktree now (made from the
    /// workspace as it is), unless it has one, a supervisor's isolates it, or it writes in
    /// the workspace. The persona always writes in the workspace. `writes`: the only paths
    /// the call writes, when its handler can tell. True when the worktree was made for this
    /// call and is being filled behind it: the call may run at once (its files are there);
    /// anything else waits for [`WorkerIsolation::wait_for_files`].
    pub async fn before_change(
        &self,
        team: &Team,
        agent: AgentId,
        writes: Option<&[String]>,
    ) -> bool {
        let Some(worktrees) = self.worktrees.as_ref() else {
            return false;
        };
        if agent == team.root() || self.isolated_root(team, agent).is_some() {
            return false;
        }
        let Some(role) = team.role(agent) else {
            return false;
        };
        if !self.wants_worktree(agent, &role) {
            return false;
        }
        self.create(team, worktrees, agent, writes).await
    }

    /// Gives a writing worker its worktree; true when it is filled behind this call.
    pub(super) async fn create(
        &self,
        team: &Team,
        worktrees: &Arc<Worktrees>,
        agent: AgentId,
        writes: Option<&[String]>,
    ) -> bool {
        let made = worktrees
            .create_for(agent, writes, self.base_of(agent))
            .await
            .map_err(|e| e.to_string())
            .and_then(|(root, early)| {
                Workspace::new(&root)
                    .map(|ws| (ws, early))
                    .map_err(|e| e.to_string())
            });
        match made {
            Ok((ws, early)) => {
                let path = ws.root().to_path_buf();
                self.insert(agent, ws, false);
                // The worktree holds it from now on.
                self.forget_base(agent);
                team.emit(
                    agent,
                    EventKind::WorktreeCreated {
                        path,
                        branch: branch_of(agent),
                    },
                );
                // The next writer's worktree comes from a spare made meanwhile, once this
                // one is filled: both at once would share the disk the worker waits on.
                if !self.warming.swap(true, Ordering::Relaxed) {
                    let worktrees = worktrees.clone();
                    tokio::spawn(async move {
                        let _ = worktrees.ready(agent).await;
                        worktrees.warm().await;
                    });
                }
                early
            }
            Err(e) => {
                team.emit(
                    agent,
                    EventKind::Error {
                        message: format!(
                            "no worktree for this worker ({e}); it writes in the workspace itself"
                        ),
                    },
                );
                false
            }
        }
    }

    /// Before anything reads or writes the files of the worktree `agent` works in (its
    /// own or its supervisor's): waits until they are all there. A worktree made at its
    /// worker's first write is written behind that call, and a `read_file`, a command, a
    /// hook or a snapshot must not see it half written. At once without a worktree (no git
    /// process). When its files could not all be written the owner hears it once, as an
    /// error event; its calls are then refused ([`WorkerIsolation::unwritten`]).
    pub async fn wait_for_files(&self, team: &Team, agent: AgentId) {
        let (Some(worktrees), Some(owner)) = (self.worktrees.as_ref(), self.owner(team, agent))
        else {
            return;
        };
        if let Err(e) = worktrees.ready(owner).await
            && crate::sync::lock(&self.told_unwritten).insert(owner)
        {
            team.emit(
                owner,
                EventKind::Error {
                    message: format!(
                        "{e}; the worker's calls that use its worktree are refused from now on"
                    ),
                },
            );
        }
    }

    /// Why a call of `agent` may not run: the files of the worktree it works in could not
    /// all be written, and a command or an edit there would act on a half-written tree.
    pub fn unwritten(&self, team: &Team, agent: AgentId) -> Option<String> {
        let owner = self.owner(team, agent)?;
        let why = self.worktrees.as_ref()?.unwritten(owner)?;
        Some(format!(
            "not run: your worktree is incomplete (its files could not all be written: {why}), \
             so nothing can be read, changed or run in it. Return your result with status \
             failure and say so; your supervisor decides what happens next."
        ))
    }

    /// Moves a worker's worktree onto the workspace's current state, its change on top.
    pub(super) async fn redo(
        &self,
        team: &Team,
        worktrees: &Worktrees,
        agent: AgentId,
    ) -> Option<String> {
        let conflicts = match worktrees.redo(agent).await {
            Ok(c) => c,
            Err(e) => {
                team.emit(
                    agent,
                    EventKind::Error {
                        message: format!("could not move the worktree onto the workspace: {e}"),
                    },
                );
                return None;
            }
        };
        self.after_mutation(team, agent).await;
        if conflicts.is_empty() {
            return None;
        }
        let files: Vec<String> = conflicts.iter().map(|c| c.path.clone()).collect();
        Some(format!(
            "[squad] Your change could not be merged into the workspace. Your worktree now holds \
             the workspace's current state with your change on top; these files have conflict \
             markers (`<<<<<<< workspace (current)` … `>>>>>>> your change`) for you to settle: {}. \
             Keep what both sides need, remove the markers, then return your result again.",
            files.join(", ")
        ))
    }

    /// After a mutating call of an agent in a worktree: the size of the change of the
    /// worker that owns the worktree, for the tree.
    pub async fn after_mutation(&self, team: &Team, agent: AgentId) {
        let Some(worktrees) = self.worktrees.as_ref() else {
            return;
        };
        let Some(agent) = self.owner(team, agent) else {
            // A write in the workspace itself: workers spawned from now on get a new base.
            worktrees.workspace_changed();
            return;
        };
        match worktrees.diff(agent).await {
            Ok(d) => {
                let stat = DiffStat {
                    files: d.files.len() as u64,
                    added: d.added(),
                    removed: d.removed(),
                };
                self.set_state(agent, (!stat.is_empty()).then_some(MergeState::Pending));
                team.emit(agent, EventKind::DiffStat(stat));
            }
            Err(e) => tracing::warn!("diff of {agent}: {e}"),
        }
    }

    /// What `agent` has changed in its own worktree (against its base), by path relative
    /// to its root (the workspace's folder; changes above it are left out); empty without
    /// one or when it cannot be read.
    pub async fn changed_so_far(&self, agent: AgentId) -> Vec<(String, ChangeKind)> {
        match self.own_change(agent).await {
            Some(Ok(diff)) => diff.files.into_iter().map(|f| (f.path, f.kind)).collect(),
            Some(Err(e)) => {
                tracing::warn!("diff of {agent}: {e}");
                Vec::new()
            }
            None => Vec::new(),
        }
    }

    /// What `agent` changed in its own worktree: git's diff of it against its base
    /// (untracked files and what its commands did included), with paths relative to its
    /// root (the workspace's folder; changes above it are left out). `None` when it has no
    /// worktree of its own, for verification to measure its change on disk instead.
    pub async fn own_change(
        &self,
        agent: AgentId,
    ) -> Option<Result<crate::isolation::DiffSummary, crate::isolation::IsolationError>> {
        let worktrees = self.worktrees.as_ref().filter(|_| self.has_own(agent))?;
        let prefix = worktrees.repo().prefix.clone();
        Some(worktrees.diff(agent).await.map(|mut d| {
            d.files
                .retain_mut(|f| match Path::new(&f.path).strip_prefix(&prefix) {
                    Ok(rel) => {
                        f.path = crate::verify::relative(rel);
                        true
                    }
                    Err(_) => false,
                });
            d
        }))
    }

    /// `Op::ShowDiff`: the worker's change as a unified diff, for a `diff` event.
    pub async fn diff_text(&self, team: &Team, agent: AgentId) -> String {
        match self.worktrees.as_ref().filter(|_| self.has_own(agent)) {
            Some(w) => match w.diff_text(agent).await {
                Ok(t) if t.trim().is_empty() => "(no change in its worktree)".to_string(),
                Ok(t) => t,
                Err(e) => format!("(could not read its change: {e})"),
            },
            None if agent == team.root() => {
                "(the persona writes in the workspace itself: it has no worktree)".to_string()
            }
            None => "(this agent has no worktree of its own: it works in the workspace or in \
                     its supervisor's worktree)"
                .to_string(),
        }
    }

    /// A worker is gone for good (despawned, cancelled, or released after its result was
    /// delivered): its worktree is removed and its leases freed. A change not merged is
    /// kept on its branch (`kept.rs`); otherwise the branch goes too. The one clean-up,
    /// whoever lets the worker go.
    pub async fn clean_up(&self, team: &Team, agent: AgentId) {
        self.leases.release(agent);
        if !self.state(agent).is_some_and(MergeState::unmerged) {
            self.remove(team, agent, false).await;
            return;
        }
        if self.keep_gone(team, agent).await {
            self.remove(team, agent, true).await;
        }
    }

    /// Removes `agent`'s worktree, and its branch unless `kept` (it holds its change).
    pub(super) async fn remove(&self, team: &Team, agent: AgentId, kept: bool) {
        let Some(worktrees) = self.worktrees.as_ref() else {
            return;
        };
        if crate::sync::lock(&self.own).remove(&agent).is_none() {
            return;
        }
        match worktrees.remove_keeping(agent, kept).await {
            Ok(_) => team.emit(
                agent,
                EventKind::WorktreeRemoved {
                    branch: branch_of(agent),
                    discarded: false,
                    kept,
                },
            ),
            Err(e) => team.emit(
                agent,
                EventKind::Error {
                    message: format!("could not remove the worktree: {e}"),
                },
            ),
        }
    }

    /// At the end of the session: worktrees whose change is merged (or that changed
    /// nothing) go, with the spare; the others stay for a resume.
    pub async fn close(&self, team: &Team) {
        let Some(worktrees) = self.worktrees.as_ref() else {
            return;
        };
        let done: Vec<AgentId> = crate::sync::lock(&self.own)
            .iter()
            .filter(|(_, p)| !p.state.is_some_and(MergeState::unmerged))
            .map(|(id, _)| *id)
            .collect();
        for agent in done {
            self.remove(team, agent, false).await;
        }
        if let Err(e) = worktrees.close().await {
            tracing::warn!("spare worktree: {e}");
        }
    }
}

/// `squad/<short id>`, the branch of a worker's worktree.
pub(super) fn branch_of(agent: AgentId) -> String {
    format!("squad/{}", agent.short())
}
