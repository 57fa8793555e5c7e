//! What a spawn may ask beyond the worker's role: to keep the worker for follow-ups, extra
//! instructions, a narrower tool list. Told once (`agent_options`, right after the
//! worker's `agent_spawned`) so a resume rebuilds the same worker.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpawnOptions {
    /// Kept for follow-ups: never released on its own, so it holds its slot of
    /// `max_live_agents` until despawned.
    #[serde(default, skip_serializing_if = "is_false")]
    pub keep: bool,
    /// Appended to its role's prompt, under a heading of their own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// The only tools it has (its supervisor named them; never more than its role's and
    /// its supervisor's). `None`: its role's, as usual.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
}

impl SpawnOptions {
    /// Nothing asked beyond the role: no event is needed.
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}
