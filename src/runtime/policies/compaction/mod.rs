//! Compaction: a conversation that no longer fits is shortened by a summary of its older
//! part (`compactor`), before a request is sent (`layer`) or after the server refused one
//! (`fit`).

pub mod compactor;
pub mod fit;
pub mod layer;
