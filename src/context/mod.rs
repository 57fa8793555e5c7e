//! Keeping conversations inside a model's context window: how big the window is, how many
//! tokens a request will take, how long tool output is kept, and the project instructions
//! (`AGENTS.md`) every agent is given. Pure functions and small state; the runtime decides
//! when to compact (`runtime/compaction.rs`).

mod clip;
mod estimate;
mod instructions;
mod window;

pub use clip::{ClipHint, clip_tool_output};
pub use estimate::{estimate_item, estimate_request, estimate_text, estimate_tools};
pub use instructions::{Instructions, load_instructions};
pub use window::ContextWindows;
