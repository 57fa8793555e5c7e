use crate::protocol::{AgentId, AgentResult, AgentStatus, Event, EventKind, HistoryItem};
use std::collections::HashMap;
use std::path::PathBuf;

/// What a log says about one agent, enough to carry on with it.
#[derive(Clone, Debug)]
pub struct ReplayedAgent {
    pub id: AgentId,
    pub parent_id: Option<AgentId>,
    pub role: String,
    pub model: String,
    pub task: String,
    pub depth: u32,
    pub status: AgentStatus,
    pub history: Vec<HistoryItem>,
    pub result: Option<AgentResult>,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cost_usd: f64,
}

/// A session rebuilt from its log.
#[derive(Clone, Debug)]
pub struct ReplayedSession {
    pub session_id: String,
    pub workspace: Option<PathBuf>,
    pub root: AgentId,
    /// The persona the user talks to; survives handoffs and resumes.
    pub active_role: String,
    /// Agents in the order they were spawned (root first).
    pub agents: Vec<ReplayedAgent>,
    pub last_seq: u64,
}

/// Rebuilds the session's agents and histories from its events. `None` if the log has no
/// root agent (an empty or foreign file).
pub fn replay(events: &[Event]) -> Option<ReplayedSession> {
    let mut session_id = None;
    let mut workspace = None;
    let mut root = None;
    let mut active_role = None;
    let mut order: Vec<AgentId> = Vec::new();
    let mut agents: HashMap<AgentId, ReplayedAgent> = HashMap::new();
    let mut last_seq = 0;

    for ev in events {
        last_seq = last_seq.max(ev.seq);
        match &ev.kind {
            EventKind::SessionStarted {
                session_id: id,
                workspace: w,
                ..
            } => {
                session_id.get_or_insert_with(|| id.clone());
                workspace.get_or_insert_with(|| w.clone());
            }
            EventKind::AgentSpawned {
                parent_id,
                role,
                model,
                task,
                depth,
            } => {
                if parent_id.is_none() && root.is_none() {
                    root = Some(ev.agent_id);
                    active_role = Some(role.clone());
                }
                if let std::collections::hash_map::Entry::Vacant(slot) = agents.entry(ev.agent_id) {
                    order.push(ev.agent_id);
                    slot.insert(ReplayedAgent {
                        id: ev.agent_id,
                        parent_id: *parent_id,
                        role: role.clone(),
                        model: model.clone(),
                        task: task.clone(),
                        depth: *depth,
                        status: AgentStatus::Inactive,
                        history: Vec::new(),
                        result: None,
                        prompt_tokens: 0,
                        completion_tokens: 0,
                        cost_usd: 0.0,
                    });
                }
            }
            other => {
                let Some(agent) = agents.get_mut(&ev.agent_id) else {
                    continue;
                };
                match other {
                    EventKind::AgentStatus { status, .. } => agent.status = *status,
                    EventKind::ItemAdded { item } => agent.history.push(item.clone()),
                    EventKind::ResultReturned { result, .. } => agent.result = Some(result.clone()),
                    EventKind::Usage {
                        prompt_tokens,
                        completion_tokens,
                        cost_usd,
                        ..
                    } => {
                        agent.prompt_tokens += prompt_tokens;
                        agent.completion_tokens += completion_tokens;
                        agent.cost_usd += cost_usd;
                    }
                    EventKind::Despawned { .. } => agent.status = AgentStatus::Cancelled,
                    EventKind::Handoff { to, .. } if Some(ev.agent_id) == root => {
                        agent.role = to.clone();
                        active_role = Some(to.clone());
                    }
                    _ => {}
                }
            }
        }
    }

    let root = root?;
    // Work that was under way when the process ended did not finish.
    for agent in agents.values_mut() {
        if !agent.status.is_idle() {
            agent.status = AgentStatus::Inactive;
        }
    }
    Some(ReplayedSession {
        session_id: session_id.unwrap_or_default(),
        workspace,
        root,
        active_role: active_role.unwrap_or_default(),
        agents: order
            .into_iter()
            .filter_map(|id| agents.remove(&id))
            .collect(),
        last_seq,
    })
}
