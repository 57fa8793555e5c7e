//! User hooks: commands the user's config runs around tool calls and agents' lives, the
//! way Claude Code's, Codex's and Qwen Code's hooks do, with the field names their scripts
//! already read. The runtime runs them from one layer (`runtime/layers/hooks.rs`); this
//! module knows nothing of agents: what a hook is (`spec.rs`), what it is told (`payload.rs`),
//! how it runs (`run.rs`), and which workspace hook files the user approved (`trust.rs`).

mod decision;
pub mod import;
pub mod listing;
mod payload;
mod run;
mod spec;
mod trust;

pub use decision::{Decision, can_block, decide};
pub use payload::{Payload, SessionFacts};
pub use run::{HookRun, run_hook};
pub use spec::{HookEvent, HookSource, HookSpec, Hooks, parse_hooks};
pub use trust::{TrustStore, approval_key, digest, pinned_files};
