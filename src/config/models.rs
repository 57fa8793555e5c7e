//! Which API a model is spoken to with, how it is told its tools, and what a model level
//! names: a model, or a model with the wire it needs (`smart = { model = "gpt-5-codex",
//! wire_api = "responses" }`).

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;

/// The HTTP API requests go out on. Local servers all speak chat completions; OpenAI's
/// `-codex` models are served only on Responses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WireApi {
    /// `POST /chat/completions`
    #[default]
    Chat,
    /// `POST /responses`, stateless (`store: false`, the whole history each time).
    Responses,
}

impl WireApi {
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "chat" => Some(Self::Chat),
            "responses" => Some(Self::Responses),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Chat => "chat",
            Self::Responses => "responses",
        }
    }

    /// The path posted to, after the base URL.
    pub fn path(self) -> &'static str {
        match self {
            Self::Chat => "/chat/completions",
            Self::Responses => "/responses",
        }
    }
}

impl fmt::Display for WireApi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a model gets squad's help for weak models: notices, a request without tools
/// once it repeats itself after its work is done, corrected spawn budgets. `off` leaves
/// the hard limits, the budgets and the loop guards. Every help fires only on evidence
/// that the model is stuck, so `auto` costs a capable model nothing; `off` is for a user
/// who wants none of it anyway.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Assist {
    #[default]
    Auto,
    Off,
}

impl Assist {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Off => "off",
        }
    }
}

/// How a model is told its tools and how its calls come back. `native`: the API's `tools`
/// parameter and `tool_calls`. `text`: no `tools` parameter; squad writes the tool list and
/// the call format into the system message and reads calls from the reply's text, for a
/// model whose server-side chat template fails at tools (`model::families`). `auto`: `text`
/// only for a model family in the table measured to need it, served locally; else native.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolProtocol {
    #[default]
    Auto,
    Native,
    Text,
}

impl ToolProtocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Native => "native",
            Self::Text => "text",
        }
    }
}

impl fmt::Display for ToolProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl super::Config {
    /// How `model` is told its tools, as declared: that of a level named after it, else of
    /// the first level naming it that sets one, else `provider.tool_protocol`. `auto` is
    /// resolved against the family table by `model::families`.
    pub fn tool_protocol_for_model(&self, model: &str) -> ToolProtocol {
        self.level_tool_protocol(model)
            .unwrap_or(self.provider.tool_protocol)
    }

    /// What the levels say of `model`'s tool protocol, if any does.
    pub(super) fn level_tool_protocol(&self, model: &str) -> Option<ToolProtocol> {
        self.models
            .get(model)
            .and_then(|l| l.tool_protocol)
            .or_else(|| {
                self.models
                    .values()
                    .filter(|l| l.model == model)
                    .find_map(|l| l.tool_protocol)
            })
    }
}

/// What a level of `[models]` names. Written as a plain model name unless the level
/// needs a wire of its own, so the common case stays one string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LevelModel {
    pub model: String,
    /// `None`: `provider.wire_api`.
    pub wire_api: Option<WireApi>,
    /// `None`: `auto`.
    pub assist: Option<Assist>,
    /// `None`: `provider.tool_protocol`.
    pub tool_protocol: Option<ToolProtocol>,
    /// A table without `model`: the level's own name is the model; the loader fills it in.
    pub unnamed: bool,
}

impl LevelModel {
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            wire_api: None,
            assist: None,
            tool_protocol: None,
            unnamed: false,
        }
    }
}

impl From<&str> for LevelModel {
    fn from(model: &str) -> Self {
        Self::new(model)
    }
}

impl From<String> for LevelModel {
    fn from(model: String) -> Self {
        Self::new(model)
    }
}

impl PartialEq<str> for LevelModel {
    fn eq(&self, other: &str) -> bool {
        self.model == other
    }
}

impl PartialEq<&str> for LevelModel {
    fn eq(&self, other: &&str) -> bool {
        self.model == *other
    }
}

impl PartialEq<String> for LevelModel {
    fn eq(&self, other: &String) -> bool {
        self.model == *other
    }
}

impl fmt::Display for LevelModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.model)
    }
}

impl Serialize for LevelModel {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match (self.wire_api, self.assist, self.tool_protocol) {
            (None, None, None) => s.serialize_str(&self.model),
            (wire_api, assist, tool_protocol) => Full {
                model: Some(self.model.clone()),
                wire_api,
                assist,
                tool_protocol,
            }
            .serialize(s),
        }
    }
}

/// The table form.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Full {
    /// Left out: the level's own name is the model (`[models."qwen3-coder"] assist = "off"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    wire_api: Option<WireApi>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    assist: Option<Assist>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tool_protocol: Option<ToolProtocol>,
}

impl<'de> Deserialize<'de> for LevelModel {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LevelModel;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a model name or a table { model = \"…\", wire_api = \"chat\" | \"responses\", assist = \"auto\" | \"off\", tool_protocol = \"auto\" | \"native\" | \"text\" }")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<LevelModel, E> {
                Ok(LevelModel::new(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<LevelModel, A::Error> {
                let full = Full::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(LevelModel {
                    unnamed: full.model.is_none(),
                    model: full.model.unwrap_or_default(),
                    wire_api: full.wire_api,
                    assist: full.assist,
                    tool_protocol: full.tool_protocol,
                })
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[derive(Debug, Deserialize, Serialize, PartialEq)]
    struct Doc {
        models: BTreeMap<String, LevelModel>,
    }

    #[test]
    fn a_level_is_a_name_or_a_table_and_round_trips() {
        let text = "[models]\nfast = \"mini\"\nsmart = { model = \"gpt-5-codex\", wire_api = \"responses\" }\n";
        let doc: Doc = toml::from_str(text).unwrap();
        assert_eq!(doc.models["fast"], LevelModel::new("mini"));
        assert_eq!(
            doc.models["smart"],
            LevelModel {
                model: "gpt-5-codex".into(),
                wire_api: Some(WireApi::Responses),
                assist: None,
                tool_protocol: None,
                unnamed: false,
            }
        );
        let back: Doc = toml::from_str(&toml::to_string(&doc).unwrap()).unwrap();
        assert_eq!(back, doc);
        assert!(toml::from_str::<Doc>("[models]\nx = { model = \"m\", wire = \"chat\" }").is_err());
        assert!(
            toml::from_str::<Doc>("[models]\nx = { model = \"m\", wire_api = \"grpc\" }").is_err()
        );
    }

    #[test]
    fn wire_names_parse() {
        assert_eq!(WireApi::parse(" Responses "), Some(WireApi::Responses));
        assert_eq!(WireApi::parse("chat"), Some(WireApi::Chat));
        assert_eq!(WireApi::parse("completions"), None);
        assert_eq!(WireApi::Responses.path(), "/responses");
    }
}
