//! File leases in the shared workspace: a file a worker writes there is its own until its
//! result has been delivered (or it is gone), and another worker's write to it is refused
//! with the holder's name. Workers in worktrees and the persona take no leases.

use super::WorkerIsolation;
use crate::isolation::LeaseError;
use crate::protocol::{AgentId, ApprovalAction};
use crate::runtime::team::Team;
use crate::workspace::Workspace;
use std::path::PathBuf;

impl WorkerIsolation {
    /// Before a worker's `write_file` / `edit_file` (`action`) in the shared workspace:
    /// takes the file's lease, or says who holds it (an error for the model).
    pub fn claim_write(
        &self,
        team: &Team,
        agent: AgentId,
        workspace: &Workspace,
        action: Option<&ApprovalAction>,
    ) -> Result<(), String> {
        claim(self, team, agent, workspace, action)
    }
}

fn claim(
    iso: &WorkerIsolation,
    team: &Team,
    agent: AgentId,
    workspace: &Workspace,
    action: Option<&ApprovalAction>,
) -> Result<(), String> {
    let Some(ApprovalAction::FileChange { path, .. }) = action else {
        return Ok(());
    };
    if agent == team.root() || iso.owner(team, agent).is_some() {
        return Ok(());
    }
    // A path the workspace refuses is the tool's to report.
    let Ok(resolved) = workspace.resolve(path) else {
        return Ok(());
    };
    let role = team.role(agent).unwrap_or_default();
    let refused = match iso.leases.claim(&resolved, agent, &role) {
        Ok(()) => return Ok(()),
        // The holder's result was delivered, or it is gone: the lease has lapsed.
        Err(e) if !team.result_pending(e.holder.agent) => {
            iso.leases.release(e.holder.agent);
            match iso.leases.claim(&resolved, agent, &role) {
                Ok(()) => return Ok(()),
                Err(e) => e,
            }
        }
        Err(e) => e,
    };
    let shown = LeaseError {
        path: PathBuf::from(workspace.relative(&refused.path)),
        holder: refused.holder,
    };
    Err(shown.to_string())
}
