use super::*;
use crate::config::Assist;
use std::fs;
use tempfile::TempDir;

/// A user dir and a workspace in real temp dirs.
struct Fixture {
    _tmp: TempDir,
    user: PathBuf,
    workspace: PathBuf,
}

impl Fixture {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let user = tmp.path().join("user");
        let workspace = tmp.path().join("ws");
        fs::create_dir_all(&user).unwrap();
        fs::create_dir_all(workspace.join(".squad")).unwrap();
        Self {
            _tmp: tmp,
            user,
            workspace,
        }
    }
    fn user_file(&self, text: &str) -> PathBuf {
        let p = self.user.join("config.toml");
        fs::write(&p, text).unwrap();
        p
    }
    fn ws_file(&self, text: &str) -> PathBuf {
        let p = self.workspace.join(".squad/config.toml");
        fs::write(&p, text).unwrap();
        p
    }
    fn extra_file(&self, text: &str) -> PathBuf {
        let p = self.workspace.join("extra.toml");
        fs::write(&p, text).unwrap();
        p
    }
    fn sources(&self, env: &[(&str, &str)]) -> ConfigSources {
        ConfigSources {
            user_dir: Some(self.user.clone()),
            workspace: self.workspace.clone(),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }
    fn load(&self, env: &[(&str, &str)], o: &ConfigOverrides) -> Result<Config, ConfigError> {
        load_config_from(&self.sources(env), o)
    }
}

#[test]
fn no_files_gives_defaults() {
    let f = Fixture::new();
    let c = f.load(&[], &ConfigOverrides::default()).unwrap();
    assert_eq!(c, Config::default());
}

#[test]
fn a_file_changes_only_the_keys_it_sets() {
    let f = Fixture::new();
    f.ws_file("[limits]\nmax_depth = 5\n[models]\nfast = \"tiny\"\n");
    let c = f.load(&[], &ConfigOverrides::default()).unwrap();
    let mut want = Config::default();
    want.limits.max_depth = 5;
    want.models.insert("fast".into(), "tiny".into());
    assert_eq!(c, want);
    assert_eq!(c.models["base"], "gpt-4.1");
}

#[test]
fn layers_apply_in_order_defaults_user_workspace_file_env_flags() {
    let f = Fixture::new();
    f.user_file(
        "default_level = \"fast\"\napproval = \"auto\"\n[provider]\nbase_url = \"http://user/v1\"\nmax_retries = 9\n[limits]\nmax_depth = 1\nmax_live_agents = 2\nmax_iterations = 3\n",
    );
    f.ws_file("[provider]\nbase_url = \"http://ws/v1\"\n[limits]\nmax_live_agents = 20\nmax_iterations = 30\n");
    let extra = f.extra_file("[limits]\nmax_iterations = 300\n");
    let o = ConfigOverrides {
        config_file: Some(extra.clone()),
        ..Default::default()
    };

    let c = f.load(&[], &o).unwrap();
    assert_eq!(c.default_level, "fast"); // user only
    assert_eq!(c.provider.max_retries, 9); // user only
    assert_eq!(c.limits.max_depth, 1); // user only
    assert_eq!(c.limits.max_live_agents, 20); // workspace beats user
    assert_eq!(c.limits.max_iterations, 300); // --config beats workspace
    assert_eq!(c.provider.base_url, "http://ws/v1");
    assert_eq!(c.approval, ApprovalPolicy::Auto);
    assert_eq!(c.limits.max_concurrent_requests, None); // default: the server's word

    // env beats files
    let env = [
        ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
        ("SQUAD_APPROVAL", "read-only"),
        ("SQUAD_MODEL", "env-model"),
    ];
    let c = f.load(&env, &o).unwrap();
    assert_eq!(c.provider.base_url, "http://127.0.0.1:9/v1");
    assert_eq!(c.approval, ApprovalPolicy::ReadOnly);
    assert!(
        c.models.values().all(|m| m == "env-model"),
        "{:?}",
        c.models
    );
    assert_eq!(c.model_for_level("smart"), "env-model");
    assert_eq!(c.limits.max_iterations, 300);

    // flags beat env
    let o = ConfigOverrides {
        config_file: Some(extra),
        base_url: Some("http://127.0.0.1:11434/v1".into()),
        model: Some("flag-model".into()),
        approval: Some(ApprovalPolicy::Ask),
        profile: None,
        sandbox: Some(crate::config::SandboxMode::ReadOnly),
        wire_api: None,
    };
    let c = f.load(&env, &o).unwrap();
    assert_eq!(c.sandbox.mode, crate::config::SandboxMode::ReadOnly);
    assert_eq!(c.provider.base_url, "http://127.0.0.1:11434/v1");
    assert_eq!(c.approval, ApprovalPolicy::Ask);
    assert_eq!(c.model_for_level("fast"), "flag-model");
    assert_eq!(c.model_for_level("some-level"), "flag-model");
    assert_eq!(c.model_override.as_deref(), Some("flag-model"));
}

