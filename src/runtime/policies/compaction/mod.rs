//! Compaction: a conversation that no longer fits is shortened by a summary of its older
//! part (`compactor`), before a request is sent (`layer`) or after the server refused one
//! (`fit`).

pub mod compactor;
pub mod fit;
pub mod layer;

use crate::runtime::cx::{Layer, Policy, Starting};
use crate::runtime::policies::hooks::service::Hooks;
use compactor::Compactor;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// The compactor, and the user's hooks that hear of each compaction (`pre_compact`).
#[derive(Clone)]
pub struct CompactionPolicy {
    pub compactor: Arc<Compactor>,
    pub hooks: Arc<Hooks>,
}

impl Policy for CompactionPolicy {
    fn layer_for(&self, _agent: &Starting) -> Option<Box<dyn Layer>> {
        Some(Box::new(layer::CompactionLayer {
            p: self.clone(),
            failed: AtomicBool::new(false),
        }))
    }
}
