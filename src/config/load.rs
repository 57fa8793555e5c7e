//! Layering: built-in defaults, then the user's `config.toml`, the workspace's
//! `.squad/config.toml`, `--config FILE`, the chosen profile, environment variables and
//! flags; later wins.
//!
//! Files are merged key by key as TOML tables, so a file that sets only
//! `[limits] max_depth` changes only that. Each file is checked on its own first, so an
//! error names the file that caused it. Profiles (`[profiles.NAME]`) merge across files the
//! same way, and the chosen one is merged over the files' result.

use super::parse::{TomlProblem, from_table, parse_toml, toml_key};
use super::{Config, check_base_url};
use crate::protocol::ApprovalPolicy;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Environment variable that replaces `<config dir>/squad` (for tests and power users).
pub const CONFIG_DIR_ENV: &str = "SQUAD_CONFIG_DIR";
/// Environment variable naming the profile to apply (`--profile` wins over it).
pub const PROFILE_ENV: &str = "SQUAD_PROFILE";
/// Environment variables the loader reads (the API key is read later, by name).
const ENV_VARS: [&str; 6] = [
    CONFIG_DIR_ENV,
    PROFILE_ENV,
    "OPENAI_BASE_URL",
    "SQUAD_MODEL",
    "SQUAD_APPROVAL",
    // `~/` in `[hooks] import`.
    "HOME",
];

/// What the command line sets; applied last.
#[derive(Clone, Debug, Default)]
pub struct ConfigOverrides {
    /// `--config FILE`: merged after the workspace file; must exist.
    pub config_file: Option<PathBuf>,
    /// `--base-url`
    pub base_url: Option<String>,
    /// `--model`: every agent uses this model.
    pub model: Option<String>,
    /// `--approval`
    pub approval: Option<ApprovalPolicy>,
    /// `--wire-api`: every model on this wire, for this run.
    pub wire_api: Option<super::WireApi>,
    /// `--profile`: wins over `SQUAD_PROFILE`.
    pub profile: Option<String>,
    /// `--sandbox`
    pub sandbox: Option<super::SandboxMode>,
}

/// Where the layers come from; explicit so tests need not touch the real environment.
#[derive(Clone, Debug, Default)]
pub struct ConfigSources {
    /// The user's squad directory (`<config dir>/squad`), holding `config.toml` and `roles/`.
    pub user_dir: Option<PathBuf>,
    /// The workspace root; its `.squad/config.toml` is read.
    pub workspace: PathBuf,
    /// Environment variables (only the ones the loader knows are looked at).
    pub env: HashMap<String, String>,
}

impl ConfigSources {
    /// Sources of the running process: real config dir and environment.
    pub fn from_process(workspace: &Path) -> Self {
        let env: HashMap<String, String> = ENV_VARS
            .iter()
            .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)))
            .collect();
        Self {
            user_dir: user_config_dir_from(&env),
            workspace: workspace.to_path_buf(),
            env,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config file {} (given with --config) does not exist", path.display())]
    MissingFile { path: PathBuf },
    #[error("config error in {}: {problem}", path.display())]
    Invalid { path: PathBuf, problem: TomlProblem },
    #[error("config error after merging the config files: {0}")]
    Merged(TomlProblem),
    #[error("config error in environment variable {var}: {message}")]
    Env { var: String, message: String },
    #[error("config error in {flag}: {message}")]
    Flag { flag: String, message: String },
    #[error("config error in [[verify.rules]] `{id}`: {message}")]
    VerifyRule { id: String, message: String },
    #[error(
        "config error in {files}: mcp_servers.{name}: expected `command` (a stdio server) or \
         `url` (streamable HTTP), found neither (or set `enabled = false`)"
    )]
    McpServer { name: String, files: String },
    #[error("config error: environments.{name}: {message}")]
    Environment { name: String, message: String },
    #[error("unknown profile '{name}' (from {from}); {}", known_profiles(.known))]
    UnknownProfile {
        name: String,
        /// `--profile` or `SQUAD_PROFILE`.
        from: String,
        known: Vec<String>,
    },
}

