//! An agent's tools fitted to the plan states, at every request and every call (both ask
//! `Session::agent_tools`): a `plan_first` worker whose plan is not approved keeps only
//! the tools that read or act on the team (not `spawn_agent`), and gets `submit_plan`; a
//! supervisor whose role may spawn a `plan_first` role gets `review_plan`; a persona that
//! coordinates only keeps its reading and team tools. Only the role files and the user's
//! `/lead` decide these: nothing is guessed, and an agent none of them touch keeps its
//! list as it was (the same `Arc`, so its requests do not change by a byte).

use super::Plans;
use crate::protocol::AgentId;
use crate::roles::RoleSet;
use crate::runtime::agent_tools::{REVIEW_PLAN, SPAWN_AGENT, SUBMIT_PLAN};
use crate::runtime::team::Team;
use crate::runtime::toolbox::ToolBox;
use crate::tools::Reach;
use std::sync::Arc;

/// What fitting an agent's tools reads.
pub struct Fit<'a> {
    pub tools: &'a ToolBox,
    pub roles: &'a RoleSet,
    pub team: &'a Team,
    pub plans: &'a Plans,
}

/// `agent`'s tools `own`, fitted.
pub fn fit(f: &Fit<'_>, agent: AgentId, own: Arc<[String]>) -> Arc<[String]> {
    let Some(role) = f.team.role(agent).and_then(|r| f.roles.get(&r)) else {
        return own;
    };
    let is_root = agent == f.team.root();
    let gated = !is_root && role.plan_first && !f.plans.approved(agent);
    let lead_only = is_root && f.plans.coordinate_only();
    let reviews = role
        .enabled_agents
        .iter()
        .any(|n| f.roles.get(n).is_some_and(|r| r.plan_first));
    if !gated && !lead_only && !reviews {
        return own;
    }
    let mut tools: Vec<String> = own
        .iter()
        .filter(|t| {
            if !gated && !lead_only {
                return true;
            }
            let reach = f.tools.reach(t);
            reach == Some(Reach::Reads)
                || (reach == Some(Reach::Team) && !(gated && t.as_str() == SPAWN_AGENT))
        })
        .cloned()
        .collect();
    if gated {
        tools.push(SUBMIT_PLAN.to_string());
    }
    if reviews {
        tools.push(REVIEW_PLAN.to_string());
    }
    tools.into()
}
