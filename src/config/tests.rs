use super::*;

/// The documented default file, so the docs and the code cannot drift apart.
const DEFAULT_CONFIG_FILE: &str = include_str!("../../config/config.toml");

#[test]
fn documented_default_file_equals_built_in_defaults() {
    let (parsed, _) = parse::parse_toml::<Config>(DEFAULT_CONFIG_FILE).unwrap();
    assert_eq!(parsed, Config::default());
    // every section and top-level key is spelled out, not just left to defaults
    let table: toml::Table = DEFAULT_CONFIG_FILE.parse().unwrap();
    let keys: Vec<&str> = table.keys().map(String::as_str).collect();
    for key in [
        "provider",
        "models",
        "default_level",
        "prices",
        "approval",
        "limits",
        "tools",
        "guards",
        "team",
        "verify",
        "sandbox",
        "mcp_servers",
        "environments",
        "context",
        "context_windows",
        "checkpoints",
        "profiles",
    ] {
        assert!(keys.contains(&key), "config/config.toml lacks {key}");
    }
    let default = toml::Table::try_from(Config::default()).unwrap();
    for (section, value) in &default {
        if let toml::Value::Table(inner) = value {
            for key in inner.keys() {
                assert!(
                    table[section].get(key).is_some(),
                    "config/config.toml lacks {section}.{key}"
                );
            }
        }
    }
}

#[test]
fn defaults_have_no_problems() {
    assert!(Config::default().problems().is_empty());
}

#[test]
fn api_key_comes_from_the_named_variable() {
    let mut c = Config::default();
    // PATH is set and non-empty in any process that can run tests.
    c.provider.api_key_env = "PATH".into();
    assert_eq!(c.api_key(), std::env::var("PATH").ok());
    c.provider.api_key_env = "SQUAD_TEST_SURELY_UNSET_VARIABLE_1f3a".into();
    assert_eq!(c.api_key(), None);
    c.provider.api_key_env = String::new();
    assert_eq!(c.api_key(), None);
}

#[test]
fn force_model_maps_every_level_and_unknown_ones() {
    let mut c = Config {
        default_level: "custom".into(),
        ..Config::default()
    };
    c.force_model("m");
    assert!(c.models.values().all(|v| v == "m"));
    assert_eq!(c.models["custom"], "m");
    assert_eq!(c.model_for_level("anything"), "m");
}

#[test]
fn only_openai_itself_needs_a_key() {
    assert!(needs_key("https://api.openai.com/v1"));
    assert!(needs_key("https://API.openai.com:443/v1/"));
    assert!(!needs_key("http://127.0.0.1:11434/v1"));
    assert!(!needs_key("https://api.openai.com.example.org/v1"));
    let mut c = Config::default();
    c.provider.api_key_env = "SQUAD_TEST_SURELY_UNSET_VARIABLE_1f3a".into();
    let message = c.missing_key().unwrap();
    for needle in [
        "SQUAD_TEST_SURELY_UNSET_VARIABLE_1f3a",
        "--base-url",
        "OPENAI_BASE_URL",
        "--demo",
    ] {
        assert!(message.contains(needle), "{needle}: {message}");
    }
    c.provider.base_url = "http://127.0.0.1:8080/v1".into();
    assert_eq!(c.missing_key(), None);
}

#[test]
fn base_url_needs_a_scheme_and_host() {
    assert!(check_base_url("http://127.0.0.1:11434/v1").is_ok());
    assert!(check_base_url("https://api.openai.com/v1").is_ok());
    assert!(check_base_url("127.0.0.1:11434").is_err());
    assert!(check_base_url("http://").is_err());
}
