//! Settings, layered: built-in defaults, the user's config file, the workspace's
//! `.squad/config.toml`, `--config FILE`, environment variables, then flags.

mod checkpoints;
mod environments;
mod level;
mod load;
mod mcp;
mod models;
pub(crate) mod parse;
mod provider;
mod sandbox;

pub use checkpoints::CheckpointsConfig;
pub use environments::{EnvKind, EnvironmentConfig, parse_memory};
pub use level::ModelLevel;
pub use load::{
    ConfigError, ConfigOverrides, ConfigSources, FileCheck, PROFILE_ENV, check_files, check_rule,
    load_config, load_config_from, user_config_dir,
};
pub use mcp::{MAX_SERVER_NAME, McpServerConfig};
pub use models::{Assist, LevelModel, ToolProtocol, WireApi};
pub use parse::TomlProblem;
pub(crate) use provider::check_base_url;
pub use provider::{is_local, missing_key_message, needs_key};
pub use sandbox::{RoleSandbox, SandboxConfig, SandboxMode};

use crate::protocol::ApprovalPolicy;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub provider: ProviderConfig,
    /// Model names per level (`fast`, `base`, `smart`); roles name a level or a model. A
    /// level may name its own wire (`{ model = "…", wire_api = "responses" }`).
    pub models: BTreeMap<String, LevelModel>,
    /// Level used by roles that name neither a level nor a model.
    pub default_level: String,
    /// Prices per model name, for cost figures.
    pub prices: BTreeMap<String, Price>,
    pub approval: ApprovalPolicy,
    pub limits: Limits,
    pub tools: ToolsConfig,
    /// Loop guard and stall detection.
    pub guards: GuardsConfig,
    /// Workers' lifetime (when a temporary worker is released) and where writers write.
    pub team: TeamConfig,
    pub verify: VerifyConfig,
    /// The OS sandbox commands run in.
    pub sandbox: SandboxConfig,
    /// MCP servers whose tools the agents may use, by name (`[mcp_servers.NAME]`).
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
    /// Where workers may run besides this machine (`[environments.NAME]`).
    pub environments: BTreeMap<String, EnvironmentConfig>,
    /// Keeping long conversations inside the model's context window.
    pub context: ContextConfig,
    /// Context window in tokens per model name; models not listed use
    /// `context.default_window` (or what their server says).
    pub context_windows: BTreeMap<String, u64>,
    /// How long the files' checkpoints are kept.
    pub checkpoints: CheckpointsConfig,
    /// Named sets of the keys above (`[profiles.local]`), applied over the config files by
    /// `--profile NAME` / `SQUAD_PROFILE`. A profile holds no profiles of its own.
    pub profiles: BTreeMap<String, Config>,
    /// The profile applied, if any. Never read from a file.
    #[serde(skip)]
    pub profile: Option<String>,
    /// Set by `--model` / `SQUAD_MODEL`: every agent uses this model, whatever its role
    /// names. Never read from a file (a file sets `[models]` instead).
    #[serde(skip)]
    pub model_override: Option<String>,
    /// `[[hooks]]` of one file as written; the loader takes each file's apart (they add
    /// up across files, each with its source) into `hooks`.
    #[serde(default, rename = "hooks", skip_serializing)]
    pub hooks_raw: Option<toml::Value>,
    /// The user hooks of every config file, with the problems found reading them.
    #[serde(skip)]
    pub hooks: crate::hooks::Hooks,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProviderConfig {
    /// Includes `/v1`, as OpenAI's own clients expect.
    pub base_url: String,
    /// Name of the environment variable holding the API key (never the key itself).
    pub api_key_env: String,
    pub request_timeout_s: u64,
    /// A stream that sends nothing for this long is treated as broken.
    pub idle_timeout_s: u64,
    pub max_retries: u32,
    pub retry_base_ms: u64,
    /// The API every model is spoken to with, unless its level says otherwise.
    pub wire_api: WireApi,
    /// How every model is told its tools, unless its level says otherwise.
    pub tool_protocol: ToolProtocol,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Price {
    /// US dollars per million prompt tokens.
    pub input_per_mtok: f64,
    /// US dollars per million completion tokens.
    pub output_per_mtok: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// How deep the agent tree may grow (the persona is depth 0).
    pub max_depth: u32,
    /// Workers alive at once across the whole tree.
    pub max_live_agents: u32,
    /// Model calls per agent turn before the turn is stopped: the hard cap against spend,
    /// far above what a capable model's turn takes (100+ calls are common).
    pub max_iterations: u32,
    /// Model calls in a row of the persona's turn that bring nothing new (every call
    /// answered as an earlier one of the turn, no worker's outcome) before it is stopped;
    /// 0: never.
    pub max_turn_calls: u32,
    /// Model requests in flight at once across the session, fixed; unset: llama.cpp's
    /// slots, or a limit that adapts to what the server serves (see `model::in_flight`).
    pub max_concurrent_requests: Option<u32>,
    /// Tokens (prompt + completion, all its calls) one worker may spend; unset: no limit.
    pub max_tokens_per_agent: Option<u64>,
    /// US dollars one worker may spend (from `[prices]`); unset: no limit.
    pub max_cost_per_agent_usd: Option<f64>,
    /// US dollars the whole session may spend before the team is paused; unset: no limit.
    pub max_session_cost_usd: Option<f64>,
    /// Seconds a worker may live, from its spawn; unset: no limit.
    pub max_agent_wall_s: Option<u64>,
    /// The costliest level a worker may be spawned on (its role's or its spawn's);
    /// unset: any.
    pub max_worker_model: Option<ModelLevel>,
    /// A spawn bringing the live workers past this many is a fan-out: its quote (`runtime/
    /// quote`) is shown in its approval, and refuses it above what is left. 0: every spawn.
    pub quote_past_workers: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolsConfig {
    /// Shell command `run_tests` runs; a role's `test_command` wins over it.
    pub test_command: Option<String>,
    pub command_timeout_s: u64,
    /// Cap on command output kept for the model, in bytes.
    pub max_output_bytes: usize,
    /// Cap on what `read_file` returns, in bytes.
    pub read_max_bytes: usize,
}

/// Guard rails against a model that repeats itself and calls that hang (`[guards]`).
/// Every threshold can be turned off with 0.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GuardsConfig {
    /// The same call (name and arguments) failing with the same error this many times in
    /// one turn: its result tells the model it is repeating itself.
    pub repeat_note_after: u32,
    /// The same failing call this many times in one turn: the turn stops and the agent
    /// fails with reason `loop`.
    pub repeat_stop_after: u32,
    /// The same read-only call with the same result this many times in one turn, with
    /// nothing changed in between: stopped the same way.
    pub read_repeat_stop_after: u32,
    /// A model call with no streamed bytes, or a tool call not ended, for this long marks
    /// the agent stalled (a mark for the user; `provider.idle_timeout_s` stays the limit).
    pub stall_after_s: u64,
}

impl Default for GuardsConfig {
    fn default() -> Self {
        Self {
            repeat_note_after: 3,
            repeat_stop_after: 5,
            read_repeat_stop_after: 5,
            stall_after_s: 120,
        }
    }
}

impl GuardsConfig {
    /// How long without progress makes a call stalled; `None` when switched off.
    pub fn stall_after(&self) -> Option<std::time::Duration> {
        (self.stall_after_s > 0).then(|| std::time::Duration::from_secs(self.stall_after_s))
    }
}

/// How the team works together (`[team]`): workers' lifetime and where writers write.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TeamConfig {
    /// Seconds after a temporary worker's outcome reached its supervisor until it is
    /// released (takes no more follow-ups); 0 releases it at once. `spawn_agent`'s
    /// `keep: true` keeps a worker for good.
    pub release_after_s: u64,
    pub isolation: IsolationMode,
}

