//! The checks themselves, in the order the report shows them.

use super::{Check, DoctorInput};
use crate::config::{Config, ConfigError, PROFILE_ENV, check_files, load_config_from};
use crate::model::{ClientSettings, ModelError, list_models};
use crate::roles::{RoleSet, load_roles_from};
use std::collections::BTreeMap;
use std::path::Path;

/// Most model names a fix lists; a server may serve hundreds.
const MAX_LISTED_MODELS: usize = 8;

/// Each config file of the layers, then the merged result and the active profile.
pub(super) fn config(input: &DoctorInput, out: &mut Vec<Check>) -> Option<Config> {
    let mut file_failed = false;
    for file in check_files(&input.sources, &input.overrides) {
        let path = file.path.display();
        out.push(match file.state {
            Ok(true) => Check::pass("config", format!("config file {path}")),
            Ok(false) => Check::skip("config", format!("config file {path}: none (optional)")),
            Err(e) => {
                file_failed = true;
                let fix = match e {
                    ConfigError::MissingFile { .. } => "give --config an existing file",
                    _ => "fix the file, or move it aside to use the other layers",
                };
                Check::fail("config", e.to_string(), fix)
            }
        });
    }
    let config = match load_config_from(&input.sources, &input.overrides) {
        Ok(config) => config,
        Err(e) => {
            // A broken file is already on its own line.
            if !file_failed {
                let fix = match e {
                    ConfigError::UnknownProfile { .. } => {
                        "name a profile the config defines, or drop --profile / SQUAD_PROFILE"
                    }
                    _ => "fix the value named",
                };
                out.push(Check::fail("config", e.to_string(), fix));
            }
            return None;
        }
    };
    let defined = || {
        let names: Vec<&str> = config.profiles.keys().map(String::as_str).collect();
        if names.is_empty() {
            "none defined".to_string()
        } else {
            format!("defined: {}", names.join(", "))
        }
    };
    out.push(match &config.profile {
        Some(name) => {
            let from = if input.overrides.profile.is_some() {
                "--profile"
            } else {
                PROFILE_ENV
            };
            Check::pass("profile", format!("profile {name} (from {from})"))
        }
        None => Check::skip("profile", format!("profile: none active ({})", defined())),
    });
    Some(config)
}

/// The roles a session would have, and every role file that was skipped.
pub(super) fn roles(input: &DoctorInput, out: &mut Vec<Check>) -> Option<RoleSet> {
    let mut roles =
        match load_roles_from(input.sources.user_dir.as_deref(), &input.sources.workspace) {
            Ok(roles) => roles,
            Err(e) => {
                out.push(Check::fail(
                    "roles",
                    e.to_string(),
                    "report this: a built-in role is broken",
                ));
                return None;
            }
        };
    roles.check_tools(&input.tool_names);
    let names = roles.names();
    out.push(Check::pass(
        "roles",
        format!("{} roles loaded: {}", names.len(), names.join(", ")),
    ));
    for warning in &roles.warnings {
        out.push(Check::fail(
            "roles",
            warning.clone(),
            "fix the role file (until then squad goes on without it, as the line says)",
        ));
    }
    Some(roles)
}

