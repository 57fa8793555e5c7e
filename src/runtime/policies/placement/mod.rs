//! Placement (issue 52): a worker whose spawn (or role) names an environment runs its
//! coding tools there, through `crate::environments`' tool server, and its work travels:
//! its base goes there when it is spawned (`open.rs`), its change comes back as a commit
//! applied to its worktree here before its result is checked and when its turns are over
//! (`back.rs`), so verification and the merge queue take it as a local worker's. The
//! model calls, approvals, hooks, budgets, checks and merges stay here. Only a placed
//! worker gets a layer (`layer.rs`): a local one runs exactly as without this policy.

mod back;
mod layer;
pub mod open;
pub mod registry;
pub mod resume;

pub use registry::{PlacedWorker, Placements};

use crate::runtime::cx::{Layer, Policy, Starting};
use std::sync::Arc;

/// Placement's state; its layer only for the workers it placed.
#[derive(Clone)]
pub struct PlacementPolicy(pub Arc<Placements>);

impl Policy for PlacementPolicy {
    fn layer_for(&self, agent: &Starting) -> Option<Box<dyn Layer>> {
        // The persona and sessions without environments get no layer at all.
        if !agent.is_worker() || !self.0.enabled() {
            return None;
        }
        Some(Box::new(layer::PlacementLayer::new(self.0.clone())))
    }
}
