//! What a spawn may ask beyond the worker's role: a name the user knows it by, to keep the
//! worker for follow-ups, extra instructions, a narrower tool list. Told once (`agent_options`, right after the
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
    /// A few words its supervisor named it by (`parser fix`): the tree, approvals and
    /// `/agents` show it where they would show the task's first words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The environment it runs in (an `[environments.NAME]`'s name); `None`: here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
}

impl SpawnOptions {
    /// Nothing asked beyond the role: no event is needed.
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// Where a placed worker's far side is and what of its work is here (issue 52): enough for
/// a resume to reattach to it, or to start it there again from what came back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FarSide {
    /// Its `[environments.NAME]`.
    pub env: String,
    /// Its root there.
    pub root: String,
    /// Its container (a container environment's), by the engine's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// The git store there its root is a worktree of; `None`: its work travels as the
    /// engine's archives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<String>,
    /// Its base commit (on both sides).
    pub base: String,
    /// The commit of its change its worktree here holds: its base until one came back.
    pub applied: String,
    /// A commit that came back and is being applied here, told before it is: after a kill
    /// its worktree may hold it or not, and the next bring-back looks (`placement/back.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applying: Option<String>,
}

/// Most characters of a worker's name: a label, not a task.
pub const MAX_NAME_CHARS: usize = 32;

/// The name a spawn asked for as it is shown: one line, trimmed, at most
/// [`MAX_NAME_CHARS`]; none when nothing is left.
pub fn worker_name(asked: Option<&str>) -> Option<String> {
    let one: String = asked?.split_whitespace().collect::<Vec<_>>().join(" ");
    let name: String = one.chars().take(MAX_NAME_CHARS).collect();
    let name = name.trim_end().to_string();
    (!name.is_empty()).then_some(name)
}

fn is_false(b: &bool) -> bool {
    !*b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_one_short_line_or_none() {
        assert_eq!(
            worker_name(Some("  parser\n fix ")).as_deref(),
            Some("parser fix")
        );
        assert_eq!(worker_name(Some(" \n\t")), None);
        assert_eq!(worker_name(None), None);
        let long = "a".repeat(40);
        assert_eq!(
            worker_name(Some(&long)).map(|n| n.chars().count()),
            Some(32)
        );
        // Cut on a char, never inside one.
        let wide = "é".repeat(40);
        assert_eq!(
            worker_name(Some(&wide)).map(|n| n.chars().count()),
            Some(32)
        );
    }
}