fn known_profiles(known: &[String]) -> String {
    if known.is_empty() {
        "no profiles are defined: add a [profiles.NAME] table to a config file".to_string()
    } else {
        format!("known profiles: {}", known.join(", "))
    }
}

/// One config file of the layers, as `squad doctor` reports it.
#[derive(Debug)]
pub struct FileCheck {
    pub path: PathBuf,
    /// `Ok(false)`: absent (fine, but for `--config`); `Ok(true)`: read and valid.
    pub state: Result<bool, ConfigError>,
}

/// The user's squad directory: `$SQUAD_CONFIG_DIR`, else `<config dir>/squad`
/// (`~/.config/squad` on Linux).
pub fn user_config_dir() -> Option<PathBuf> {
    let env: HashMap<String, String> = std::env::var(CONFIG_DIR_ENV)
        .ok()
        .map(|v| (CONFIG_DIR_ENV.to_string(), v))
        .into_iter()
        .collect();
    user_config_dir_from(&env)
}

fn user_config_dir_from(env: &HashMap<String, String>) -> Option<PathBuf> {
    match env.get(CONFIG_DIR_ENV).filter(|d| !d.is_empty()) {
        Some(dir) => Some(PathBuf::from(dir)),
        None => directories::BaseDirs::new().map(|b| b.config_dir().join("squad")),
    }
}

/// Loads the config for `workspace` from the real config dir, environment and `overrides`.
pub fn load_config(workspace: &Path, overrides: &ConfigOverrides) -> Result<Config, ConfigError> {
    load_config_from(&ConfigSources::from_process(workspace), overrides)
}

/// The config files of the layers in order, each with whether it must exist.
fn layer_files(sources: &ConfigSources, overrides: &ConfigOverrides) -> Vec<(PathBuf, bool)> {
    let mut files = Vec::new();
    if let Some(dir) = &sources.user_dir {
        files.push((dir.join("config.toml"), false));
    }
    files.push((sources.workspace.join(".squad").join("config.toml"), false));
    if let Some(path) = &overrides.config_file {
        files.push((path.clone(), true));
    }
    files
}

/// Every config file of the layers, found or not, and whether it is valid on its own.
pub fn check_files(sources: &ConfigSources, overrides: &ConfigOverrides) -> Vec<FileCheck> {
    layer_files(sources, overrides)
        .into_iter()
        .map(|(path, required)| {
            let state = if required && !path.exists() {
                Err(ConfigError::MissingFile { path: path.clone() })
            } else {
                read_layer(&path, required).map(|t| t.is_some())
            };
            FileCheck { path, state }
        })
        .collect()
}

/// The hooks of the files `[hooks] import` names (`~/` is the home folder, a relative path
/// the workspace's).
fn import_hooks(
    table: &toml::Table,
    sources: &ConfigSources,
    from: &crate::hooks::HookSource,
) -> (Vec<crate::hooks::HookSpec>, Vec<String>) {
    let (mut list, mut problems) = (Vec::new(), Vec::new());
    let entries = table.get("import").and_then(toml::Value::as_array);
    if entries.is_none() || table.len() > 1 {
        problems.push(format!(
            "{}: a [hooks] table takes only `import = [\"FILE\", …]`; hooks themselves are \
             [[hooks]] entries",
            from.file.display()
        ));
    }
    let home = sources.env.get("HOME").map(PathBuf::from);
    for entry in entries
        .into_iter()
        .flatten()
        .filter_map(toml::Value::as_str)
    {
        let path = crate::hooks::import::resolve(entry, &sources.workspace, home.as_deref());
        let (l, p) = crate::hooks::import::import(&path, &sources.workspace, from.workspace);
        list.extend(l);
        problems.extend(p);
    }
    (list, problems)
}

