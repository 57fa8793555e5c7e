//! Which tool protocol a model is spoken to with (`tool_protocol`), and why: what the config
//! declares, or for `auto` the table of model families measured to need the text protocol.
//! Never guessed from a reply: a model in no row keeps the API's own tools (`native`), so
//! help for a weak model costs a strong one nothing.

use crate::config::{Config, ToolProtocol, WireApi, is_local};

/// A model family measured to fail at the API's tools with its own chat template and to
/// do better told its tools in the prompt. docs/configuration.md shows the same table.
pub struct Family {
    pub name: &'static str,
    /// Every piece must be in the model's name (lowercased, `:`/`_`/`/`/spaces as `-`).
    pub all_of: &'static [&'static str],
    /// One of these must be in it too (the sizes measured); empty: any.
    pub one_of: &'static [&'static str],
    /// What was measured, where.
    pub evidence: &'static str,
}

/// The families `auto` speaks to in text, on a local server only.
pub const TEXT_FAMILIES: &[Family] = &[Family {
    name: "Qwen2.5-Coder 0.5B and 1.5B Instruct",
    all_of: &["qwen2.5-coder"],
    one_of: &["-0.5b", "-1.5b"],
    evidence: "on llama.cpp with the model's own template: 0 of 15 prompts answered with \
               tool_calls (both sizes; ../shared/real-llm/README.md), 1 of 5 real-model suite \
               scenarios right; with the tool list and calls written as text (the fenced \
               template's bytes): see docs/benchmarks.md, \"The stock template with the text \
               protocol\"",
}];

/// The protocol a request goes out with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Native,
    Text,
}

/// A model's protocol and the reason, for `squad doctor` and the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choice {
    pub protocol: Protocol,
    pub why: String,
}

/// The family row `model` falls in, if any.
pub fn family(model: &str) -> Option<&'static Family> {
    let name: String = model
        .to_ascii_lowercase()
        .chars()
        .map(|c| {
            if matches!(c, ':' | '_' | '/' | ' ') {
                '-'
            } else {
                c
            }
        })
        .collect();
    TEXT_FAMILIES.iter().find(|f| {
        f.all_of.iter().all(|p| name.contains(p))
            && (f.one_of.is_empty() || f.one_of.iter().any(|p| name.contains(p)))
    })
}

/// `declared` resolved for `model` on a server at `base_url` spoken to on `wire`.
pub fn choose(declared: ToolProtocol, model: &str, base_url: &str, wire: WireApi) -> Choice {
    let (protocol, why) = match declared {
        ToolProtocol::Native => (Protocol::Native, "set in the config".to_string()),
        ToolProtocol::Text if wire == WireApi::Responses => (
            Protocol::Native,
            "text is set, but it is for chat completions; the Responses wire keeps its tools"
                .to_string(),
        ),
        ToolProtocol::Text => (Protocol::Text, "set in the config".to_string()),
        ToolProtocol::Auto => match family(model) {
            Some(f) if wire == WireApi::Chat && is_local(base_url) => (
                Protocol::Text,
                format!(
                    "auto: {} on a local server is in the table of families measured to need it",
                    f.name
                ),
            ),
            Some(f) if wire == WireApi::Chat => (
                Protocol::Native,
                format!(
                    "auto: {} is in the table, but the server is not local (a provider's own \
                     template is trusted)",
                    f.name
                ),
            ),
            _ => (
                Protocol::Native,
                "auto: the model is in no family measured to need text".to_string(),
            ),
        },
    };
    Choice { protocol, why }
}

/// What a session's client needs to choose per request (a model picked with `/model`
/// mid-session included): the declared protocols and where the server is.
#[derive(Clone, Debug, Default)]
pub struct Protocols {
    /// `provider.tool_protocol`.
    pub default: ToolProtocol,
    /// Models whose levels declare one.
    pub declared: Vec<(String, ToolProtocol)>,
}

impl Protocols {
    pub fn from_config(config: &Config) -> Self {
        let mut declared: Vec<(String, ToolProtocol)> = Vec::new();
        for level in config.models.values() {
            let model = &level.model;
            let protocol = config.tool_protocol_for_model(model);
            if protocol != config.provider.tool_protocol
                && !declared.iter().any(|(m, _)| m == model)
            {
                declared.push((model.clone(), protocol));
            }
        }
        Self {
            default: config.provider.tool_protocol,
            declared,
        }
    }

    pub fn declared_for(&self, model: &str) -> ToolProtocol {
        self.declared
            .iter()
            .find(|(m, _)| m == model)
            .map_or(self.default, |(_, p)| *p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOCAL: &str = "http://127.0.0.1:8080/v1";
    const REMOTE: &str = "https://api.example.com/v1";

    fn text(model: &str, url: &str) -> bool {
        choose(ToolProtocol::Auto, model, url, WireApi::Chat).protocol == Protocol::Text
    }

    #[test]
    fn auto_picks_text_only_for_a_measured_family_on_a_local_server() {
        for name in [
            "qwen2.5-coder-1.5b-instruct",
            "qwen2.5-coder:1.5b",
            "Qwen/Qwen2.5-Coder-0.5B-Instruct",
            "qwen2.5-coder-0.5b-instruct-q4_k_m",
        ] {
            assert!(text(name, LOCAL), "{name}");
            assert!(!text(name, REMOTE), "{name} remote");
            let c = choose(ToolProtocol::Auto, name, LOCAL, WireApi::Responses);
            assert_eq!(c.protocol, Protocol::Native, "{name} on Responses");
        }
        for name in [
            "gpt-4.1",
            "qwen2.5-coder:7b",
            "qwen2.5-coder-32b-instruct",
            "qwen2.5-coder",
            "qwen3-coder-30b",
            "llama3.2",
            "",
        ] {
            assert!(!text(name, LOCAL), "{name}");
        }
    }

    #[test]
    fn a_declared_protocol_wins_over_the_table() {
        let c = choose(
            ToolProtocol::Native,
            "qwen2.5-coder:1.5b",
            LOCAL,
            WireApi::Chat,
        );
        assert_eq!(c.protocol, Protocol::Native);
        assert_eq!(c.why, "set in the config");
        let c = choose(ToolProtocol::Text, "gpt-4.1", REMOTE, WireApi::Chat);
        assert_eq!(c.protocol, Protocol::Text);
        let c = choose(ToolProtocol::Text, "gpt-4.1", REMOTE, WireApi::Responses);
        assert_eq!(c.protocol, Protocol::Native, "{}", c.why);
    }

    #[test]
    fn protocols_follow_levels_then_the_provider() {
        let mut config = Config::default();
        config.models.insert(
            "small".into(),
            crate::config::LevelModel {
                tool_protocol: Some(ToolProtocol::Text),
                ..crate::config::LevelModel::new("tiny")
            },
        );
        let p = Protocols::from_config(&config);
        assert_eq!(p.declared_for("tiny"), ToolProtocol::Text);
        assert_eq!(p.declared_for("gpt-4.1"), ToolProtocol::Auto);
        config.provider.tool_protocol = ToolProtocol::Native;
        let p = Protocols::from_config(&config);
        assert_eq!(p.declared_for("gpt-4.1"), ToolProtocol::Native);
        assert_eq!(p.declared_for("tiny"), ToolProtocol::Text);
    }
}