#[test]
fn missing_user_dir_and_files_are_fine() {
    let f = Fixture::new();
    let mut s = f.sources(&[]);
    s.user_dir = Some(f.user.join("does-not-exist"));
    assert_eq!(
        load_config_from(&s, &ConfigOverrides::default()).unwrap(),
        Config::default()
    );
    s.user_dir = None;
    assert!(load_config_from(&s, &ConfigOverrides::default()).is_ok());
}

#[test]
fn missing_config_file_is_an_error() {
    let f = Fixture::new();
    let path = f.workspace.join("nope.toml");
    let o = ConfigOverrides {
        config_file: Some(path.clone()),
        ..Default::default()
    };
    let err = f.load(&[], &o).unwrap_err();
    assert!(matches!(&err, ConfigError::MissingFile { path: p } if *p == path));
    assert!(err.to_string().contains("nope.toml"), "{err}");
}

#[test]
fn syntax_error_names_file_and_line() {
    let f = Fixture::new();
    let path = f.ws_file("[limits]\nmax_depth = 3\nmax_iterations = = 4\n");
    let err = f.load(&[], &ConfigOverrides::default()).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!("config error in {}: invalid TOML", path.display())),
        "{msg}"
    );
    assert!(msg.contains("line 3, column"), "{msg}");
}

#[test]
fn wrong_type_names_file_key_and_expectation() {
    let f = Fixture::new();
    let path = f.ws_file("[limits]\nmax_depth = \"three\"\n");
    let err = f.load(&[], &ConfigOverrides::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "config error in {}: limits.max_depth: expected an integer, found a string \"three\" (line 2, column 13)",
            path.display()
        )
    );
}

#[test]
fn unknown_key_lists_known_keys() {
    let f = Fixture::new();
    f.ws_file("[limits]\nmax_depth = 2\n");
    let path = f.user_file("[provder]\nbase_url = \"http://x/v1\"\n");
    let err = f.load(&[], &ConfigOverrides::default()).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!(
            "config error in {}: unknown key 'provder' (known keys: provider, models, default_level,",
            path.display()
        )),
        "{msg}"
    );
    let path = f.ws_file("[limits]\nmax_dept = 2\n");
    let f_err = f.load(&[], &ConfigOverrides::default()).unwrap_err();
    // the user file is read first and is still broken
    assert!(f_err.to_string().contains("provder"));
    f.user_file("");
    let msg = f
        .load(&[], &ConfigOverrides::default())
        .unwrap_err()
        .to_string();
    assert!(
        msg.starts_with(&format!(
            "config error in {}: limits: unknown key 'max_dept' (known keys: max_depth,",
            path.display()
        )),
        "{msg}"
    );
}

#[test]
fn bad_value_in_a_file_names_the_file() {
    let f = Fixture::new();
    let path = f.extra_file("approval = \"sometimes\"\n[limits]\nmax_live_agents = 0\n");
    let o = ConfigOverrides {
        config_file: Some(path.clone()),
        ..Default::default()
    };
    let msg = f.load(&[], &o).unwrap_err().to_string();
    assert!(
        msg.starts_with(&format!(
            "config error in {}: approval: expected one of ask, auto, read-only, found \"sometimes\"",
            path.display()
        )),
        "{msg}"
    );
    fs::write(&path, "[limits]\nmax_live_agents = 0\n").unwrap();
    let msg = f.load(&[], &o).unwrap_err().to_string();
    assert_eq!(
        msg,
        format!(
            "config error in {}: limits.max_live_agents: expected at least 1, found 0",
            path.display()
        )
    );
    fs::write(&path, "[limits]\nmax_tokens_per_agent = 0\n").unwrap();
    let msg = f.load(&[], &o).unwrap_err().to_string();
    assert!(
        msg.contains("limits.max_tokens_per_agent: expected at least 1, found 0"),
        "{msg}"
    );
    fs::write(&path, "[limits]\nmax_session_cost_usd = -1.0\n").unwrap();
    let msg = f.load(&[], &o).unwrap_err().to_string();
    assert!(
        msg.contains("limits.max_session_cost_usd: expected a positive amount of US dollars"),
        "{msg}"
    );
    fs::write(
        &path,
        "[limits]\nmax_tokens_per_agent = 50000\nmax_cost_per_agent_usd = 0.5\n\
         max_session_cost_usd = 5\nmax_agent_wall_s = 600\n",
    )
    .unwrap();
    let l = f.load(&[], &o).unwrap().limits;
    assert_eq!(
        (
            l.max_tokens_per_agent,
            l.max_cost_per_agent_usd,
            l.max_session_cost_usd,
            l.max_agent_wall_s
        ),
        (Some(50_000), Some(0.5), Some(5.0), Some(600))
    );
    assert_eq!(
        crate::config::Config::default().limits.max_session_cost_usd,
        None
    );
    fs::write(&path, "[provider]\nbase_url = \"localhost:11434\"\n").unwrap();
    let msg = f.load(&[], &o).unwrap_err().to_string();
    assert!(msg.contains("provider.base_url: expected a URL"), "{msg}");
}