/// The key, the server and the models it serves.
pub(super) async fn provider(config: &Config, roles: Option<&RoleSet>, out: &mut Vec<Check>) {
    let url = &config.provider.base_url;
    let env = &config.provider.api_key_env;
    if let Some(problem) = config.missing_key() {
        out.push(Check::fail("key", problem, ""));
        out.push(Check::skip(
            "server",
            format!("server {url}: not asked without a key"),
        ));
        return;
    }
    out.push(if config.api_key().is_some() {
        Check::pass("key", format!("API key: {env} is set"))
    } else if env.is_empty() {
        Check::pass(
            "key",
            format!("API key: none sent (provider.api_key_env is empty), none needed by {url}"),
        )
    } else {
        Check::pass(
            "key",
            format!("API key: {env} is not set, none needed by {url}"),
        )
    });

    let served = match list_models(&ClientSettings::from_provider(&config.provider)).await {
        Ok(ids) => {
            out.push(Check::pass(
                "server",
                format!("server {url} answers /models ({} models)", ids.len()),
            ));
            ids
        }
        Err(e) => {
            let fix = match &e {
                ModelError::Http {
                    status: 401 | 403, ..
                } => format!("check the key in {env}"),
                ModelError::Http { .. } | ModelError::BadResponse(_) => {
                    "is this an OpenAI-compatible server? Its base URL ends in /v1".to_string()
                }
                _ => "start the server, or point --base-url / OPENAI_BASE_URL (or \
                      provider.base_url) at a running one"
                    .to_string(),
            };
            let message = match &e {
                ModelError::Unreachable { .. } => e.to_string(),
                _ => format!("server {url}: /models: {e}"),
            };
            out.push(Check::fail("server", message, fix));
            out.push(Check::skip(
                "model",
                "models: not checked without the server's list",
            ));
            return;
        }
    };
    for (who, model) in models_in_use(config, roles) {
        out.push(if served.contains(&model) {
            Check::pass("model", format!("model {who} = {model}: served"))
        } else {
            let mut listed: Vec<&str> = served
                .iter()
                .take(MAX_LISTED_MODELS)
                .map(String::as_str)
                .collect();
            if served.len() > MAX_LISTED_MODELS {
                listed.push("…");
            }
            Check::fail(
                "model",
                format!("model {who} = {model}: the server does not list it"),
                format!("use one it lists: {}", listed.join(", ")),
            )
        });
    }
}

/// Each model a session could call and who calls it: `--model` alone when given, else
/// every level of `[models]`, then models roles name outside those levels.
fn models_in_use(config: &Config, roles: Option<&RoleSet>) -> Vec<(String, String)> {
    if let Some(model) = &config.model_override {
        return vec![("(--model / SQUAD_MODEL)".to_string(), model.clone())];
    }
    let mut out: Vec<(String, String)> = config
        .models
        .iter()
        .map(|(level, model)| (format!("level {level}"), model.clone()))
        .collect();
    let mut by_model: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for role in roles.iter().flat_map(|r| r.iter()) {
        let model = role.model(config);
        if !config.models.values().any(|m| *m == model) {
            by_model.entry(model).or_default().push(role.name.clone());
        }
    }
    for (model, names) in by_model {
        out.push((format!("of role {}", names.join(", ")), model));
    }
    out
}

/// The folders squad writes to: sessions and logs.
pub(super) fn dirs(dirs: &crate::logging::Dirs, out: &mut Vec<Check>) {
    for (what, dir, var) in [
        ("data dir (sessions)", &dirs.data, "SQUAD_DATA_DIR"),
        ("log dir", &dirs.logs, "SQUAD_DATA_DIR"),
    ] {
        out.push(match writable(dir) {
            Ok(()) => Check::pass("dirs", format!("{what} {} is writable", dir.display())),
            Err(e) => Check::fail(
                "dirs",
                format!("{what} {}: {e}", dir.display()),
                format!("make it writable, or set {var} to a folder that is"),
            ),
        });
    }
}

/// Creates the folder if needed, then a file in it, and removes the file.
fn writable(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let probe = dir.join(format!(".squad-doctor-{}", std::process::id()));
    std::fs::write(&probe, b"")?;
    std::fs::remove_file(&probe)
}

/// Project instructions: reported, not required (this version does not read them yet).
pub(super) fn agents_md(workspace: &Path, out: &mut Vec<Check>) {
    let path = workspace.join("AGENTS.md");
    out.push(if path.is_file() {
        Check::skip(
            "agents_md",
            format!(
                "AGENTS.md: {} found (this version of squad does not read it yet)",
                path.display()
            ),
        )
    } else {
        Check::skip(
            "agents_md",
            format!(
                "AGENTS.md: none in {} (optional; this version of squad does not read it yet)",
                workspace.display()
            ),
        )
    });
}
