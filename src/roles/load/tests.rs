use super::*;
use crate::config::Config;
use crate::roles::{Audience, command_line, install_hint};
use std::fs;
use tempfile::TempDir;

struct Dirs {
    _tmp: TempDir,
    user: PathBuf,
    workspace: PathBuf,
}

impl Dirs {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let user = tmp.path().join("user");
        let workspace = tmp.path().join("ws");
        fs::create_dir_all(user.join("roles")).unwrap();
        fs::create_dir_all(workspace.join(".squad/roles")).unwrap();
        Self {
            _tmp: tmp,
            user,
            workspace,
        }
    }
    fn user_role(&self, file: &str, text: &str) -> PathBuf {
        let p = self.user.join("roles").join(file);
        fs::write(&p, text).unwrap();
        p
    }
    fn ws_role(&self, file: &str, text: &str) -> PathBuf {
        let p = self.workspace.join(".squad/roles").join(file);
        fs::write(&p, text).unwrap();
        p
    }
    fn load(&self) -> RoleSet {
        load_roles_from(Some(&self.user), &self.workspace).unwrap()
    }
}

const BUILT_IN_NAMES: [&str; 13] = [
    "agentic_coder",
    "architect",
    "claude_code",
    "code_reviewer",
    "codex",
    "copilot",
    "documentation",
    "gemini",
    "implementer",
    "opencode",
    "squad_acp",
    "test_writer",
    "tester",
];

#[test]
fn built_ins_load_without_warnings_and_reference_only_known_roles() {
    let tmp = tempfile::tempdir().unwrap();
    let set = load_roles_from(None, tmp.path()).unwrap();
    assert!(set.warnings.is_empty(), "{:?}", set.warnings);
    assert_eq!(set.names(), BUILT_IN_NAMES);
    // The agent roles are checked in `built_in_agent_roles_name_the_agents_users_have`.
    for role in set.iter().filter(|r| r.agent.is_none()) {
        assert_eq!(role.source, RoleSource::BuiltIn);
        assert!(
            role.system_prompt.len() > 200,
            "{} prompt too thin",
            role.name
        );
        assert!(!role.description.is_empty(), "{}", role.name);
        for other in role.enabled_agents.iter().chain(&role.handoffs) {
            assert!(set.get(other).is_some(), "{} names {other}", role.name);
        }
        // each built-in file is named after its role
        assert!(
            BUILT_INS
                .iter()
                .any(|(file, _)| *file == format!("{}.toml", role.name))
        );
    }
}

#[test]
fn built_ins_match_their_briefs() {
    // Which tools each built-in gets is checked with the tool registry, in
    // runtime/toolbox/tests.rs.
    let tmp = tempfile::tempdir().unwrap();
    let set = load_roles_from(None, tmp.path()).unwrap();
    let copilot = set.require(DEFAULT_ROLE).unwrap();
    assert_eq!(
        copilot.handoffs,
        ["architect", "implementer", "tester", "documentation"]
    );
    assert_eq!(copilot.enabled_agents.len(), 7);
    // workers are told to finish with return_results
    for name in ["agentic_coder", "test_writer"] {
        let role = set.require(name).unwrap();
        assert!(role.system_prompt.contains("return_results"), "{name}");
        assert!(role.handoffs.is_empty(), "{name}");
    }
    // A reviewer also runs for /review, where it has no return_results: its prompt names
    // no tool, and the runtime tells a reviewer worker how to finish (41b5abf).
    let reviewer = set.require("code_reviewer").unwrap();
    assert!(!reviewer.system_prompt.contains("return_results"));
    assert!(reviewer.handoffs.is_empty());
    assert_eq!(
        set.require("agentic_coder").unwrap().enabled_agents,
        ["test_writer", "code_reviewer", "documentation"]
    );
}