/// Loads the config from explicit sources; see the module docs for the order.
pub fn load_config_from(
    sources: &ConfigSources,
    overrides: &ConfigOverrides,
) -> Result<Config, ConfigError> {
    // Start from the defaults as a table so that maps (`[models]`, `[prices]`) merge key
    // by key too instead of being replaced by a file's partial map. Serializing our own
    // plain struct cannot fail; the tests compare the no-file result with the defaults.
    let mut merged = toml::Table::try_from(Config::default()).unwrap_or_default();
    // The files that mention each MCP server, for an error about the merged result.
    let mut server_files: Vec<(PathBuf, Vec<String>)> = Vec::new();
    // `[[hooks]]` add up across files, each hook keeping the file it came from.
    let mut hooks = crate::hooks::Hooks::default();
    for (path, required) in layer_files(sources, overrides) {
        if required && !path.exists() {
            return Err(ConfigError::MissingFile { path });
        }
        if let Some(mut table) = read_layer(&path, required)? {
            server_files.push((path.clone(), mcp_server_names(&table)));
            if let Some(raw) = table.remove("hooks") {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                let source = crate::hooks::HookSource {
                    workspace: path == sources.workspace.join(".squad").join("config.toml"),
                    digest: crate::hooks::digest(&text),
                    file: path.clone(),
                };
                let (list, problems) = match raw {
                    // `[hooks] import = [...]`: Claude Code's and Codex's hook files.
                    toml::Value::Table(t) => import_hooks(&t, sources, &source),
                    raw => crate::hooks::parse_hooks(raw, &source),
                };
                hooks.list.extend(list);
                hooks.problems.extend(problems);
            }
            merge(&mut merged, table);
        }
    }

    let env = |name: &str| {
        sources
            .env
            .get(name)
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
    };
    let chosen = match overrides.profile.as_deref().map(str::trim) {
        Some(name) if !name.is_empty() => Some((name, "--profile")),
        _ => env(PROFILE_ENV).map(|name| (name, PROFILE_ENV)),
    };
    if let Some((name, from)) = chosen {
        let profiles = match merged.get("profiles") {
            Some(toml::Value::Table(t)) => t.clone(),
            _ => toml::Table::new(),
        };
        match profiles.get(name) {
            Some(toml::Value::Table(profile)) => merge(&mut merged, profile.clone()),
            _ => {
                return Err(ConfigError::UnknownProfile {
                    name: name.to_string(),
                    from: from.to_string(),
                    known: profiles.keys().cloned().collect(),
                });
            }
        }
    }

    name_models(&mut merged);
    let mut config: Config = from_table(merged).map_err(ConfigError::Merged)?;
    config.profile = chosen.map(|(name, _)| name.to_string());
    config.hooks_raw = None;
    config.hooks = hooks;
    if let Some(name) = super::mcp::missing_transport(&config.mcp_servers) {
        let mut files: Vec<String> = server_files
            .iter()
            .filter(|(_, names)| names.contains(&name))
            .map(|(path, _)| path.display().to_string())
            .collect();
        if let Some(profile) = &config.profile {
            files.push(format!("[profiles.{profile}]"));
        }
        return Err(ConfigError::McpServer {
            name,
            files: files.join(", "),
        });
    }
    if let Some((name, message)) = super::environments::incomplete(&config.environments) {
        return Err(ConfigError::Environment { name, message });
    }
    for rule in &config.verify.rules {
        check_rule(rule).map_err(|message| ConfigError::VerifyRule {
            id: rule.id.clone(),
            message,
        })?;
    }

    if let Some(url) = env("OPENAI_BASE_URL") {
        check_base_url(url).map_err(|message| ConfigError::Env {
            var: "OPENAI_BASE_URL".into(),
            message,
        })?;
        config.provider.base_url = url.to_string();
    }
    if let Some(model) = env("SQUAD_MODEL") {
        config.force_model(model);
    }
    if let Some(value) = env("SQUAD_APPROVAL") {
        config.approval = ApprovalPolicy::parse(value).ok_or_else(|| ConfigError::Env {
            var: "SQUAD_APPROVAL".into(),
            message: format!("expected one of ask, auto, read-only, found {value:?}"),
        })?;
    }

    if let Some(url) = &overrides.base_url {
        check_base_url(url).map_err(|message| ConfigError::Flag {
            flag: "--base-url".into(),
            message,
        })?;
        config.provider.base_url = url.clone();
    }
    if let Some(model) = overrides.model.as_deref().filter(|m| !m.trim().is_empty()) {
        config.force_model(model.trim());
    }
    if let Some(approval) = overrides.approval {
        config.approval = approval;
    }
    if let Some(mode) = overrides.sandbox {
        config.sandbox.mode = mode;
    }
    if let Some(wire) = overrides.wire_api {
        config.force_wire_api(wire);
    }
    Ok(config)
}

