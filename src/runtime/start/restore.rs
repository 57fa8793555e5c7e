//! Resuming: the logged agents come back (root first), idle, with their histories;
//! outcomes and workers' messages the log does not show as delivered are still owed to
//! their supervisors, teammates' messages to their recipients.

use crate::protocol::{AgentId, AgentStatus, ApprovalPolicy, EventKind};
use crate::runtime::agent::start_agent;
use crate::runtime::cx::Policies;
use crate::runtime::inbox::Notice;
use crate::runtime::policies::isolation::IsolationPolicy;
use crate::runtime::policies::verification::layer::VerificationPolicy;
use crate::runtime::session::Session;
use crate::runtime::team::{AgentStats, NewAgent};
use crate::session::{ReplayedAgent, ReplayedSession};
use std::collections::HashMap;
use std::sync::Arc;

pub fn restore_agents(
    session: &Arc<Session>,
    policies: &Arc<Policies>,
    mut replayed: ReplayedSession,
    policy: ApprovalPolicy,
) {
    restore_shared(session, policies, &mut replayed);
    let mut delivered = HashMap::new();
    let mut interrupted = Vec::new();
    let roles: HashMap<AgentId, String> = (replayed.agents.iter())
        .map(|a| (a.id, a.role.clone()))
        .collect();
    for agent in replayed.agents {
        let (id, parent_id, was) = (agent.id, agent.parent_id, agent.delivered);
        let is_root = id == replayed.root;
        let status = agent.status;
        let messages: Vec<Notice> = (agent.messages.iter())
            .map(|m| {
                let role = roles.get(&m.from).map_or("worker", String::as_str);
                Notice::message(m.from, role, m.kind, &m.text)
            })
            .collect();
        let mail: Vec<(u64, AgentId, String)> = (agent.mail.iter())
            .map(|m| (m.id, m.from, m.text.clone()))
            .collect();
        let active = is_root.then(|| replayed.active_role.clone());
        let for_squad = agent.for_squad;
        if !revive(session, policies, agent, active, policy) {
            continue;
        }
        if for_squad {
            session.team.answer_to_squad(id);
        }
        delivered.insert(id, was);
        if status == AgentStatus::Interrupted {
            interrupted.push((id, parent_id));
        }
        if !messages.is_empty() {
            session.team.restore_notices(id, messages);
        }
        if !mail.is_empty() {
            session.team.restore_mail(id, mail);
        }
    }
    let team = &session.team;
    team.restore_delivery(|id, _| delivered.get(&id).copied().unwrap_or(true));
    team.restore_releases();
    reconcile_claims(session, &replayed.returned);
    // The log may end with them running (the process was killed): say what they are now.
    for (id, parent_id) in interrupted {
        team.emit(
            id,
            EventKind::AgentStatus {
                parent_id,
                status: AgentStatus::Interrupted,
                reason: Some(crate::runtime::ops::INTERRUPTED_REASON.into()),
            },
        );
    }
}

/// The board, the workers' plans (one awaiting still awaits) and the persona's
/// coordinate-only mode, as the log left them; placed workers' far sides reopened.
fn restore_shared(session: &Session, policies: &Policies, replayed: &mut ReplayedSession) {
    reopen_placed(session, policies, &replayed.agents);
    session.tasks.restore(std::mem::take(&mut replayed.tasks));
    session.plans.restore(std::mem::take(&mut replayed.plans));
    let on = replayed.coordinate_only;
    session.plans.set_coordinate_only(&session.team, on, false);
    // Teammates' message ids go on after the highest on record (`tasks/restart_props.rs`
    // found ids used twice after a resume).
    session.team.restore_mail_ids(replayed.last_mail_id);
}

/// Placed workers get their far side again (`policies/placement/resume.rs`).
fn reopen_placed(session: &Session, policies: &Policies, agents: &[ReplayedAgent]) {
    let Some(p) = policies.get::<crate::runtime::policies::placement::PlacementPolicy>() else {
        return;
    };
    let settings = |a: &ReplayedAgent| {
        let test = session
            .role(&a.role)
            .and_then(|r| r.test_command.as_deref());
        Arc::new(crate::tools::ToolSettings::from_config(
            &session.config,
            test,
        ))
    };
    let repo = session.workspace.root();
    crate::runtime::policies::placement::resume::reopen_all(
        &p.0,
        &session.config,
        repo,
        settings,
        agents,
    );
}

/// A task whose worker's result is on record is finished; a claimed task is held only by
/// a worker that came back alive, others are ready again.
fn reconcile_claims(session: &Session, returned: &[(String, AgentId)]) {
    let team = &session.team;
    session.tasks.finish_returned(team, returned);
    let live: std::collections::HashSet<AgentId> = (team.directory().into_iter())
        .filter(|m| m.reachable && team.status(m.id) != Some(AgentStatus::Failed))
        .map(|m| m.id)
        .collect();
    session.tasks.reconcile(team, &|a| live.contains(&a));
}

/// Starts one logged agent again (`active`: the persona's role now); false when its role
/// no longer exists.
fn revive(
    session: &Arc<Session>,
    policies: &Arc<Policies>,
    agent: ReplayedAgent,
    active: Option<String>,
    policy: ApprovalPolicy,
) -> bool {
    let is_root = active.is_some();
    let role_name = active.unwrap_or_else(|| agent.role.clone());
    let Some(role) = session.role(&role_name) else {
        return false;
    };
    let ceiling = agent.parent_id.and_then(|p| session.team.tools(p));
    let model = if is_root {
        (session.team.model_choice()).unwrap_or_else(|| role.model(&session.config))
    } else {
        agent.model.clone()
    };
    let mut tools = (session.tools).tools_for_model(role, !is_root, ceiling.as_deref(), &model);
    // Narrowed by its spawn: the same tools again, never more than the role's now.
    if let Some(only) = &agent.options.tools {
        tools.retain(|t| only.contains(t));
    }
    if !is_root {
        reopen(policies, &agent);
    }
    let new = NewAgent {
        id: agent.id,
        parent: agent.parent_id,
        role: role.name.clone(),
        model,
        depth: agent.depth,
        task: agent.task,
        policy,
        tools,
        // A released worker's conversation stays in the log only.
        history: if agent.released {
            Vec::new()
        } else {
            agent.history
        },
        status: agent.status,
        stats: AgentStats {
            prompt_tokens: agent.prompt_tokens,
            completion_tokens: agent.completion_tokens,
            cost_usd: agent.cost_usd,
            ..AgentStats::default()
        },
        budget: agent.budget,
        result: agent.result,
        first_message: None,
        announce: false,
        options: agent.options,
        released: agent.released,
    };
    start_agent(session, policies, new);
    true
}

/// A worker's checks and worktree as the log left them: its snapshot is gone with the old
/// process, and its next message takes a new one.
fn reopen(policies: &Policies, agent: &ReplayedAgent) {
    if let Some(v) = policies.get::<VerificationPolicy>() {
        (v.checks).restore_attempts(agent.id, agent.attempts, agent.task_closed);
    }
    if let Some(iso) = policies.get::<IsolationPolicy>() {
        iso.isolation.reopen(agent.id);
    }
}
