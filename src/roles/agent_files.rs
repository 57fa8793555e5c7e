//! Agent definitions written for the peers, read as roles: Claude Code's `.claude/agents/*.md`
//! (front matter `name`, `description`, `tools`, `model`; the body is the prompt) and
//! Codex's `.codex/agents/*.toml` (`name`, `description`, `developer_instructions`,
//! `model`), in the user's home and in the workspace. Their tool names are mapped to
//! squad's (`crate::tools::claude`); a tool without a counterpart is named in a warning,
//! never dropped silently.

use super::Role;
use crate::front_matter::FrontMatterError;
use crate::tools::claude::squad_names;
use serde_json::json;
use std::path::{Path, PathBuf};

/// The peers' agent folders under `base` (the home folder or the workspace), in the order
/// they are read: a later definition of a name replaces an earlier one.
pub fn agent_dirs(base: &Path) -> [PathBuf; 2] {
    [base.join(".codex/agents"), base.join(".claude/agents")]
}

/// Whether a role came from a peer's agent file (its path in an `agents` folder).
pub fn is_agent_file(source: &super::RoleSource) -> bool {
    match source {
        super::RoleSource::File(p) => {
            let in_agents = p
                .parent()
                .and_then(Path::file_name)
                .is_some_and(|n| n == "agents");
            in_agents && p.extension().is_some_and(|e| e == "md" || e == "toml")
        }
        super::RoleSource::BuiltIn => false,
    }
}

/// The roles of every agent file in `dir` (sorted by file name), with warnings for files
/// skipped and tools left out.
pub fn load_dir(dir: &Path, warnings: &mut Vec<String>) -> Vec<Role> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    let mut roles = Vec::new();
    for path in files {
        let parsed = match path.extension().and_then(|e| e.to_str()) {
            Some("md") => std::fs::read_to_string(&path)
                .map_err(AgentFileError::from)
                .and_then(|t| claude_agent(&t)),
            Some("toml") => std::fs::read_to_string(&path)
                .map_err(AgentFileError::from)
                .and_then(|t| codex_agent(&t)),
            _ => continue,
        };
        match parsed {
            Ok((mut role, notes)) => {
                for note in notes {
                    warnings.push(format!("agent file {}: {note}", path.display()));
                }
                role.source = super::RoleSource::File(path);
                roles.push(role);
            }
            Err(e) => warnings.push(format!("skipped agent file {}: {e}", path.display())),
        }
    }
    roles
}

