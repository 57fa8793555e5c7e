//! The checks themselves, in the order the report shows them.

use super::{Check, DoctorInput};
use crate::config::{Config, ConfigError, PROFILE_ENV, check_files, load_config_from};
use crate::context::load_instructions;
use crate::mcp::{McpHub, ServerState};
use crate::model::{ClientSettings, ModelClient, ModelError, OpenAiClient, list_models};
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
pub(super) fn roles(
    input: &DoctorInput,
    config: Option<&Config>,
    out: &mut Vec<Check>,
) -> Option<RoleSet> {
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
    let servers: Vec<String> = config
        .map(|c| c.mcp_servers.keys().cloned().collect())
        .unwrap_or_default();
    roles.check_tools(&input.tool_names, &servers);
    let environments: Vec<String> = config
        .map(|c| c.environments.keys().cloned().collect())
        .unwrap_or_default();
    roles.check_environments(&environments);
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

/// The key, the server and the models it serves. True when the server answered.
pub(super) async fn provider(
    config: &Config,
    roles: Option<&RoleSet>,
    out: &mut Vec<Check>,
) -> bool {
    let url = &config.provider.base_url;
    let env = &config.provider.api_key_env;
    if let Some(problem) = config.missing_key() {
        out.push(Check::fail("key", problem, ""));
        out.push(Check::skip(
            "server",
            format!("server {url}: not asked without a key"),
        ));
        return false;
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
            return false;
        }
    };
    // llama.cpp (it answers `/props`) and a server with one model serve any name they are
    // asked for with the model they have: an unlisted name is no failure there.
    let any_name = match served.as_slice() {
        [only] => Some(only.clone()),
        _ => match OpenAiClient::new(ClientSettings::from_provider(&config.provider)) {
            // llama.cpp's `/props` always says its context size.
            Ok(client) if client.server_props().await.window.is_some() => Some(served.join(", ")),
            _ => None,
        },
    };
    for (who, model) in models_in_use(config, roles) {
        out.push(if served.contains(&model) {
            Check::pass("model", format!("model {who} = {model}: served"))
        } else if let Some(serving) = &any_name {
            Check::warn(
                "model",
                format!(
                    "model {who} = {model}: not listed, but this server answers any model \
                     name with the one it serves ({serving}): requests for {model} get that"
                ),
            )
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
    true
}

/// Each model a session could call and who calls it: one model for every agent when one
/// is forced (`--model`, `SQUAD_MODEL`, the local server found, `--demo`), else every level
/// of `[models]`, then models roles name outside those levels.
pub(super) fn models_in_use(config: &Config, roles: Option<&RoleSet>) -> Vec<(String, String)> {
    if let Some(model) = &config.model_override {
        // Not "(--model)": the local server found forces its model the same way.
        return vec![("(every agent)".to_string(), model.clone())];
    }
    let mut out: Vec<(String, String)> = config
        .models
        .iter()
        .map(|(level, model)| (format!("level {level}"), model.model.clone()))
        .collect();
    let mut by_model: BTreeMap<String, Vec<String>> = BTreeMap::new();
    // An agent role calls its own model (its line under the agent roles says if it runs).
    for role in roles
        .iter()
        .flat_map(|r| r.iter())
        .filter(|r| r.agent.is_none())
    {
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
/// The local server a session would use without a key or a base URL (or with `--oss`).
pub(super) fn local_server(config: &mut Config, oss: bool, out: &mut Vec<Check>) {
    use crate::model::discover::{Outcome, apply, port_list};
    match apply(config, oss) {
        Outcome::NotTried => {}
        Outcome::Using(found) => out.push(Check::pass("local", found.describe())),
        Outcome::NoneFound(ports) if oss => out.push(Check::fail(
            "local",
            format!(
                "--oss: no local server answered on 127.0.0.1 ports {}",
                port_list(&ports)
            ),
            "start one (llama-server, ollama serve, LM Studio, vllm serve) or give --base-url",
        )),
        Outcome::NoneFound(ports) => out.push(Check::skip(
            "local",
            format!(
                "no local server answered on 127.0.0.1 ports {}",
                port_list(&ports)
            ),
        )),
    }
}

/// Whether each model in use gets squad's help for weak models (`assist`).
pub(super) fn assist(config: &Config, roles: Option<&RoleSet>, out: &mut Vec<Check>) {
    let mut seen: Vec<String> = Vec::new();
    for (_, model) in models_in_use(config, roles) {
        if seen.contains(&model) {
            continue;
        }
        let assist = config.assist_for_model(&model);
        let what = match assist {
            crate::config::Assist::Auto => {
                "help for weak models on evidence of being stuck (a repeat, a failure, a limit)"
            }
            crate::config::Assist::Off => "only hard limits, budgets and the loop guards",
        };
        out.push(Check::pass(
            "assist",
            format!("assist of {model}: {} ({what})", assist.as_str()),
        ));
        seen.push(model);
    }
}

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

/// The context window of each model in use: configured, said by the server (`/props`),
/// or only assumed. An assumed window is not a failure: a context error from the server
/// teaches squad the real one; but Ollama truncates silently, so the line says to set it.
/// Then the model requests kept in flight, and why.
pub(super) async fn context_windows(
    config: &Config,
    roles: Option<&RoleSet>,
    out: &mut Vec<Check>,
) {
    let mut models: Vec<String> = models_in_use(config, roles)
        .into_iter()
        .map(|(_, model)| model)
        .collect();
    models.sort();
    models.dedup();
    let props = match OpenAiClient::new(ClientSettings::from_provider(&config.provider)) {
        Ok(client) => client.server_props().await,
        Err(_) => Default::default(),
    };
    let server = props.window;
    let in_flight = crate::model::in_flight::in_flight(
        config.limits.max_concurrent_requests,
        crate::config::is_local(&config.provider.base_url),
        props,
    );
    for model in models {
        out.push(match (config.context_windows.get(&model), server) {
            (Some(tokens), _) => Check::pass(
                "context_window",
                format!("context window of {model}: {tokens} tokens ([context_windows])"),
            ),
            (None, Some(tokens)) => Check::pass(
                "context_window",
                format!("context window of {model}: {tokens} tokens (the server's /props)"),
            ),
            (None, None) => Check::skip(
                "context_window",
                format!(
                    "context window of {model}: not known, squad assumes {} tokens \
                     (context.default_window) until a context error names it; with Ollama, \
                     which cuts silently, set \"{model}\" = TOKENS under [context_windows]",
                    config.context.default_window
                ),
            ),
        });
    }
    out.push(Check::pass(
        "in_flight",
        format!("model requests in flight at once: {}", in_flight.describe()),
    ));
}

/// The MCP servers of the config, started as a session would start them, then stopped.
pub(super) async fn mcp_servers(config: &Config, workspace: &Path, out: &mut Vec<Check>) {
    if config.mcp_servers.is_empty() {
        out.push(Check::skip("mcp", "MCP servers: none configured"));
        return;
    }
    let hub = McpHub::new(&config.mcp_servers, workspace, None);
    hub.start();
    hub.wait_started().await;
    for status in hub.statuses() {
        let name = &status.name;
        out.push(match &status.state {
            ServerState::Ready => Check::pass(
                "mcp",
                format!(
                    "MCP server {name}: ready in {:.1} s, {} tools",
                    status.started_in.unwrap_or_default().as_secs_f64(),
                    status.tools.len()
                ),
            ),
            ServerState::Disabled => Check::skip(
                "mcp",
                format!("MCP server {name}: disabled (enabled = false)"),
            ),
            ServerState::Failed(why) => Check::fail(
                "mcp",
                format!("MCP server {name} ({}): {why}", status.transport),
                format!(
                    "fix [mcp_servers.{name}] (command, args, url), or set enabled = false; \
                     `squad mcp list` shows it alone"
                ),
            ),
            ServerState::Starting | ServerState::Stopped => Check::fail(
                "mcp",
                format!("MCP server {name}: did not start"),
                format!("raise [mcp_servers.{name}] startup_timeout_s"),
            ),
        });
    }
    hub.shutdown().await;
}

/// Project instructions, read as a session reads them.
pub(super) fn agents_md(workspace: &Path, max_bytes: Option<usize>, out: &mut Vec<Check>) {
    let max_bytes = max_bytes.unwrap_or(usize::MAX);
    out.push(match load_instructions(workspace, max_bytes) {
        Some(found) => {
            let files: Vec<String> = found
                .files
                .iter()
                .map(|f| f.display().to_string())
                .collect();
            let cut = if found.cut {
                format!(", cut to context.max_instructions_bytes = {max_bytes}")
            } else {
                String::new()
            };
            Check::pass(
                "agents_md",
                format!(
                    "AGENTS.md: {} ({} bytes{cut}), given to every agent",
                    files.join(", "),
                    found.bytes
                ),
            )
        }
        None => Check::skip(
            "agents_md",
            format!(
                "AGENTS.md: none in {} (optional: project instructions for every agent)",
                workspace.display()
            ),
        ),
    });
}
