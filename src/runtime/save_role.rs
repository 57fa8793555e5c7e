//! `Op::SaveRole`: a worker's role as it ran (its role file, plus the instructions and
//! tools its spawn gave it) saved as a permanent role. Role files are the permanent
//! agents; a good ad-hoc worker becomes one this way.

use super::refused::Refused;
use super::session::Session;
use crate::protocol::{AgentId, EventKind};
use crate::roles::Role;

/// Saves the role and answers with `role_saved`, or an `error` saying why not.
pub fn serve(session: &Session, agent: AgentId, name: &str) {
    let kind = match save(session, agent, name.trim()) {
        Ok(path) => EventKind::RoleSaved {
            name: name.trim().to_string(),
            path,
        },
        Err(e) => EventKind::Error {
            message: e.to_string(),
        },
    };
    session.team.emit(agent, kind);
}

fn save(session: &Session, agent: AgentId, name: &str) -> Result<std::path::PathBuf, Refused> {
    let team = &session.team;
    if agent == session.root() {
        return Err(Refused::PersonaRole);
    }
    let from = team
        .role(agent)
        .ok_or_else(|| Refused::NoAgent(agent.short()))?;
    let role = (session.role(&from)).ok_or_else(|| Refused::RoleGone(from.clone()))?;
    let role = as_ran(
        role,
        name,
        team.instructions(agent).as_deref(),
        team.is_narrowed(agent)
            .then(|| team.tools(agent))
            .flatten()
            .map(|t| t.to_vec()),
    );
    let header = format!(
        "Saved by squad from worker {} (role `{from}`, with what its spawn gave it).",
        agent.short()
    );
    Ok(crate::roles::save_role(
        &session.roles,
        session.workspace.root(),
        &role,
        &header,
    )?)
}

/// `role` renamed `name`, with the spawn's `instructions` under its prompt and, when the
/// spawn named its tools, only those (a worker narrowed without `spawn_agent` spawns none).
fn as_ran(role: &Role, name: &str, instructions: Option<&str>, tools: Option<Vec<String>>) -> Role {
    let mut saved = Role {
        name: name.to_string(),
        description: if role.description.is_empty() {
            format!("{} as a worker ran it", role.name)
        } else {
            format!(
                "{} (from {}, as a worker ran it)",
                role.description, role.name
            )
        },
        source: Default::default(),
        ..role.clone()
    };
    if let Some(extra) = instructions {
        saved.system_prompt = format!("{}\n\n{}\n", role.system_prompt.trim_end(), extra.trim());
    }
    if let Some(tools) = tools {
        if !tools.iter().any(|t| t == super::agent_tools::SPAWN_AGENT) {
            saved.enabled_agents.clear();
        }
        saved.tools = Some(tools);
    }
    saved
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_saved_role_carries_the_instructions_and_the_narrowed_tools() {
        let ws = tempfile::tempdir().unwrap();
        let roles = crate::roles::load_roles_from(None, ws.path()).unwrap();
        let coder = roles.get("agentic_coder").unwrap();
        let saved = as_ran(
            coder,
            "typo_fixer",
            Some("Fix typos only."),
            Some(vec!["read_file".into(), "edit_file".into()]),
        );
        assert_eq!(saved.name, "typo_fixer");
        assert!(
            saved
                .system_prompt
                .starts_with(coder.system_prompt.trim_end())
        );
        assert!(saved.system_prompt.ends_with("\n\nFix typos only.\n"));
        assert_eq!(
            saved.tools.as_deref(),
            Some(&["read_file".to_string(), "edit_file".to_string()][..])
        );
        assert!(saved.enabled_agents.is_empty(), "it spawned nobody");
        let plain = as_ran(coder, "coder2", None, None);
        assert_eq!(plain.system_prompt, coder.system_prompt);
        assert_eq!(plain.enabled_agents, coder.enabled_agents);
    }
}
