//! The workspace root every path is confined to, and the approval gate for mutating actions.

mod paths;

pub use paths::{PathError, Workspace};
