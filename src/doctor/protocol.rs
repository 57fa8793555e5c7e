//! The tool protocol each model is spoken to with (`tool_protocol`), and why: declared in
//! the config, or `auto`'s table of model families measured to need the text protocol.

use super::Check;
use crate::config::Config;
use crate::model::ClientSettings;
use crate::model::families::Protocol;
use crate::roles::RoleSet;

/// One line per model in use.
pub(super) fn protocols(config: &Config, roles: Option<&RoleSet>, out: &mut Vec<Check>) {
    let settings = ClientSettings::from_config(config);
    let mut seen: Vec<String> = Vec::new();
    for (_, model) in super::checks::models_in_use(config, roles) {
        if seen.contains(&model) {
            continue;
        }
        let choice = settings.protocol_for(&model);
        let what = match choice.protocol {
            Protocol::Native => "native (the API's tools and tool_calls)",
            Protocol::Text => {
                "text (tools and calls written in the prompt, calls read from the reply)"
            }
        };
        out.push(Check::pass(
            "tool_protocol",
            format!("tool protocol of {model}: {what}; {}", choice.why),
        ));
        seen.push(model);
    }
}
