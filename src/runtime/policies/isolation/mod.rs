//! Workers in worktrees of their own: where each writes and reads (`worker`), its base,
//! the leases on the shared workspace, the merge, the change kept unmerged on its branch
//! when it did not pass its checks (`kept`), which sandbox each agent's commands run in
//! (`confinement`, the session's [`Places`](crate::runtime::session::Places)), the layer
//! that drives them, and the user's ops on workers' changes: a merge on purpose
//! (`merge_worker`), a merged change's diff and its undo (`undo`).

mod base;
pub mod confinement;
pub mod error;
mod kept;
pub mod layer;
mod leases;
mod merge;
mod merge_worker;
mod undo;
pub mod unmerge;
pub mod worker;

use crate::protocol::Op;
use crate::runtime::cx::{AgentCx, Layer, OpRefused, Policy, Starting};
use crate::runtime::policies::checkpoint::Checkpoints;
use crate::runtime::policies::verification::checks::Checks;
use crate::runtime::session::Session;
use std::sync::Arc;
use worker::WorkerIsolation;

/// Isolation's state, and what its merge asks of others: whether a worker's result is
/// checked (only one that passed merges) and the checkpoints (merged files are squad's).
#[derive(Clone)]
pub struct IsolationPolicy {
    pub isolation: Arc<WorkerIsolation>,
    pub checks: Arc<Checks>,
    pub checkpoints: Option<Arc<Checkpoints>>,
}

impl Policy for IsolationPolicy {
    fn layer_for(&self, _agent: &Starting) -> Option<Box<dyn Layer>> {
        Some(Box::new(layer::IsolationLayer {
            iso: self.isolation.clone(),
            p: self.clone(),
        }))
    }

    /// The user's look at a worker's change, its merge on purpose, and its undo.
    fn on_op(&self, session: &Arc<Session>, op: &Op) -> Result<(), OpRefused> {
        match op {
            Op::ShowDiff { agent_id } => undo::show_diff(session, self, *agent_id),
            Op::MergeWorker { worker } => merge_worker::serve(session, self, worker),
            Op::UndoMerge { agent_id, force } => undo::undo_merge(session, self, *agent_id, *force),
            _ => {}
        }
        Ok(())
    }
}

impl IsolationPolicy {
    /// A worker is gone for good (despawned, cancelled, released): its worktree goes. One
    /// stopped by the session's end keeps it for a resume; one cancelled never resumes.
    pub async fn gone(&self, cx: &AgentCx) {
        let iso = &self.isolation;
        let cancelled = cx.team().status(cx.id()) == Some(crate::protocol::AgentStatus::Cancelled);
        if cx.is_worker() && (!iso.is_closing() || cancelled) {
            iso.clean_up(cx.team(), cx.id()).await;
        }
    }
}
