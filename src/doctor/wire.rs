//! The wire each model is spoken to with (`provider.wire_api`, a level's `wire_api`,
//! `--wire-api`), and with `--probe` a one-token request on it: the one check that costs
//! a request, so only when asked for.

use super::Check;
use crate::config::{Config, WireApi};
use crate::model::{ClientSettings, ModelError, probe_wire};
use crate::roles::RoleSet;

/// One line per model in use: its wire, and with `probe` whether the server answers on it.
pub(super) async fn wires(
    config: &Config,
    roles: Option<&RoleSet>,
    probe: bool,
    out: &mut Vec<Check>,
) {
    let settings = ClientSettings::from_config(config);
    let mut seen: Vec<String> = Vec::new();
    for (who, model) in super::checks::models_in_use(config, roles) {
        if seen.contains(&model) {
            continue;
        }
        seen.push(model.clone());
        let wire = config.wire_for_model(&model);
        let who = who.trim_start_matches('(').trim_end_matches(')');
        let line = format!("wire of {model} ({who}): {wire} (POST {})", wire.path());
        if !probe {
            out.push(Check::skip(
                "wire",
                format!("{line}; not tried (squad doctor --probe sends a short request)"),
            ));
            continue;
        }
        out.push(match probe_wire(&settings, &model, wire).await {
            Ok(()) => Check::pass("wire", format!("{line}: answers a short request")),
            Err(e) => Check::fail("wire", format!("{line}: {e}"), fix(wire, &e)),
        });
    }
}

fn fix(wire: WireApi, e: &ModelError) -> String {
    let other = match wire {
        WireApi::Chat => WireApi::Responses,
        WireApi::Responses => WireApi::Chat,
    };
    match e {
        ModelError::Http {
            status: 404 | 405, ..
        } => format!(
            "this server does not serve {}: set provider.wire_api = \"{other}\" (or the \
             level's wire_api), or run with --wire-api {other}",
            wire.path()
        ),
        ModelError::Http {
            status: 401 | 403, ..
        } => "check the key in the variable provider.api_key_env names".to_string(),
        _ => "check the server's log; the line says what it answered".to_string(),
    }
}
