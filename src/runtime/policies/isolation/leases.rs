//! File leases in the shared workspace: a file a worker writes there is its own until its
//! result has been delivered (or it is gone), and another worker's write to it is refused
//! with the holder's name. Workers in worktrees and the persona take no leases.

use super::worker::WorkerIsolation;
use crate::isolation::LeaseError;
use crate::protocol::{AgentId, ApprovalAction};
use crate::runtime::team::Team;
use crate::workspace::Workspace;
use std::path::PathBuf;

impl WorkerIsolation {
    /// Before a worker's `write_file` / `edit_file` / `apply_patch` (`action`) in the
    /// shared workspace: takes the lease of every file it changes, or says who holds one
    /// (an error for the model).
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
    let paths: &[String] = match action {
        Some(ApprovalAction::FileChange { path, .. }) => std::slice::from_ref(path),
        Some(ApprovalAction::Patch { paths, .. }) => paths,
        _ => return Ok(()),
    };
    if agent == team.root() || iso.owner(team, agent).is_some() {
        return Ok(());
    }
    // A path the workspace refuses is the tool's to report.
    let resolved: Vec<PathBuf> = paths
        .iter()
        .filter_map(|p| workspace.resolve(p).ok())
        .collect();
    // A patch is refused whole before it takes any lease.
    for path in &resolved {
        if let Some(holder) = iso.leases.holder(path)
            && holder.agent != agent
        {
            // The holder's result was delivered, or it is gone: the lease has lapsed.
            if team.result_pending(holder.agent) {
                let shown = LeaseError {
                    path: PathBuf::from(workspace.relative(path)),
                    holder,
                };
                return Err(shown.to_string());
            }
            iso.leases.release(holder.agent);
        }
    }
    let role = team.role(agent).unwrap_or_default();
    for path in &resolved {
        if let Err(refused) = iso.leases.claim(path, agent, &role) {
            let shown = LeaseError {
                path: PathBuf::from(workspace.relative(&refused.path)),
                holder: refused.holder,
            };
            return Err(shown.to_string());
        }
    }
    Ok(())
}