impl Default for TeamConfig {
    fn default() -> Self {
        Self {
            release_after_s: 300,
            isolation: IsolationMode::default(),
        }
    }
}

impl TeamConfig {
    pub fn release_after(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.release_after_s)
    }
}

/// Checking workers' results against the workspace before their supervisor gets them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VerifyConfig {
    pub enabled: bool,
    /// Correction rounds a worker gets before its result goes up as failed verification.
    pub max_corrections: u32,
    /// Commands every checked result must pass (a role can add its own).
    pub rules: Vec<CommandRule>,
    /// A role that reviews each result whose rule checks passed (seed 001's QC agent):
    /// it reads the task, the result and the diff, and its findings join the verdict.
    pub reviewer: Option<String>,
}

impl Default for VerifyConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_corrections: 3,
            rules: Vec::new(),
            reviewer: None,
        }
    }
}

/// Where a writing worker writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IsolationMode {
    /// Its own git worktree, merged back when its result is accepted; outside a git
    /// repository this falls back to `Shared`.
    #[default]
    Worktree,
    /// The workspace itself, with file leases between workers.
    Shared,
}

/// A user's check: `command` must exit 0, run only when a changed file matches one of
/// `when_changed` (all changes when empty).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandRule {
    pub id: String,
    pub command: String,
    #[serde(default)]
    pub severity: crate::protocol::Severity,
    #[serde(default)]
    pub when_changed: Vec<String>,
}

