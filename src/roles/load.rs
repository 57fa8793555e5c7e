//! Role loading: built-ins (embedded from `roles/*.toml`), then the peers' agent files in
//! the home folder (`~/.codex/agents/`, `~/.claude/agents/`, see `agent_files.rs`), then
//! `<config dir>/squad/roles/`, then the workspace's agent files, then
//! `<workspace>/.squad/roles/`; a later file replaces an earlier role of the same name.
//!
//! A broken file never stops squad: it is skipped, the role it would have replaced stays,
//! and `RoleSet::warnings` says which file, which key and what was expected.

use super::{Role, RoleSource, check_fields};
use crate::config::parse::parse_toml;
use crate::config::user_config_dir;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The built-in roles, embedded so the binary needs no files at run time.
const BUILT_INS: [(&str, &str); 8] = [
    ("copilot.toml", include_str!("../../roles/copilot.toml")),
    ("architect.toml", include_str!("../../roles/architect.toml")),
    (
        "implementer.toml",
        include_str!("../../roles/implementer.toml"),
    ),
    ("tester.toml", include_str!("../../roles/tester.toml")),
    (
        "documentation.toml",
        include_str!("../../roles/documentation.toml"),
    ),
    (
        "agentic_coder.toml",
        include_str!("../../roles/agentic_coder.toml"),
    ),
    (
        "test_writer.toml",
        include_str!("../../roles/test_writer.toml"),
    ),
    (
        "code_reviewer.toml",
        include_str!("../../roles/code_reviewer.toml"),
    ),
];

/// The persona a session starts with unless told otherwise.
pub const DEFAULT_ROLE: &str = "copilot";

#[derive(Clone, Debug, Default)]
pub struct RoleSet {
    roles: BTreeMap<String, Role>,
    /// Problems with role files (file, key, what is expected); most mean the file was
    /// skipped.
    pub warnings: Vec<String>,
}

impl RoleSet {
    pub fn get(&self, name: &str) -> Option<&Role> {
        self.roles.get(name)
    }
    pub fn names(&self) -> Vec<String> {
        self.roles.keys().cloned().collect()
    }
    pub fn iter(&self) -> impl Iterator<Item = &Role> {
        self.roles.values()
    }
    pub fn insert(&mut self, role: Role) {
        self.roles.insert(role.name.clone(), role);
    }
    /// The role called `name`, or an error that lists the roles there are.
    pub fn require(&self, name: &str) -> Result<&Role, RoleError> {
        self.roles.get(name).ok_or_else(|| RoleError::Unknown {
            name: name.to_string(),
            known: self.names().join(", "),
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RoleError {
    #[error("unknown role '{name}'; known roles: {known}")]
    Unknown { name: String, known: String },
    /// A built-in role file does not load: a bug in squad, caught by its tests.
    #[error("built-in role file roles/{file} is broken: {problem}")]
    BuiltIn { file: String, problem: String },
}

/// Loads the roles for `workspace` from the built-ins, the user's config dir (honouring
/// `SQUAD_CONFIG_DIR`) and the workspace.
pub fn load_roles(workspace: &Path) -> Result<RoleSet, RoleError> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    load_roles_with(user_config_dir().as_deref(), home.as_deref(), workspace)
}

/// Loads the roles from explicit places: `user_dir` is the user's squad directory (its
/// `roles/` folder is read), `workspace` the workspace root (its `.squad/roles/` and
/// agent files); no agent files from a home folder.
pub fn load_roles_from(user_dir: Option<&Path>, workspace: &Path) -> Result<RoleSet, RoleError> {
    load_roles_with(user_dir, None, workspace)
}

/// [`load_roles_from`], with the agent files of the home folder `home` too.
pub fn load_roles_with(
    user_dir: Option<&Path>,
    home: Option<&Path>,
    workspace: &Path,
) -> Result<RoleSet, RoleError> {
    let mut warnings = Vec::new();
    // Every definition of each name, lowest layer first; the last one that is valid wins.
    let mut layers: BTreeMap<String, Vec<Role>> = BTreeMap::new();

    for (file, text) in BUILT_INS {
        let built_in = |problem: String| RoleError::BuiltIn {
            file: file.to_string(),
            problem,
        };
        let (role, _) = parse_toml::<Role>(text).map_err(|p| built_in(p.to_string()))?;
        check_fields(&role).map_err(|p| built_in(p.to_string()))?;
        layers.entry(role.name.clone()).or_default().push(role);
    }
    for role in super::agents::built_in_agents() {
        layers.entry(role.name.clone()).or_default().push(role);
    }

    let layers_of = [
        (home, user_dir.map(|d| d.join("roles"))),
        (
            Some(workspace),
            Some(workspace.join(".squad").join("roles")),
        ),
    ];
    for (base, dir) in layers_of {
        for agents in base.map(super::agent_files::agent_dirs).iter().flatten() {
            for role in super::agent_files::load_dir(agents, &mut warnings) {
                layers.entry(role.name.clone()).or_default().push(role);
            }
        }
        let Some(dir) = dir else {
            continue;
        };
        let dir = &dir;
        // Within one folder the later file (by name) wins; say so, it is rarely intended.
        let mut seen_here: BTreeMap<String, PathBuf> = BTreeMap::new();
        for path in role_files(dir, &mut warnings) {
            let Some(role) = load_file(&path, &mut warnings) else {
                continue;
            };
            if let Some(earlier) = seen_here.insert(role.name.clone(), path.clone()) {
                warnings.push(format!(
                    "role file {} defines role '{}' again (also in {}); using {}",
                    path.display(),
                    role.name,
                    earlier.display(),
                    path.display()
                ));
            }
            layers.entry(role.name.clone()).or_default().push(role);
        }
    }

    drop_unresolved(&mut layers, &mut warnings)?;

    let mut set = RoleSet {
        roles: BTreeMap::new(),
        warnings,
    };
    let mut from_agent_files = Vec::new();
    for (_, mut stack) in layers {
        if let Some(role) = stack.pop() {
            // An agent role is not a native worker; spawning one is not wired yet.
            if super::agent_files::is_agent_file(&role.source) && role.agent.is_none() {
                from_agent_files.push(role.name.clone());
            }
            set.insert(role);
        }
    }
    // The default persona may spawn them, as Claude Code's main agent may use any subagent.
    if let Some(persona) = set.roles.get_mut(DEFAULT_ROLE)
        && !persona.enabled_agents.is_empty()
    {
        for name in from_agent_files {
            if !persona.enabled_agents.contains(&name) {
                persona.enabled_agents.push(name);
            }
        }
    }
    Ok(set)
}

/// `*.toml` files directly in `dir`, sorted; a missing folder is simply empty.
fn role_files(dir: &Path, warnings: &mut Vec<String>) -> Vec<PathBuf> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            warnings.push(format!("cannot read role folder {}: {e}", dir.display()));
            return Vec::new();
        }
    };
    let (mut files, others): (Vec<PathBuf>, Vec<PathBuf>) = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .partition(|p| p.extension().is_some_and(|e| e == "toml"));
    // An agent file (Markdown with front matter) put here by mistake would be skipped
    // without a word; other files (a README, notes) are simply not roles.
    for other in others {
        let is_md = other.extension().is_some_and(|e| e == "md");
        let front_matter =
            || std::fs::read_to_string(&other).is_ok_and(|t| t.trim_start().starts_with("---"));
        if is_md && front_matter() {
            warnings.push(format!(
                "{} looks like an agent file, but role files here are *.toml; a Markdown \
                 agent file goes in .claude/agents/ or .codex/agents/; skipped",
                other.display()
            ));
        }
    }
    files.sort();
    files
}

