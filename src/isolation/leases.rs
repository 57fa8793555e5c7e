//! Outside a git repository workers share the workspace; a file one running worker has
//! written is leased to it, and another worker's write to it is refused (naming the
//! holder) until the holder's result is delivered.

use crate::protocol::AgentId;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Who holds a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holder {
    pub agent: AgentId,
    /// How the holder is named on screen (its role).
    pub name: String,
}

/// A write refused because another worker holds the file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{} is being changed by worker {} ({}); it stays theirs until their result is delivered. \
     Change other files, or ask your supervisor to wait for that worker first.",
    path.display(), holder.name, holder.agent.short()
)]
pub struct LeaseError {
    pub path: PathBuf,
    pub holder: Holder,
}

/// The leases of one session, by resolved path.
#[derive(Default)]
pub struct Leases {
    held: Mutex<HashMap<PathBuf, Holder>>,
}

impl Leases {
    pub fn new() -> Self {
        Self::default()
    }

    /// Lets `agent` write `path` (taking the lease if it is free), or says who holds it.
    /// `path` should be resolved (absolute, inside the workspace) so two spellings of one
    /// file are one lease.
    pub fn claim(&self, path: &Path, agent: AgentId, name: &str) -> Result<(), LeaseError> {
        let mut held = crate::sync::lock(&self.held);
        match held.get(path) {
            Some(h) if h.agent != agent => Err(LeaseError {
                path: path.to_path_buf(),
                holder: h.clone(),
            }),
            Some(_) => Ok(()),
            None => {
                held.insert(
                    path.to_path_buf(),
                    Holder {
                        agent,
                        name: name.to_string(),
                    },
                );
                Ok(())
            }
        }
    }

    /// Frees every file `agent` holds (its result was delivered, or it was despawned);
    /// returns them, sorted.
    pub fn release(&self, agent: AgentId) -> Vec<PathBuf> {
        let mut held = crate::sync::lock(&self.held);
        let mut freed: Vec<PathBuf> = held
            .iter()
            .filter(|(_, h)| h.agent == agent)
            .map(|(p, _)| p.clone())
            .collect();
        for p in &freed {
            held.remove(p);
        }
        freed.sort();
        freed
    }

    /// Who holds `path`, if anyone.
    pub fn holder(&self, path: &Path) -> Option<Holder> {
        crate::sync::lock(&self.held).get(path).cloned()
    }
}