/// Why an agent file is skipped; the loader names the file.
#[derive(Debug, thiserror::Error)]
pub enum AgentFileError {
    #[error("{0}")]
    Read(#[from] std::io::Error),
    #[error(transparent)]
    FrontMatter(#[from] FrontMatterError),
    #[error("{0}")]
    Toml(#[from] toml::de::Error),
    /// A key the file must have: `its front matter has no `name`` (Claude's), `it has no
    /// `name`` (Codex's).
    #[error("{0} has no `{1}`")]
    Missing(&'static str, &'static str),
    /// The role it makes is not one squad can run.
    #[error("{0}")]
    Role(String),
}

/// A Claude Code subagent file as a role, with notes on what did not carry over.
pub fn claude_agent(text: &str) -> Result<(Role, Vec<String>), AgentFileError> {
    let fm = crate::front_matter::parse(text)?;
    let name = (fm.text("name")).ok_or(AgentFileError::Missing("its front matter", "name"))?;
    let mut notes = Vec::new();
    let tools = fm.list("tools").map(|list| squad_tools(&list, &mut notes));
    let agent = fm.fields.get("agent").cloned();
    let role = build(
        &name,
        &fm.text("description").unwrap_or_default(),
        fm.body,
        (fm.text("model").as_deref(), agent),
        tools,
    )?;
    Ok((role, notes))
}

/// A Codex custom agent file as a role.
pub fn codex_agent(text: &str) -> Result<(Role, Vec<String>), AgentFileError> {
    let table: toml::Table = text.parse()?;
    let s = |k: &'static str| {
        (table.get(k).and_then(toml::Value::as_str)).ok_or(AgentFileError::Missing("it", k))
    };
    let name = s("name")?;
    let agent = table.get("agent").map(serde_json::to_value).transpose();
    let agent = agent.map_err(|e| AgentFileError::Role(format!("agent: {e}")))?;
    // An agent's own instructions are its own: an agent role needs none.
    let prompt = match agent {
        Some(_) => s("developer_instructions").unwrap_or_default(),
        None => s("developer_instructions")?,
    };
    let role = build(
        name,
        s("description").unwrap_or_default(),
        prompt,
        (s("model").ok(), agent),
        None,
    )?;
    Ok((role, Vec::new()))
}

/// squad's tools for an agent file's `tools:` list; each name without a counterpart is
/// named in `notes`.
fn squad_tools(list: &[String], notes: &mut Vec<String>) -> Vec<String> {
    let mut tools: Vec<String> = Vec::new();
    let mut unknown = Vec::new();
    for name in list {
        let mapped: Vec<String> = match name.strip_prefix("mcp__") {
            Some(rest) => vec![rest.to_string()],
            None => squad_names(name).iter().map(|s| s.to_string()).collect(),
        };
        if mapped.is_empty() {
            unknown.push(name.as_str());
        }
        for t in mapped {
            if !tools.contains(&t) {
                tools.push(t);
            }
        }
    }
    if !unknown.is_empty() {
        notes.push(format!(
            "tools {} have no squad counterpart and are left out",
            unknown.join(", ")
        ));
    }
    tools
}

/// Claude's model aliases as squad's levels; `inherit` (or none) is the default level.
fn model_fields(model: Option<&str>) -> (Option<&str>, Option<&str>) {
    match model.map(str::trim) {
        None | Some("") | Some("inherit") => (None, None),
        Some("opus") => (Some("smart"), None),
        Some("sonnet") => (Some("base"), None),
        Some("haiku") => (Some("fast"), None),
        Some(m) => (None, Some(m)),
    }
}

fn build(
    name: &str,
    description: &str,
    prompt: &str,
    (model, agent): (Option<&str>, Option<serde_json::Value>),
    tools: Option<Vec<String>>,
) -> Result<Role, AgentFileError> {
    let (level, model) = model_fields(model);
    // Checked on its own so a typo is named under `agent`.
    if let Some(agent) = &agent {
        serde_json::from_value::<crate::acp_client::AgentCommand>(agent.clone())
            .map_err(|e| AgentFileError::Role(format!("agent: {e}")))?;
    }
    let role: Role = serde_json::from_value(json!({
        "name": name.trim(),
        "description": description.trim(),
        "system_prompt": prompt.trim(),
        "level": level,
        "model": model,
        "tools": tools,
        "agent": agent,
    }))
    .map_err(|e| AgentFileError::Role(e.to_string()))?;
    super::check_fields(&role).map_err(|p| AgentFileError::Role(p.to_string()))?;
    Ok(role)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claude_agent_file_is_a_role_with_squads_tools_and_unknown_ones_named() {
        let text = "---\nname: code-reviewer\ndescription: Reviews diffs\n\
                    tools: Read, Grep, Glob, Bash, WebFetch\nmodel: haiku\n---\nReview it.\n";
        let (role, notes) = claude_agent(text).unwrap();
        assert_eq!(role.name, "code-reviewer");
        assert_eq!(role.system_prompt, "Review it.");
        assert_eq!(role.level.as_deref(), Some("fast"));
        assert_eq!(
            role.tools.unwrap(),
            [
                "read_file",
                "search_files",
                "list_files",
                "run_command",
                "run_tests"
            ]
        );
        assert_eq!(notes.len(), 1);
        assert!(notes[0].contains("WebFetch"), "{notes:?}");
    }

    #[test]
    fn without_tools_it_gets_every_tool_and_a_codex_agent_file_reads_too() {
        let (role, notes) = claude_agent("---\nname: helper\n---\nHelp.\n").unwrap();
        assert!(role.tools.is_none() && notes.is_empty());
        let (role, _) = codex_agent(
            "name = \"explorer\"\ndescription = \"Reads code\"\n\
             developer_instructions = \"Explore.\"\nmodel = \"gpt-5-codex\"\n",
        )
        .unwrap();
        assert_eq!(role.model.as_deref(), Some("gpt-5-codex"));
        assert_eq!(role.system_prompt, "Explore.");
        assert!(
            claude_agent("---\nname: x\n---\n  \n").is_err(),
            "an empty prompt"
        );
    }
}
