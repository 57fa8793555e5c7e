//! Settings, layered: built-in defaults, the user's config file, the workspace's
//! `.squad/config.toml`, `--config FILE`, environment variables, then flags.

mod load;

pub use load::{ConfigError, ConfigOverrides, load_config};

use crate::protocol::ApprovalPolicy;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub provider: ProviderConfig,
    /// Model names per level (`fast`, `base`, `smart`); roles name a level or a model.
    pub models: BTreeMap<String, String>,
    /// Level used by roles that name neither a level nor a model.
    pub default_level: String,
    /// Prices per model name, for cost figures.
    pub prices: BTreeMap<String, Price>,
    pub approval: ApprovalPolicy,
    pub limits: Limits,
    pub tools: ToolsConfig,
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
    pub max_depth: u32,
    pub max_live_agents: u32,
    pub max_iterations: u32,
    pub max_concurrent_requests: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolsConfig {
    pub test_command: Option<String>,
    pub command_timeout_s: u64,
    pub max_output_bytes: usize,
    pub read_max_bytes: usize,
}

impl Default for Config {
    fn default() -> Self {
        let models = [
            ("fast", "gpt-4.1-mini"),
            ("base", "gpt-4.1"),
            ("smart", "gpt-4.1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
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
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_depth: 3,
            max_live_agents: 16,
            max_iterations: 50,
            max_concurrent_requests: 8,
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
        self.models
            .get(level)
            .cloned()
            .unwrap_or_else(|| level.to_string())
    }

    /// Cost in US dollars of one call's usage; 0 when the model has no price.
    pub fn cost(&self, model: &str, prompt_tokens: u64, completion_tokens: u64) -> f64 {
        self.prices.get(model).map_or(0.0, |p| {
            (prompt_tokens as f64 * p.input_per_mtok + completion_tokens as f64 * p.output_per_mtok)
                / 1_000_000.0
        })
    }
}