#[test]
fn user_role_overrides_built_in_and_workspace_overrides_user() {
    let d = Dirs::new();
    let user = d.user_role(
        "mine.toml",
        "name = \"copilot\"\nsystem_prompt = \"user copilot\"\nlevel = \"fast\"\n",
    );
    d.user_role(
        "helper.toml",
        "name = \"helper\"\nsystem_prompt = \"user helper\"\nhandoffs = [\"copilot\"]\n",
    );
    let set = d.load();
    assert!(set.warnings.is_empty(), "{:?}", set.warnings);
    let copilot = set.require("copilot").unwrap();
    assert_eq!(copilot.system_prompt, "user copilot");
    assert_eq!(copilot.source, RoleSource::File(user));
    assert_eq!(
        set.require("architect").unwrap().source,
        RoleSource::BuiltIn
    );

    let ws = d.ws_role(
        "copilot.toml",
        "name = \"copilot\"\nsystem_prompt = \"workspace copilot\"\nenabled_agents = [\"helper\"]\n",
    );
    let set = d.load();
    assert!(set.warnings.is_empty(), "{:?}", set.warnings);
    let copilot = set.require("copilot").unwrap();
    assert_eq!(copilot.system_prompt, "workspace copilot");
    assert_eq!(copilot.source, RoleSource::File(ws.clone()));
    assert_eq!(copilot.source.to_string(), ws.display().to_string());
    assert_eq!(copilot.level, None); // replaced whole, not merged
    assert_eq!(set.require("helper").unwrap().system_prompt, "user helper");
}

#[test]
fn broken_files_are_skipped_with_warnings_naming_file_and_key() {
    let d = Dirs::new();
    let cases = [
        (
            "syntax.toml",
            "name = \"a\"\nsystem_prompt = \"\"\"\nunterminated\n",
            "invalid TOML",
        ),
        (
            "unknown.toml",
            "name = \"b\"\nsystem_prompt = \"x\"\nenabled_agent = []\n",
            "unknown key 'enabled_agent' (known keys: name,",
        ),
        (
            "noname.toml",
            "system_prompt = \"x\"\n",
            "missing key 'name'",
        ),
        (
            "noprompt.toml",
            "name = \"c\"\n",
            "system_prompt: expected the role's instructions",
        ),
        (
            "type.toml",
            "name = \"d\"\nsystem_prompt = \"x\"\ntools = \"read_file\"\n",
            "tools: expected an array, found a string \"read_file\"",
        ),
        (
            "item.toml",
            "name = \"e\"\nsystem_prompt = \"x\"\nhandoffs = [\"copilot\", 3]\n",
            "handoffs[1]: expected a string, found the integer 3",
        ),
        (
            "ref.toml",
            "name = \"f\"\nsystem_prompt = \"x\"\nenabled_agents = [\"ghost\"]\n",
            "enabled_agents: unknown role 'ghost' (known roles: agentic_coder, architect,",
        ),
        (
            "empty.toml",
            "name = \"g\"\nsystem_prompt = \"  \"\n",
            "system_prompt: expected the role's instructions",
        ),
        (
            "badname.toml",
            "name = \"my role\"\nsystem_prompt = \"x\"\n",
            "name: expected a name of letters",
        ),
        (
            "badglob.toml",
            "name = \"h\"\nsystem_prompt = \"x\"\n[[verify_rules]]\nid = \"lint\"\ncommand = \"true\"\nwhen_changed = [\"src/[a\"]\n",
            "verify_rules[0]: `when_changed` pattern \"src/[a\" is not a valid glob",
        ),
        (
            "lead.toml",
            "name = \"i\"\nsystem_prompt = \"x\"\nenabled_agents = [\"tester\"]\ncoordinate_only = \"yes\"\n",
            "coordinate_only: expected true or false, found a string \"yes\" (line 4",
        ),
        (
            "alone.toml",
            "name = \"j\"\nsystem_prompt = \"x\"\ncoordinate_only = true\n",
            "coordinate_only: a persona that coordinates only needs workers",
        ),
    ];
    for (file, text, _) in &cases {
        d.ws_role(file, text);
    }
    d.ws_role("notes.md", "not a role");
    let set = d.load();
    for (file, _, expected) in &cases {
        let path = d.workspace.join(".squad/roles").join(file);
        let prefix = format!("skipped role file {}: ", path.display());
        let w = set
            .warnings
            .iter()
            .find(|w| w.starts_with(&prefix))
            .unwrap_or_else(|| panic!("no warning for {file}: {:?}", set.warnings));
        assert!(w.contains(expected), "{file}: {w}");
    }
    assert_eq!(set.warnings.len(), cases.len(), "{:?}", set.warnings);
    assert_eq!(set.names(), BUILT_IN_NAMES);
}