#[test]
fn bad_env_values_name_the_variable() {
    let f = Fixture::new();
    let err = f
        .load(&[("SQUAD_APPROVAL", "yolo")], &ConfigOverrides::default())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "config error in environment variable SQUAD_APPROVAL: expected one of ask, auto, read-only, found \"yolo\""
    );
    let err = f
        .load(
            &[("OPENAI_BASE_URL", "api.example")],
            &ConfigOverrides::default(),
        )
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("config error in environment variable OPENAI_BASE_URL"),
        "{err}"
    );
    // empty values count as unset
    let c = f
        .load(
            &[("SQUAD_APPROVAL", ""), ("SQUAD_MODEL", " ")],
            &ConfigOverrides::default(),
        )
        .unwrap();
    assert_eq!(c, Config::default());
}

#[test]
fn bad_base_url_flag_is_named() {
    let f = Fixture::new();
    let o = ConfigOverrides {
        base_url: Some("127.0.0.1:8080".into()),
        ..Default::default()
    };
    let msg = f.load(&[], &o).unwrap_err().to_string();
    assert!(msg.starts_with("config error in --base-url:"), "{msg}");
}

#[test]
fn config_dir_env_overrides_the_platform_dir() {
    let env: HashMap<String, String> = [(
        CONFIG_DIR_ENV.to_string(),
        "/tmp/squad-test-dir".to_string(),
    )]
    .into();
    assert_eq!(
        user_config_dir_from(&env),
        Some(PathBuf::from("/tmp/squad-test-dir"))
    );
    let env: HashMap<String, String> = [(CONFIG_DIR_ENV.to_string(), String::new())].into();
    if let Some(dir) = user_config_dir_from(&env) {
        assert!(dir.ends_with("squad"), "{}", dir.display());
    }
}

#[test]
fn merge_is_deep() {
    let mut base: toml::Table = "[a]\nx = 1\ny = 2\n[b]\nz = 3\n".parse().unwrap();
    let upper: toml::Table = "[a]\ny = 20\nw = 4\n".parse().unwrap();
    merge(&mut base, upper);
    let want: toml::Table = "[a]\nx = 1\ny = 20\nw = 4\n[b]\nz = 3\n".parse().unwrap();
    assert_eq!(base, want);
}