/// One user role file, or `None` with a warning saying why it was skipped.
fn load_file(path: &Path, warnings: &mut Vec<String>) -> Option<Role> {
    let skipped = |why: String| format!("skipped role file {}: {why}", path.display());
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => {
            warnings.push(skipped(format!("cannot read it: {e}")));
            return None;
        }
    };
    let mut role = match parse_toml::<Role>(&text) {
        Ok((role, _)) => role,
        Err(problem) => {
            warnings.push(skipped(problem.to_string()));
            return None;
        }
    };
    if let Err(problem) = check_fields(&role) {
        warnings.push(skipped(problem.to_string()));
        return None;
    }
    role.source = RoleSource::File(path.to_path_buf());
    Some(role)
}

/// Drops file roles whose `enabled_agents` or `handoffs` name roles that do not exist,
/// falling back to the definition below them. Repeats, since dropping a role can leave
/// others pointing at nothing.
fn drop_unresolved(
    layers: &mut BTreeMap<String, Vec<Role>>,
    warnings: &mut Vec<String>,
) -> Result<(), RoleError> {
    loop {
        let known: BTreeSet<String> = layers.keys().cloned().collect();
        let mut changed = false;
        for stack in layers.values_mut() {
            let Some(role) = stack.last() else {
                continue;
            };
            let Some(problem) = unknown_reference(role, &known) else {
                continue;
            };
            match &role.source {
                RoleSource::BuiltIn => {
                    return Err(RoleError::BuiltIn {
                        file: format!("{}.toml", role.name),
                        problem,
                    });
                }
                RoleSource::File(path) => {
                    warnings.push(format!("skipped role file {}: {problem}", path.display()));
                }
            }
            stack.pop();
            changed = true;
        }
        layers.retain(|_, stack| !stack.is_empty());
        if !changed {
            return Ok(());
        }
    }
}

fn unknown_reference(role: &Role, known: &BTreeSet<String>) -> Option<String> {
    for (key, list) in [
        ("enabled_agents", &role.enabled_agents),
        ("handoffs", &role.handoffs),
    ] {
        if let Some(bad) = list.iter().find(|n| !known.contains(n.as_str())) {
            let known: Vec<&str> = known.iter().map(String::as_str).collect();
            return Some(format!(
                "{key}: unknown role '{bad}' (known roles: {})",
                known.join(", ")
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests;
