//! Workers in worktrees of their own: where each writes and reads (`worker`), its base,
//! the leases on the shared workspace, the merge, the change kept unmerged on its branch
//! when it did not pass its checks (`kept`), and the layer that drives them.

mod base;
mod kept;
pub mod layer;
mod leases;
mod merge;
pub mod unmerge;
pub mod worker;