#[test]
fn a_profile_applies_over_the_files_and_under_env_and_flags() {
    let f = Fixture::new();
    f.user_file(
        "[limits]\nmax_depth = 1\n[profiles.local]\napproval = \"auto\"\nprovider.base_url = \"http://127.0.0.1:8080/v1\"\nprovider.api_key_env = \"\"\n[profiles.local.models]\nbase = \"qwen\"\n",
    );
    // The workspace file adds to the user's profile, key by key, and sets max_depth after it.
    f.ws_file("[limits]\nmax_depth = 2\n[profiles.local.limits]\nmax_depth = 4\n");
    let none = f.load(&[], &ConfigOverrides::default()).unwrap();
    assert_eq!(none.profile, None);
    assert_eq!(none.models["base"], "gpt-4.1");
    assert_eq!(none.limits.max_depth, 2);
    assert_eq!(none.profiles["local"].models["base"], "qwen");

    let flag = ConfigOverrides {
        profile: Some("local".into()),
        ..Default::default()
    };
    let c = f.load(&[], &flag).unwrap();
    assert_eq!(c.profile.as_deref(), Some("local"));
    assert_eq!(c.models["base"], "qwen");
    assert_eq!(c.models["fast"], "gpt-4.1-mini"); // maps merge key by key
    assert_eq!(c.provider.base_url, "http://127.0.0.1:8080/v1");
    assert_eq!(c.provider.api_key_env, "");
    assert_eq!(c.approval, ApprovalPolicy::Auto);
    assert_eq!(c.limits.max_depth, 4); // the profile beats every file

    // SQUAD_PROFILE does the same; --profile wins over it.
    let c = f.load(&[("SQUAD_PROFILE", "local")], &ConfigOverrides::default());
    assert_eq!(c.unwrap().models["base"], "qwen");
    let err = f.load(
        &[("SQUAD_PROFILE", "local")],
        &ConfigOverrides {
            profile: Some("remote".into()),
            ..Default::default()
        },
    );
    assert!(err.is_err());

    // Environment variables and flags still win over the profile.
    let env = [
        ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
        ("SQUAD_APPROVAL", "read-only"),
    ];
    let c = f.load(&env, &flag).unwrap();
    assert_eq!(c.provider.base_url, "http://127.0.0.1:9/v1");
    assert_eq!(c.approval, ApprovalPolicy::ReadOnly);
    let o = ConfigOverrides {
        model: Some("flag-model".into()),
        ..flag.clone()
    };
    assert_eq!(
        f.load(&[], &o).unwrap().model_for_level("base"),
        "flag-model"
    );
}

#[test]
fn an_unknown_profile_names_the_known_ones_and_where_it_came_from() {
    let f = Fixture::new();
    let err = f
        .load(&[("SQUAD_PROFILE", "local")], &ConfigOverrides::default())
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("'local'") && msg.contains("SQUAD_PROFILE"),
        "{msg}"
    );
    assert!(msg.contains("[profiles.NAME]"), "{msg}");
    f.ws_file("[profiles.fast]\n[profiles.cheap]\ndefault_level = \"fast\"\n");
    let o = ConfigOverrides {
        profile: Some("local".into()),
        ..Default::default()
    };
    let msg = f.load(&[], &o).unwrap_err().to_string();
    assert!(msg.contains("--profile"), "{msg}");
    assert!(msg.contains("known profiles: cheap, fast"), "{msg}");
}

#[test]
fn a_broken_profile_names_the_file_and_the_key() {
    let f = Fixture::new();
    let path = f.ws_file("[profiles.local.limits]\nmax_depth = \"three\"\n");
    let msg = f
        .load(&[], &ConfigOverrides::default())
        .unwrap_err()
        .to_string();
    assert!(
        msg.starts_with(&format!(
            "config error in {}: profiles.local.limits.max_depth: expected an integer",
            path.display()
        )),
        "{msg}"
    );
    f.ws_file("[profiles.local.limits]\nmax_live_agents = 0\n");
    let msg = f
        .load(&[], &ConfigOverrides::default())
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("profiles.local.limits.max_live_agents: expected at least 1"),
        "{msg}"
    );
    f.ws_file("[profiles.local.profiles.inner]\n");
    let msg = f
        .load(&[], &ConfigOverrides::default())
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("profiles.local.profiles: a profile cannot hold"),
        "{msg}"
    );
}

#[test]
fn check_files_reports_each_layer() {
    let f = Fixture::new();
    f.user_file("[limits]\nmax_depth = 2\n");
    f.ws_file("[limits]\nmax_depth = \"x\"\n");
    let o = ConfigOverrides {
        config_file: Some(f.workspace.join("missing.toml")),
        ..Default::default()
    };
    let checks = check_files(&f.sources(&[]), &o);
    assert_eq!(checks.len(), 3);
    assert!(matches!(checks[0].state, Ok(true)), "{:?}", checks[0]);
    assert!(checks[1].path.ends_with(".squad/config.toml"));
    assert!(matches!(checks[1].state, Err(ConfigError::Invalid { .. })));
    assert!(matches!(
        checks[2].state,
        Err(ConfigError::MissingFile { .. })
    ));
    fs::remove_file(f.user.join("config.toml")).unwrap();
    let checks = check_files(&f.sources(&[]), &ConfigOverrides::default());
    assert!(matches!(checks[0].state, Ok(false)));
}

