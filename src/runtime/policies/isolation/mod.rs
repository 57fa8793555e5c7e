//! Workers in worktrees of their own: where each writes and reads (`worker`), its base,
//! the leases on the shared workspace, the merge, and the layer that drives them.

mod base;
pub mod layer;
mod leases;
mod merge;
pub mod unmerge;
pub mod worker;
