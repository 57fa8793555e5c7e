//! A worker's base as the runtime applies it (`crate::isolation` says what a base is): fixed
//! when `spawn_agent` starts the worker (its supervisor's view: the workspace, or the base
//! of a supervisor that has not written yet), kept until the worker writes, and given to
//! its worktree. Until then the worker reads the workspace itself while the workspace is
//! still its base, and once the workspace moved on (a merge, a write by the persona, the
//! user's edits) it gets its worktree, made from its base, before its next read: what it
//! reads is what it writes against, and its merge is a three-way merge from it. A worker
//! whose result went up starts its next task on the workspace's state then.

use super::worker::WorkerIsolation;
use crate::config::IsolationMode;
use crate::isolation::Base;
use crate::protocol::AgentId;
use crate::runtime::team::Team;
use std::sync::Arc;

impl WorkerIsolation {
    /// The base of a worker of `role` that `caller` is about to spawn (`mode`: the spawn's
    /// own `isolation`). `None` when it will not have a worktree of its own: outside git,
    /// not isolated, or under a supervisor whose worktree it shares.
    pub async fn base_for_spawn(
        &self,
        team: &Team,
        caller: AgentId,
        role: &str,
        mode: Option<IsolationMode>,
    ) -> Option<Arc<Base>> {
        let worktrees = self.worktrees.as_ref()?;
        let mode = mode
            .or_else(|| self.role_modes.get(role).copied())
            .unwrap_or(self.default_mode);
        if mode != IsolationMode::Worktree || self.owner(team, caller).is_some() {
            return None;
        }
        if let Some(base) = self.base_of(caller) {
            return Some(base);
        }
        match worktrees.base().await {
            Ok(base) => Some(base),
            Err(e) => {
                // Without one the worker's worktree is made from the workspace at its
                // first write, as before bases.
                tracing::warn!("no base for a worker spawned by {caller}: {e}");
                None
            }
        }
    }

    /// `agent` starts from `base`.
    pub fn give_base(&self, agent: AgentId, base: Arc<Base>) {
        crate::sync::lock(&self.bases).insert(agent, base);
    }

    pub(super) fn base_of(&self, agent: AgentId) -> Option<Arc<Base>> {
        crate::sync::lock(&self.bases).get(&agent).cloned()
    }

    /// Before a call that only reads, by a worker that has not written yet: once the
    /// workspace is no longer its base, the worker gets its worktree (made from its base)
    /// and reads there. While it still is, nothing: no git process.
    pub async fn before_read(&self, team: &Team, agent: AgentId) {
        let (Some(worktrees), Some(base)) = (self.worktrees.as_ref(), self.base_of(agent)) else {
            return;
        };
        if self.owner(team, agent).is_some() || worktrees.still(&base).await {
            return;
        }
        self.create(team, worktrees, agent, None).await;
    }

    /// A worker without a worktree takes up a task: one whose result went up (its base
    /// was let go) starts from the workspace's state now.
    pub(super) async fn base_for_task(&self, team: &Team, agent: AgentId) {
        if self.base_of(agent).is_some() || self.owner(team, agent).is_some() {
            return;
        }
        let Some(parent) = team.parent(agent) else {
            return;
        };
        let role = team.role(agent).unwrap_or_default();
        let mode = crate::sync::lock(&self.chosen).get(&agent).copied();
        if let Some(base) = self.base_for_spawn(team, parent, &role, mode).await {
            self.give_base(agent, base);
        }
    }

    /// The worker's turns are over: a base it did not write from is let go.
    pub(super) fn forget_base(&self, agent: AgentId) {
        crate::sync::lock(&self.bases).remove(&agent);
    }
}