#[test]
fn wire_api_per_provider_profile_and_level_and_the_flag_wins() {
    use crate::config::WireApi;
    let f = Fixture::new();
    f.ws_file(
        "[models]\nsmart = { model = \"gpt-5-codex\", wire_api = \"responses\" }\n\
         [profiles.openai]\nprovider.wire_api = \"responses\"\n\
         [profiles.openai.models]\nfast = { model = \"mini\", wire_api = \"chat\" }\n",
    );
    let c = f.load(&[], &ConfigOverrides::default()).unwrap();
    assert_eq!(c.provider.wire_api, WireApi::Chat, "chat by default");
    assert_eq!(c.wire_for_model("gpt-5-codex"), WireApi::Responses);
    assert_eq!(c.wire_for_model("gpt-4.1"), WireApi::Chat);
    assert_eq!(c.model_for_level("smart"), "gpt-5-codex");

    let profile = ConfigOverrides {
        profile: Some("openai".into()),
        ..Default::default()
    };
    let c = f.load(&[], &profile).unwrap();
    assert_eq!(c.wire_for_model("gpt-4.1"), WireApi::Responses);
    assert_eq!(c.wire_for_model("mini"), WireApi::Chat);

    let flag = ConfigOverrides {
        wire_api: Some(WireApi::Chat),
        ..profile
    };
    let c = f.load(&[], &flag).unwrap();
    assert_eq!(c.wire_for_model("gpt-4.1"), WireApi::Chat);
    assert_eq!(
        c.wire_for_model("gpt-5-codex"),
        WireApi::Chat,
        "--wire-api wins over a level"
    );

    f.ws_file("[models]\nsmart = { model = \"m\", wire_api = \"grpc\" }\n");
    let e = f
        .load(&[], &ConfigOverrides::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("models.smart") && e.contains("responses"), "{e}");
}

#[test]
fn assist_is_set_per_model_per_level_and_per_profile() {
    let f = Fixture::new();
    f.user_file(
        "[models]\nfast = { model = \"small\", assist = \"auto\" }\n\
         [models.\"big\"]\nassist = \"off\"\n\
         [profiles.local.models]\nbase = { model = \"tiny\", assist = \"off\" }\n",
    );
    let c = f.load(&[], &ConfigOverrides::default()).unwrap();
    assert_eq!(
        c.assist_for_model("big"),
        Assist::Off,
        "a table named after the model"
    );
    assert_eq!(c.models["big"].model, "big");
    assert_eq!(c.assist_for_model("small"), Assist::Auto);
    assert_eq!(c.assist_for_model("gpt-4.1"), Assist::Auto, "the default");
    assert_eq!(
        c.assist_for_model("tiny"),
        Assist::Auto,
        "no profile applied"
    );
    let local = f
        .load(
            &[],
            &ConfigOverrides {
                profile: Some("local".into()),
                ..ConfigOverrides::default()
            },
        )
        .unwrap();
    assert_eq!(local.assist_for_model("tiny"), Assist::Off);
    // `--model big` keeps what the config says of big itself, and only that.
    let forced = f
        .load(
            &[],
            &ConfigOverrides {
                model: Some("big".into()),
                ..ConfigOverrides::default()
            },
        )
        .unwrap();
    assert_eq!(forced.assist_for_model("big"), Assist::Off);
    let other = f
        .load(
            &[],
            &ConfigOverrides {
                model: Some("small2".into()),
                ..ConfigOverrides::default()
            },
        )
        .unwrap();
    assert_eq!(other.assist_for_model("small2"), Assist::Auto);
    // A value that is neither is named.
    f.user_file("[models]\nbase = { model = \"m\", assist = \"sometimes\" }\n");
    let err = f
        .load(&[], &ConfigOverrides::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("assist") || err.contains("sometimes"), "{err}");
}

