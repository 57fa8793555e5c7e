//! `[checkpoints]`: how long the stores of the files' checkpoints are kept.

use serde::{Deserialize, Serialize};

/// A store (one per workspace, under the data dir) unused for `keep_days` goes with
/// `squad sessions --prune`, and by itself once all of them pass `max_total_mb`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CheckpointsConfig {
    /// Days a workspace's checkpoints are kept after their last use. 14: as long as
    /// `git gc` keeps the unreachable objects a checkpoint may borrow from the repository.
    pub keep_days: u64,
    /// When the stores of every workspace together take more (MB on disk), the least
    /// recently used go, as a session starts, until they do not.
    pub max_total_mb: u64,
}

impl Default for CheckpointsConfig {
    fn default() -> Self {
        Self {
            keep_days: 14,
            max_total_mb: 2048,
        }
    }
}