/// Issue 54 part 4: `coordinate_only` in a persona's file is read (and left out of a
/// file that does not say it, so every built-in is as it was).
#[test]
fn a_persona_may_start_coordinating_only() {
    let d = Dirs::new();
    d.ws_role(
        "lead.toml",
        "name = \"lead\"\nsystem_prompt = \"Lead.\"\nenabled_agents = [\"tester\"]\ncoordinate_only = true\n",
    );
    let set = d.load();
    assert!(set.warnings.is_empty(), "{:?}", set.warnings);
    assert!(set.require("lead").unwrap().coordinate_only);
    assert!(set.iter().all(|r| r.name == "lead" || !r.coordinate_only));
}

#[test]
fn wrong_type_warning_has_a_line() {
    let d = Dirs::new();
    d.ws_role(
        "x.toml",
        "name = \"x\"\nsystem_prompt = \"p\"\nmax_iterations = \"many\"\n",
    );
    let set = d.load();
    assert_eq!(set.warnings.len(), 1);
    assert!(
        set.warnings[0].ends_with(
            "max_iterations: expected an integer, found a string \"many\" (line 3, column 18)"
        ),
        "{}",
        set.warnings[0]
    );
}

#[test]
fn skipping_a_broken_override_keeps_the_role_below() {
    let d = Dirs::new();
    d.user_role(
        "t.toml",
        "name = \"tester\"\nsystem_prompt = \"user tester\"\n",
    );
    let ws = d.ws_role(
        "t.toml",
        "name = \"tester\"\nsystem_prompt = \"ws tester\"\nhandoffs = [\"nobody\"]\n",
    );
    let set = d.load();
    assert_eq!(set.require("tester").unwrap().system_prompt, "user tester");
    assert_eq!(set.warnings.len(), 1);
    assert!(set.warnings[0].contains(&ws.display().to_string()));
    assert!(set.warnings[0].contains("handoffs: unknown role 'nobody'"));
}

#[test]
fn dropping_a_role_drops_roles_that_need_it() {
    let d = Dirs::new();
    d.ws_role(
        "a.toml",
        "name = \"a\"\nsystem_prompt = \"x\"\nenabled_agents = [\"b\"]\n",
    );
    d.ws_role(
        "b.toml",
        "name = \"b\"\nsystem_prompt = \"x\"\nhandoffs = [\"ghost\"]\n",
    );
    let set = d.load();
    assert!(set.get("a").is_none() && set.get("b").is_none());
    assert_eq!(set.warnings.len(), 2, "{:?}", set.warnings);
}

#[test]
fn user_roles_may_reference_each_other_across_layers() {
    let d = Dirs::new();
    d.ws_role(
        "lead.toml",
        "name = \"lead\"\nsystem_prompt = \"x\"\nenabled_agents = [\"helper\"]\n",
    );
    d.user_role("helper.toml", "name = \"helper\"\nsystem_prompt = \"y\"\n");
    let set = d.load();
    assert!(set.warnings.is_empty(), "{:?}", set.warnings);
    assert!(set.get("lead").is_some());
}

#[test]
fn same_name_twice_in_one_folder_warns() {
    let d = Dirs::new();
    d.ws_role("1.toml", "name = \"x\"\nsystem_prompt = \"first\"\n");
    d.ws_role("2.toml", "name = \"x\"\nsystem_prompt = \"second\"\n");
    let set = d.load();
    assert_eq!(set.require("x").unwrap().system_prompt, "second");
    assert_eq!(set.warnings.len(), 1);
    assert!(set.warnings[0].contains("defines role 'x' again"));
}

#[test]
fn an_agent_file_in_a_roles_folder_is_named_and_other_files_are_left_alone() {
    let d = Dirs::new();
    d.ws_role("reviewer.md", "---\nname: reviewer\n---\nReview.\n");
    d.ws_role("README.md", "# Our roles\n");
    d.ws_role("notes.txt", "---\n");
    let set = d.load();
    assert!(set.require("reviewer").is_err());
    assert_eq!(set.warnings.len(), 1, "{:?}", set.warnings);
    let w = &set.warnings[0];
    assert!(
        w.contains("reviewer.md looks like an agent file, but role files here are *.toml")
            && w.contains(".claude/agents/"),
        "{w}"
    );
}

#[test]
fn unknown_role_error_lists_known_roles() {
    let tmp = tempfile::tempdir().unwrap();
    let set = load_roles_from(None, tmp.path()).unwrap();
    let err = set.require("archtect").unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "unknown role 'archtect'; known roles: {}",
            BUILT_IN_NAMES.join(", ")
        )
    );
}