/// A `[models.NAME]` table without `model` is about the model NAME itself
/// (`[models."qwen3-coder"] assist = "off"`).
fn name_models(merged: &mut toml::Table) {
    if let Some(toml::Value::Table(models)) = merged.get_mut("models") {
        for (name, level) in models.iter_mut() {
            if let toml::Value::Table(t) = level {
                t.entry("model")
                    .or_insert_with(|| toml::Value::String(name.clone()));
            }
        }
    }
}

/// A verify rule needs an id and a command, and its globs must parse.
pub fn check_rule(rule: &super::CommandRule) -> Result<(), String> {
    if rule.id.trim().is_empty() {
        return Err("`id` must not be empty".into());
    }
    if rule.command.trim().is_empty() {
        return Err("`command` must not be empty".into());
    }
    for pattern in &rule.when_changed {
        globset::Glob::new(pattern)
            .map_err(|e| format!("`when_changed` pattern {pattern:?} is not a valid glob: {e}"))?;
    }
    Ok(())
}

/// Reads and checks one file; `None` when an optional file is absent.
fn read_layer(path: &Path, required: bool) -> Result<Option<toml::Table>, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => return Ok(None),
        Err(source) => {
            return Err(ConfigError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let invalid = |problem| ConfigError::Invalid {
        path: path.to_path_buf(),
        problem,
    };
    // Every section has serde defaults, so `Config` doubles as the "partial" schema.
    let (alone, table) = parse_toml::<Config>(&text).map_err(invalid)?;
    // Defaults are valid, so whatever `problems` finds came from this file.
    let mut problems = alone.problems();
    for (name, profile) in &alone.profiles {
        let key = |k: &str| format!("profiles.{}.{k}", toml_key(name));
        if profile.hooks_raw.is_some() {
            problems.push((
                key("hooks"),
                "hooks are set per file ([[hooks]] at the top level), not per profile".to_string(),
            ));
        }
        if !profile.profiles.is_empty() {
            problems.push((
                key("profiles"),
                "a profile cannot hold profiles of its own".to_string(),
            ));
        }
        problems.extend(profile.problems().into_iter().map(|(k, m)| (key(&k), m)));
    }
    if let Some((key, message)) = problems.into_iter().next() {
        return Err(invalid(TomlProblem {
            line: None,
            column: None,
            key,
            message,
        }));
    }
    Ok(Some(table))
}

/// The `[mcp_servers.NAME]` tables a file has.
fn mcp_server_names(table: &toml::Table) -> Vec<String> {
    match table.get("mcp_servers") {
        Some(toml::Value::Table(servers)) => servers.keys().cloned().collect(),
        _ => Vec::new(),
    }
}

/// Deep merge: tables merge key by key, anything else in `upper` replaces `base`.
fn merge(base: &mut toml::Table, upper: toml::Table) {
    for (key, value) in upper {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(b)), toml::Value::Table(u)) => merge(b, u),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

#[cfg(test)]
mod tests;