/// When and how an agent's conversation is compacted, and what is kept small from the
/// start so it lasts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ContextConfig {
    /// Window of a model not in `[context_windows]`, when its server does not say.
    pub default_window: u64,
    /// Compact when the next request would fill this share of the window.
    pub compact_at: f64,
    /// Share of the window kept verbatim (the most recent turns) when compacting.
    pub keep_recent: f64,
    /// Longest tool output kept in history, in bytes (never more than a fifth of the
    /// window); longer output keeps its head and tail with a note.
    pub max_tool_output_bytes: usize,
    /// Most of the project's `AGENTS.md` files given to the agents, in bytes.
    pub max_instructions_bytes: usize,
}

impl Default for ContextConfig {
    fn default() -> Self {
        Self {
            default_window: 32_768,
            compact_at: 0.8,
            keep_recent: 0.3,
            max_tool_output_bytes: 16 * 1024,
            max_instructions_bytes: 16 * 1024,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        let models = [
            ("fast", "gpt-4.1-mini"),
            ("base", "gpt-4.1"),
            ("smart", "gpt-4.1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), LevelModel::new(v)))
        .collect();
        let prices = [
            ("gpt-4.1", 2.0, 8.0),
            ("gpt-4.1-mini", 0.4, 1.6),
            ("gpt-4.1-nano", 0.1, 0.4),
            ("gpt-4o", 2.5, 10.0),
            ("gpt-4o-mini", 0.15, 0.6),
        ]
        .into_iter()
        .map(|(k, i, o)| {
            (
                k.to_string(),
                Price {
                    input_per_mtok: i,
                    output_per_mtok: o,
                },
            )
        })
        .collect();
        Self {
            provider: ProviderConfig::default(),
            models,
            default_level: "base".to_string(),
            prices,
            approval: ApprovalPolicy::Ask,
            limits: Limits::default(),
            tools: ToolsConfig::default(),
            guards: GuardsConfig::default(),
            team: TeamConfig::default(),
            verify: VerifyConfig::default(),
            sandbox: SandboxConfig::default(),
            mcp_servers: BTreeMap::new(),
            environments: BTreeMap::new(),
            context: ContextConfig::default(),
            context_windows: [
                ("gpt-4.1", 1_047_576),
                ("gpt-4.1-mini", 1_047_576),
                ("gpt-4.1-nano", 1_047_576),
                ("gpt-4o", 128_000),
                ("gpt-4o-mini", 128_000),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
            checkpoints: CheckpointsConfig::default(),
            profiles: BTreeMap::new(),
            profile: None,
            model_override: None,
            hooks_raw: None,
            hooks: Default::default(),
        }
    }
}

impl Default for ProviderConfig {
    fn default() -> Self {
        Self {
            base_url: "https://api.openai.com/v1".to_string(),
            api_key_env: "OPENAI_API_KEY".to_string(),
            request_timeout_s: 600,
            idle_timeout_s: 120,
            max_retries: 4,
            retry_base_ms: 500,
            wire_api: WireApi::Chat,
            tool_protocol: ToolProtocol::Auto,
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_depth: 3,
            max_live_agents: 16,
            max_iterations: 300,
            max_turn_calls: 40,
            max_concurrent_requests: None,
            max_tokens_per_agent: None,
            max_cost_per_agent_usd: None,
            max_session_cost_usd: None,
            max_agent_wall_s: None,
            max_worker_model: None,
            quote_past_workers: 2,
        }
    }
}

impl Default for ToolsConfig {
    fn default() -> Self {
        Self {
            test_command: None,
            command_timeout_s: 120,
            max_output_bytes: 32 * 1024,
            read_max_bytes: 256 * 1024,
        }
    }
}

impl Config {
    /// The model a level maps to; an unknown level is used as a model name.
    pub fn model_for_level(&self, level: &str) -> String {
        if let Some(model) = &self.model_override {
            return model.clone();
        }
        self.models
            .get(level)
            .map_or_else(|| level.to_string(), |l| l.model.clone())
    }

    /// The wire `model` is spoken to with: that of the first level naming it that sets
    /// one, else `provider.wire_api`. Keyed by model, so a role naming a model directly
    /// and the compaction requests of an agent go out on the same wire as its level.
    pub fn wire_for_model(&self, model: &str) -> WireApi {
        self.models
            .values()
            .filter(|l| l.model == model)
            .find_map(|l| l.wire_api)
            .unwrap_or(self.provider.wire_api)
    }

    /// Whether `model` gets squad's help for weak models: that of a level named after it,
    /// else of the first level naming it that sets one, else `auto`.
    pub fn assist_for_model(&self, model: &str) -> Assist {
        self.models
            .get(model)
            .and_then(|l| l.assist)
            .or_else(|| {
                self.models
                    .values()
                    .filter(|l| l.model == model)
                    .find_map(|l| l.assist)
            })
            .unwrap_or_default()
    }

    /// Whether an agent on `model` gets the help (`None`: a model not known yet, `auto`).
    pub fn assists(&self, model: Option<&str>) -> bool {
        model.is_none_or(|m| self.assist_for_model(m) == Assist::Auto)
    }

    /// Every model on `wire` (`--wire-api`): the levels' own wires no longer apply.
    pub fn force_wire_api(&mut self, wire: WireApi) {
        self.provider.wire_api = wire;
        for level in self.models.values_mut() {
            level.wire_api = None;
        }
    }

    /// Makes every agent use `model` (`--model`, `SQUAD_MODEL`): every level maps to it,
    /// and roles that name a model of their own are overridden too.
    pub fn force_model(&mut self, model: &str) {
        // What the levels said of their own models does not hold for this one; what the
        // config says of this model itself still does.
        let assist = self.assist_for_model(model);
        let protocol = self.level_tool_protocol(model);
        for value in self.models.values_mut() {
            value.model = model.to_string();
            value.assist = None;
            value.tool_protocol = None;
        }
        if let Some(level) = self.models.values_mut().next() {
            level.assist = (assist != Assist::Auto).then_some(assist);
            level.tool_protocol = protocol;
        }
        self.models
            .entry(self.default_level.clone())
            .or_insert_with(|| LevelModel::new(model))
            .model = model.to_string();
        self.model_override = Some(model.to_string());
    }

    /// The API key, read from the variable `provider.api_key_env` names, at the moment it
    /// is needed, so the key never sits in the config, the log or a session file.
    /// Unset or empty means none (local servers usually need none).
    pub fn api_key(&self) -> Option<String> {
        if self.provider.api_key_env.is_empty() {
            return None;
        }
        std::env::var(&self.provider.api_key_env)
            .ok()
            .filter(|k| !k.trim().is_empty())
    }

    /// The fix to show when no request can work: the provider is OpenAI's own and no key
    /// is set. Checked before anything is sent, so a newcomer gets it at once instead of a
    /// refused request. Local servers need no key and never get this.
    pub fn missing_key(&self) -> Option<String> {
        (self.api_key().is_none() && needs_key(&self.provider.base_url))
            .then(|| missing_key_message(&self.provider.base_url, &self.provider.api_key_env))
    }

    /// Values that parse but cannot work (a zero limit, a URL without a scheme), as
    /// `(key, what is expected)`.
    pub fn problems(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut at_least_one = |key: &str, value: u64| {
            if value == 0 {
                out.push((key.to_string(), "expected at least 1, found 0".to_string()));
            }
        };
        at_least_one(
            "provider.request_timeout_s",
            self.provider.request_timeout_s,
        );
        at_least_one("provider.idle_timeout_s", self.provider.idle_timeout_s);
        at_least_one("limits.max_live_agents", self.limits.max_live_agents.into());
        at_least_one("limits.max_iterations", self.limits.max_iterations.into());
        let l = &self.limits;
        for (key, value) in [
            ("limits.max_tokens_per_agent", l.max_tokens_per_agent),
            ("limits.max_agent_wall_s", l.max_agent_wall_s),
            (
                "limits.max_concurrent_requests",
                l.max_concurrent_requests.map(u64::from),
            ),
        ] {
            if let Some(v) = value {
                at_least_one(key, v);
            }
        }
        at_least_one("tools.command_timeout_s", self.tools.command_timeout_s);
        at_least_one("tools.max_output_bytes", self.tools.max_output_bytes as u64);
        at_least_one("tools.read_max_bytes", self.tools.read_max_bytes as u64);
        at_least_one("context.default_window", self.context.default_window);
        at_least_one(
            "context.max_tool_output_bytes",
            self.context.max_tool_output_bytes as u64,
        );
        for (model, window) in &self.context_windows {
            at_least_one(&format!("context_windows.{model}"), *window);
        }
        for (key, value) in [
            ("limits.max_cost_per_agent_usd", l.max_cost_per_agent_usd),
            ("limits.max_session_cost_usd", l.max_session_cost_usd),
        ] {
            if let Some(v) = value.filter(|v| !(v.is_finite() && *v > 0.0)) {
                out.push((
                    key.to_string(),
                    format!("expected a positive amount of US dollars, found {v}"),
                ));
            }
        }
        let c = &self.context;
        if !(c.compact_at > 0.0 && c.compact_at <= 1.0) {
            out.push((
                "context.compact_at".to_string(),
                format!(
                    "expected a share of the window above 0 and at most 1, found {}",
                    c.compact_at
                ),
            ));
        }
        if !(c.keep_recent >= 0.0 && c.keep_recent < c.compact_at) {
            out.push((
                "context.keep_recent".to_string(),
                format!(
                    "expected a share of the window from 0 to below compact_at ({}), found {}",
                    c.compact_at, c.keep_recent
                ),
            ));
        }
        if let Err(e) = check_base_url(&self.provider.base_url) {
            out.push(("provider.base_url".to_string(), e));
        }
        if self.default_level.trim().is_empty() {
            out.push((
                "default_level".to_string(),
                "expected a level name such as \"base\", found an empty string".to_string(),
            ));
        }
        out.extend(mcp::problems(&self.mcp_servers));
        out.extend(environments::problems(&self.environments));
        for (level, model) in &self.models {
            if model.model.trim().is_empty() && !model.unnamed {
                out.push((
                    format!("models.{level}"),
                    "expected a model name, found an empty string".to_string(),
                ));
            }
        }
        out
    }

    /// Cost in US dollars of one call's usage; 0 when the model has no price.
    pub fn cost(&self, model: &str, prompt_tokens: u64, completion_tokens: u64) -> f64 {
        self.prices.get(model).map_or(0.0, |p| {
            (prompt_tokens as f64 * p.input_per_mtok + completion_tokens as f64 * p.output_per_mtok)
                / 1_000_000.0
        })
    }
}

#[cfg(test)]
mod tests;