#[test]
fn tool_protocol_per_provider_profile_and_level_and_a_typo_is_named() {
    use crate::config::ToolProtocol;
    let f = Fixture::new();
    f.ws_file(
        "[models]\nfast = { model = \"tiny\", tool_protocol = \"text\" }\n\
         [models.\"big\"]\ntool_protocol = \"native\"\n\
         [profiles.local]\nprovider.tool_protocol = \"text\"\n",
    );
    let c = f.load(&[], &ConfigOverrides::default()).unwrap();
    assert_eq!(
        c.provider.tool_protocol,
        ToolProtocol::Auto,
        "auto by default"
    );
    assert_eq!(c.tool_protocol_for_model("tiny"), ToolProtocol::Text);
    assert_eq!(c.tool_protocol_for_model("big"), ToolProtocol::Native);
    assert_eq!(c.tool_protocol_for_model("gpt-4.1"), ToolProtocol::Auto);
    let local = ConfigOverrides {
        profile: Some("local".into()),
        ..Default::default()
    };
    let c = f.load(&[], &local).unwrap();
    assert_eq!(c.tool_protocol_for_model("gpt-4.1"), ToolProtocol::Text);
    assert_eq!(c.tool_protocol_for_model("big"), ToolProtocol::Native);
    // `--model` keeps what the config says of that model itself.
    let forced = ConfigOverrides {
        model: Some("tiny".into()),
        ..Default::default()
    };
    let c = f.load(&[], &forced).unwrap();
    assert_eq!(c.tool_protocol_for_model("tiny"), ToolProtocol::Text);
    let forced = ConfigOverrides {
        model: Some("other".into()),
        ..Default::default()
    };
    let c = f.load(&[], &forced).unwrap();
    assert_eq!(c.tool_protocol_for_model("other"), ToolProtocol::Auto);

    f.ws_file("[provider]\ntool_protocol = \"txt\"\n");
    let e = f
        .load(&[], &ConfigOverrides::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("provider.tool_protocol")
            && e.contains("expected one of auto, native, text, found \"txt\""),
        "{e}"
    );
    f.ws_file("[models]\nfast = { model = \"m\", tool_protocol = \"fenced\" }\n");
    let e = f
        .load(&[], &ConfigOverrides::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("models.fast") && e.contains("text"), "{e}");
}

#[test]
fn environments_parse_per_kind_and_merge_across_files() {
    let f = Fixture::new();
    f.user_file(
        "[environments.box]\nkind = \"container\"\nimage = \"debian:12\"\nmemory = \"2g\"\n\
         [environments.far]\nkind = \"ssh\"\nhost = \"me@far\"\nworkdir = \"/srv/w\"\n",
    );
    // A project file changes one key of the user's environment.
    f.ws_file("[environments.box]\ncpus = 1.5\n");
    let c = f.load(&[], &ConfigOverrides::default()).unwrap();
    let b = &c.environments["box"];
    assert_eq!(b.kind, Some(crate::config::EnvKind::Container));
    assert_eq!((b.image.as_deref(), b.cpus), (Some("debian:12"), Some(1.5)));
    assert_eq!(b.memory_bytes(), Some(2 << 30));
    assert_eq!(
        (b.network_mode(), b.workdir_or_default()),
        ("none", "/work")
    );
    let far = &c.environments["far"];
    assert_eq!(far.host.as_deref(), Some("me@far"));
    assert_eq!(far.squad_or_default(), "squad");
}

#[test]
fn a_typo_an_unknown_kind_or_a_missing_key_in_an_environment_is_named() {
    let f = Fixture::new();
    let path = f.user_file("[environments.box]\nkind = \"container\"\nimgae = \"x\"\n");
    let msg = f
        .load(&[], &ConfigOverrides::default())
        .unwrap_err()
        .to_string();
    assert!(
        msg.starts_with(&format!(
            "config error in {}: environments.box: unknown key 'imgae' (known keys: kind, host,",
            path.display()
        )),
        "{msg}"
    );
    f.user_file("[environments.box]\nkind = \"vm\"\n");
    let msg = f
        .load(&[], &ConfigOverrides::default())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("environments.box.kind"), "{msg}");
    assert!(
        msg.contains("expected one of local, ssh, container, found \"vm\""),
        "{msg}"
    );
    f.user_file("[environments.box]\nkind = \"ssh\"\nhost = \"h\"\nimage = \"x\"\n");
    let msg = f
        .load(&[], &ConfigOverrides::default())
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("environments.box.image: not a key of a `ssh` environment"),
        "{msg}"
    );
    f.user_file("[environments.box]\nkind = \"container\"\nimage = \"x\"\nmemory = \"lots\"\n");
    let msg = f
        .load(&[], &ConfigOverrides::default())
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("environments.box.memory: expected bytes or a size"),
        "{msg}"
    );
    f.user_file("[environments.box]\nkind = \"ssh\"\nhost = \"h\"\n");
    let msg = f
        .load(&[], &ConfigOverrides::default())
        .unwrap_err()
        .to_string();
    assert_eq!(
        msg,
        "config error: environments.box: an ssh environment needs `workdir` (the folder workers work in there)"
    );
    f.user_file("[environments.box]\nimage = \"x\"\n");
    let msg = f
        .load(&[], &ConfigOverrides::default())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("environments.box: expected `kind"), "{msg}");
}
