//! What the rest of the runtime asks of the team without changing it: an agent's status,
//! role, tools, lineage and subtree, its children, its result, the view a request is
//! built from.

use super::{AgentCard, RequestView, Team};
use crate::protocol::{AgentId, AgentResult, AgentStatus, HistoryItem};
use chrono::{DateTime, Utc};
use std::sync::Arc;

impl Team {
    /// The roles from the persona down to `id`, the persona first: an MCP tool is offered
    /// only when each of them offers it, so a worker never has one its parent lacks.
    pub fn lineage(&self, id: AgentId) -> Vec<String> {
        let agents = self.lock();
        let mut roles = Vec::new();
        let mut next = Some(id);
        while let Some(a) = next.and_then(|i| agents.get(&i)) {
            roles.push(a.role.clone());
            next = a.parent;
        }
        roles.reverse();
        roles
    }

    /// `id` and everyone below it, parents before children.
    pub fn subtree(&self, id: AgentId) -> Vec<AgentId> {
        let agents = self.lock();
        let mut out = vec![id];
        let mut i = 0;
        while i < out.len() {
            if let Some(a) = agents.get(&out[i]) {
                out.extend(a.children.iter().copied());
            }
            i += 1;
        }
        out
    }

    /// Agents that hold a slot of `max_live_agents`: not failed or cancelled, and not a
    /// temporary worker whose outcome was delivered (`team/release.rs`).
    pub fn live_count(&self) -> usize {
        let agents = self.lock();
        agents.live - agents.free
    }

    /// Whether the agent's conversation ends where the model must speak next (a message,
    /// a tool result, a notice), not with its own answer: a turn cut off mid-way.
    pub fn awaits_model(&self, id: AgentId) -> bool {
        self.with(id, |a| {
            !matches!(a.history.last(), None | Some(HistoryItem::Assistant { .. }))
        })
        .unwrap_or(false)
    }

    /// The agents whose status is `status`, in no particular order.
    pub fn with_status(&self, status: AgentStatus) -> Vec<AgentId> {
        self.with_status_where(|s| s == status)
    }

    pub fn with_status_where(&self, pick: impl Fn(AgentStatus) -> bool) -> Vec<AgentId> {
        self.lock()
            .values()
            .filter(|a| pick(a.status))
            .map(|a| a.id)
            .collect()
    }

    pub fn status(&self, id: AgentId) -> Option<AgentStatus> {
        self.with(id, |a| a.status)
    }

    /// When it was spawned, by the wall clock.
    pub fn created_at(&self, id: AgentId) -> Option<chrono::DateTime<chrono::Utc>> {
        self.with(id, |a| a.created_at)
    }

    pub fn role(&self, id: AgentId) -> Option<String> {
        self.with(id, |a| a.role.clone())
    }

    pub fn model(&self, id: AgentId) -> Option<String> {
        self.with(id, |a| a.model.clone())
    }

    pub fn card(&self, id: AgentId) -> Option<AgentCard> {
        self.with(id, |a| AgentCard {
            role: a.role.clone(),
            depth: a.depth,
            policy: a.policy,
            tools: a.tools.clone(),
        })
    }

    /// The instructions its spawn appended to its role's prompt.
    pub fn instructions(&self, id: AgentId) -> Option<String> {
        self.with(id, |a| a.instructions.clone()).flatten()
    }

    /// Its spawn named its tools (`spawn_agent`'s `tools`).
    pub fn is_narrowed(&self, id: AgentId) -> bool {
        self.with(id, |a| a.narrowed).unwrap_or(false)
    }

    pub fn tools(&self, id: AgentId) -> Option<Arc<[String]>> {
        self.with(id, |a| a.tools.clone())
    }

    /// What the agent's next request is built from; the history is shared, not copied.
    pub fn request_view(&self, id: AgentId) -> Option<RequestView> {
        let agents = self.lock();
        let a = agents.get(&id)?;
        Some(RequestView {
            role: a.role.clone(),
            model: a.model.clone(),
            tools: a.tools.clone(),
            history: a.history.clone(),
            depth: a.depth,
            parent_role: a
                .parent
                .map(|p| agents.get(&p).map(|p| p.role.clone()).unwrap_or_default()),
            instructions: a.instructions.clone(),
        })
    }

    pub fn parent(&self, id: AgentId) -> Option<AgentId> {
        self.with(id, |a| a.parent).flatten()
    }

    pub fn children(&self, id: AgentId) -> Vec<AgentId> {
        self.with(id, |a| a.children.clone()).unwrap_or_default()
    }

    pub fn child_infos(&self, id: AgentId) -> Vec<ChildInfo> {
        let agents = self.lock();
        let Some(me) = agents.get(&id) else {
            return Vec::new();
        };
        me.children
            .iter()
            .filter_map(|c| agents.get(c))
            .map(|a| ChildInfo {
                id: a.id,
                role: a.role.clone(),
                status: a.status,
                task: a.task.clone(),
                has_result: a.result.is_some(),
                parent: a.parent,
                created_at: a.created_at,
                verification: a.result.as_ref().and_then(|r| r.verification.clone()),
                released: a.life.released,
            })
            .collect()
    }

    pub fn result(&self, id: AgentId) -> Option<AgentResult> {
        self.with(id, |a| a.result.clone()).flatten()
    }
}

/// One line of `get_agents`.
pub struct ChildInfo {
    pub id: AgentId,
    pub role: String,
    pub status: AgentStatus,
    pub task: String,
    pub has_result: bool,
    pub parent: Option<AgentId>,
    pub created_at: DateTime<Utc>,
    /// The checks of its result, when they ran.
    pub verification: Option<crate::protocol::Verdict>,
    pub released: bool,
}