#[test]
fn missing_folders_are_not_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let set = load_roles_from(Some(&tmp.path().join("nowhere")), &tmp.path().join("ws")).unwrap();
    assert!(set.warnings.is_empty());
    assert_eq!(set.names().len(), BUILT_IN_NAMES.len());
}

#[test]
fn example_in_docs_is_a_valid_role() {
    let doc = include_str!("../../../docs/roles.md");
    let start = doc.find("```toml\n").unwrap() + "```toml\n".len();
    let text = &doc[start..start + doc[start..].find("```").unwrap()];
    let d = Dirs::new();
    d.ws_role("reviewer.toml", text);
    let set = d.load();
    assert!(set.warnings.is_empty(), "{:?}", set.warnings);
    let role = set.require("reviewer").unwrap();
    assert!(!role.offers("run_command", Audience::Everyone, false));
    assert!(role.offers("spawn_agent", Audience::Supervisors, false));
    assert_eq!(role.test_command.as_deref(), Some("cargo test --quiet"));
}

/// `spawn_batch` is offered only where a supervisor's `tools` names it: not to copilot
/// (no list: every other tool), nor to a role that names it but may spawn nobody.
#[test]
fn a_named_tool_is_offered_only_to_a_supervisor_that_lists_it() {
    let tmp = tempfile::tempdir().unwrap();
    let set = load_roles_from(None, tmp.path()).unwrap();
    let copilot = set.require("copilot").unwrap();
    assert!(!copilot.offers("spawn_batch", Audience::Named, false));
    let mut batcher = copilot.clone();
    batcher.tools = Some(vec!["read_file".into(), "spawn_batch".into()]);
    assert!(batcher.offers("spawn_batch", Audience::Named, false));
    batcher.enabled_agents.clear();
    assert!(!batcher.offers("spawn_batch", Audience::Named, false));
}

#[test]
fn role_model_precedence() {
    let tmp = tempfile::tempdir().unwrap();
    let set = load_roles_from(None, tmp.path()).unwrap();
    let mut config = Config::default();
    config.models.insert("fast".into(), "small-model".into());
    config.models.insert("base".into(), "base-model".into());
    let mut role = set.require("copilot").unwrap().clone();
    role.level = Some("fast".into());
    role.model = None;
    assert_eq!(role.model(&config), "small-model");
    role.level = None;
    assert_eq!(role.model(&config), "base-model"); // default_level
    role.model = Some("pinned".into());
    role.level = Some("fast".into());
    assert_eq!(role.model(&config), "pinned"); // model wins over level
    config.force_model("forced");
    assert_eq!(role.model(&config), "forced"); // --model wins over everything
}

#[test]
fn a_role_names_its_environment_and_an_unknown_one_is_named_with_the_known_ones() {
    let d = Dirs::new();
    let path = d.user_role(
        "remote.toml",
        "name = \"remote\"\nsystem_prompt = \"x\"\nenvironment = \"box\"\n",
    );
    d.user_role(
        "empty.toml",
        "name = \"empty\"\nsystem_prompt = \"x\"\nenvironment = \" \"\n",
    );
    let mut set = d.load();
    assert_eq!(
        set.get("remote").unwrap().environment.as_deref(),
        Some("box")
    );
    assert!(
        set.get("empty").is_none(),
        "an empty environment is refused"
    );
    assert!(
        set.warnings
            .iter()
            .any(|w| w.contains("environment: expected the name")),
        "{:?}",
        set.warnings
    );
    let before = set.warnings.len();
    set.check_environments(&["box".to_string()]);
    assert_eq!(set.warnings.len(), before, "a known environment passes");
    set.check_environments(&["far".to_string(), "lab".to_string()]);
    let last = set.warnings.last().unwrap();
    assert_eq!(
        last,
        &format!(
            "role file {}: environment: unknown environment 'box', its workers cannot be spawned (known environments: far, lab)",
            path.display()
        )
    );
}

