//! The workspace root every tool path is confined to. (The approval gate, which needs the
//! event stream to ask the user, lives in `runtime::approval`.)

mod paths;

pub use paths::{PathError, Workspace};
