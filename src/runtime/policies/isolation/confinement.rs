//! Which sandbox an agent's commands run in, its tools' and its hooks' alike: the session's
//! level narrowed by the role of every agent from the persona down to it (a worker never
//! gets a wider one than its supervisor), rooted where the agent works, and for a worker in
//! a worktree the git metadata of that worktree writable too, so `git commit` works there
//! while the user's checkout stays closed.

use super::worker::WorkerIsolation;
use crate::config::RoleSandbox;
use crate::protocol::AgentId;
use crate::roles::RoleSet;
use crate::runtime::session::Places;
use crate::runtime::team::Team;
use crate::sandbox::{Confined, Level, Sandbox};
use crate::workspace::Workspace;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

pub struct Confinement {
    sandbox: Arc<Sandbox>,
    /// Each role's own `[sandbox]`.
    roles: HashMap<String, RoleSandbox>,
    isolation: Arc<WorkerIsolation>,
}

impl Confinement {
    pub fn new(sandbox: Arc<Sandbox>, roles: &RoleSet, isolation: Arc<WorkerIsolation>) -> Self {
        Self {
            sandbox,
            roles: roles.iter().map(|r| (r.name.clone(), r.sandbox)).collect(),
            isolation,
        }
    }

    /// `agent`'s level: the session's, narrowed by each role on its line.
    pub fn level(&self, team: &Team, agent: AgentId) -> Level {
        team.lineage(agent)
            .iter()
            .filter_map(|r| self.roles.get(r))
            .fold(self.sandbox.level(), |level, role| level.narrowed(role))
    }

    /// Waits until the worktree `agent` works in holds all its files (see
    /// `WorkerIsolation::wait_for_files`): a hook runs in it like a command.
    pub async fn wait_for_files(&self, team: &Team, agent: AgentId) {
        self.isolation.wait_for_files(team, agent).await;
    }

    /// The confinement of a command `agent` runs in `root`; `None` when commands run
    /// unconfined (sandbox off, or none to be had).
    pub fn for_agent(&self, team: &Team, agent: AgentId, root: &Path) -> Option<Arc<Confined>> {
        let level = self.level(team, agent);
        if !self.sandbox.confines(level) {
            return None;
        }
        let git = self.isolation.git_writable(team, agent);
        self.sandbox.for_agent_with(level, root, git)
    }
}

impl Places for Confinement {
    fn workspace_for(
        &self,
        team: &Team,
        agent: AgentId,
        shared: &Arc<Workspace>,
    ) -> Arc<Workspace> {
        self.isolation.workspace_for(team, agent, shared)
    }

    fn level(&self, team: &Team, agent: AgentId) -> Level {
        Confinement::level(self, team, agent)
    }

    fn confined(&self, team: &Team, agent: AgentId, root: &Path) -> Option<Arc<Confined>> {
        self.for_agent(team, agent, root)
    }
}
