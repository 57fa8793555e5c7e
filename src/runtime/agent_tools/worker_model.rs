//! The model a worker runs on (issue 55 part 4): its spawn's `model` (a level or a model
//! name), else its role's, and never a costlier level than `[limits] max_worker_model`
//! (a cheap persona spawned an expensive worker in Kilo Code #12565). The model chosen
//! here is the one its requests carry: it is the worker's model in the team.

use crate::config::{Config, ModelLevel};
use crate::roles::Role;

/// The worker's model, or why the spawn is refused (for the spawning model to read).
pub fn choose(config: &Config, role: &Role, asked: Option<&str>) -> Result<String, String> {
    let asked = asked.map(str::trim).filter(|m| !m.is_empty());
    if role.agent.is_some() {
        if let Some(m) = asked {
            return Err(format!(
                "role `{}` is another agent, which runs on its own model: leave model \
                 (`{m}`) out",
                role.name
            ));
        }
        return Ok(role.model(config));
    }
    let (named, model) = match asked {
        Some(a) if config.models.contains_key(a) => (a.to_string(), config.model_for_level(a)),
        Some(a) => (
            a.to_string(),
            config
                .model_override
                .clone()
                .unwrap_or_else(|| a.to_string()),
        ),
        None => (role_named(config, role), role.model(config)),
    };
    // `--model` puts every agent on one model: no worker can cost more than another.
    if let (Some(max), None) = (config.limits.max_worker_model, &config.model_override)
        && let Some(why) = costlier(config, max, &model)
    {
        let whose = match asked {
            Some(_) => format!("model `{named}`"),
            None => format!("role `{}` runs on `{named}`, which", role.name),
        };
        let allowed: Vec<_> = ModelLevel::ALL
            .into_iter()
            .filter(|l| *l <= max)
            .map(|l| format!("\"{l}\""))
            .collect();
        return Err(format!(
            "{whose} ({model}) {why} than limits.max_worker_model = \"{max}\" allows: spawn \
             it with model {}",
            allowed.join(" or ")
        ));
    }
    Ok(model)
}

/// What a role asks for when the spawn names no model: its model, else its level.
fn role_named(config: &Config, role: &Role) -> String {
    let pick = |s: &Option<String>| s.clone().filter(|m| !m.trim().is_empty());
    pick(&role.model)
        .or_else(|| pick(&role.level))
        .unwrap_or_else(|| config.default_level.clone())
}

/// Why `model` is above `max`: "is a costlier level", "costs more", or
/// "has no price to weigh"; `None` when it is within it.
fn costlier(config: &Config, max: ModelLevel, model: &str) -> Option<&'static str> {
    // Weighed by the model it comes to, not the level's name: where base and smart
    // name one model, asking for smart costs nothing more.
    let level = ModelLevel::ALL
        .into_iter()
        .find(|l| config.model_for_level(l.as_str()) == model);
    if let Some(level) = level {
        return (level > max).then_some("is a costlier level");
    }
    let ceiling = config.model_for_level(max.as_str());
    match (config.prices.get(model), config.prices.get(&ceiling)) {
        (Some(p), Some(c)) => (p.input_per_mtok > c.input_per_mtok
            || p.output_per_mtok > c.output_per_mtok)
            .then_some("costs more"),
        _ => Some("has no price in [prices] to weigh, so it may cost more"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role(level: &str) -> Role {
        let ws = tempfile::tempdir().unwrap();
        let roles = crate::roles::load_roles_from(None, ws.path()).unwrap();
        let mut r = roles.get("architect").unwrap().clone();
        r.level = Some(level.into());
        r
    }

    fn config(max: Option<ModelLevel>) -> Config {
        let mut c = Config::default();
        c.models
            .insert("smart".into(), crate::config::LevelModel::new("gpt-4o"));
        c.limits.max_worker_model = max;
        c
    }

    #[test]
    fn the_spawns_model_wins_over_the_roles_and_a_level_names_its_model() {
        let c = config(None);
        assert_eq!(choose(&c, &role("smart"), None).unwrap(), "gpt-4o");
        assert_eq!(
            choose(&c, &role("smart"), Some("fast")).unwrap(),
            "gpt-4.1-mini"
        );
        assert_eq!(
            choose(&c, &role("smart"), Some("gpt-4.1-nano")).unwrap(),
            "gpt-4.1-nano"
        );
    }

    #[test]
    fn max_worker_model_refuses_a_costlier_level_by_name_model_or_price() {
        let c = config(Some(ModelLevel::Base));
        let e = choose(&c, &role("smart"), None).unwrap_err();
        assert!(
            e.contains(
                "role `architect` runs on `smart`, which (gpt-4o) is a costlier level than \
                 limits.max_worker_model = \"base\" allows: spawn it with model \"fast\" or \"base\""
            ),
            "{e}"
        );
        assert!(choose(&c, &role("smart"), Some("smart")).is_err());
        assert!(
            choose(&c, &role("smart"), Some("gpt-4o")).is_err(),
            "smart's model"
        );
        assert_eq!(choose(&c, &role("smart"), Some("base")).unwrap(), "gpt-4.1");
        // Not a level's model: weighed by its price against base's (gpt-4.1, $2 / $8).
        assert_eq!(
            choose(&c, &role("fast"), Some("gpt-4o-mini")).unwrap(),
            "gpt-4o-mini"
        );
        let e = choose(&c, &role("fast"), Some("o3-pro")).unwrap_err();
        assert!(e.contains("has no price in [prices]"), "{e}");
    }
}