#[test]
fn built_in_agent_roles_name_the_agents_users_have() {
    let tmp = tempfile::tempdir().unwrap();
    let set = load_roles_from(None, tmp.path()).unwrap();
    let lines: Vec<String> = set
        .iter()
        .filter_map(|r| Some(format!("{}: {}", r.name, command_line(r.agent.as_ref()?))))
        .collect();
    assert_eq!(
        lines,
        [
            "claude_code: claude-code-acp",
            "codex: codex-acp",
            "gemini: gemini --acp",
            "opencode: opencode acp",
            "squad_acp: squad acp",
        ]
    );
    assert_eq!(
        install_hint("codex-acp"),
        "npm install -g @zed-industries/codex-acp"
    );
    // No native worker's tools or prompt, and the persona does not spawn them yet.
    let copilot = set.require(DEFAULT_ROLE).unwrap();
    assert!(!copilot.enabled_agents.iter().any(|a| a == "opencode"));
}

#[test]
fn an_agent_role_file_and_agent_files_parse_into_an_agent_command() {
    let d = Dirs::new();
    d.ws_role(
        "oc.toml",
        "name = \"oc\"\ndescription = \"OpenCode, pinned\"\n\
         agent = { command = \"opencode\", args = [\"acp\"], env = { OPENCODE_CONFIG = \"oc.json\" }, cwd = \"/srv\" }\n",
    );
    let agents = d.workspace.join(".claude/agents");
    fs::create_dir_all(&agents).unwrap();
    fs::write(
        agents.join("gem.md"),
        "---\nname: gem\nagent:\n  command: gemini\n  args: [--acp, --yolo]\n---\n",
    )
    .unwrap();
    let codex = d.workspace.join(".codex/agents");
    fs::create_dir_all(&codex).unwrap();
    fs::write(
        codex.join("cx.toml"),
        "name = \"cx\"\nagent = { command = \"/opt/codex-acp\" }\n",
    )
    .unwrap();
    let set = d.load();
    assert!(set.warnings.is_empty(), "{:?}", set.warnings);
    let oc = set.require("oc").unwrap().agent.clone().unwrap();
    assert_eq!(
        oc,
        crate::acp_client::AgentCommand {
            command: "opencode".into(),
            args: vec!["acp".into()],
            env: [("OPENCODE_CONFIG".to_string(), "oc.json".to_string())].into(),
            cwd: Some("/srv".into()),
        }
    );
    let gem = set.require("gem").unwrap().agent.clone().unwrap();
    assert_eq!(command_line(&gem), "gemini --acp --yolo");
    let cx = set.require("cx").unwrap().agent.clone().unwrap();
    assert_eq!(cx.command, "/opt/codex-acp");
    // A role without an agent still needs its instructions.
    d.ws_role("bare.toml", "name = \"bare\"\n");
    let set = d.load();
    assert!(
        set.warnings
            .iter()
            .any(|w| w.contains("bare.toml") && w.contains("system_prompt: expected")),
        "{:?}",
        set.warnings
    );
}

#[test]
fn an_agent_with_a_typo_or_a_bad_type_is_skipped_with_its_key_named() {
    let d = Dirs::new();
    d.ws_role(
        "typo.toml",
        "name = \"t\"\nagent = { comand = \"opencode\" }\n",
    );
    d.ws_role(
        "args.toml",
        "name = \"a\"\nagent = { command = \"opencode\", args = \"acp\" }\n",
    );
    d.ws_role("empty.toml", "name = \"e\"\nagent = { command = \" \" }\n");
    let agents = d.workspace.join(".claude/agents");
    fs::create_dir_all(&agents).unwrap();
    fs::write(
        agents.join("md.md"),
        "---\nname: md\nagent:\n  command: gemini\n  argz: [--acp]\n---\n",
    )
    .unwrap();
    let set = d.load();
    let warning = |file: &str| {
        set.warnings
            .iter()
            .find(|w| w.contains(file))
            .unwrap_or_else(|| panic!("no warning for {file}: {:?}", set.warnings))
            .clone()
    };
    let typo = warning("typo.toml");
    assert!(typo.contains("agent") && typo.contains("comand"), "{typo}");
    let args = warning("args.toml");
    assert!(args.contains("agent.args"), "{args}");
    assert!(args.contains("expected"), "{args}");
    let empty = warning("empty.toml");
    assert!(
        empty.contains("agent.command: expected the agent's program"),
        "{empty}"
    );
    let md = warning("md.md");
    assert!(md.contains("agent: unknown field `argz`"), "{md}");
    for name in ["t", "a", "e", "md"] {
        assert!(set.get(name).is_none(), "{name} loaded");
    }
}
