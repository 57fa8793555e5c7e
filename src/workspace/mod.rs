//! The workspace root every tool path is confined to. (The approval gate, which needs the
//! event stream to ask the user, lives in `runtime::approval`.)

mod files;
mod paths;

pub use files::{MAX_ATTACHED_BYTES, MAX_LISTED, attach_mentions, list_files};

pub use paths::{PathError, Workspace};
