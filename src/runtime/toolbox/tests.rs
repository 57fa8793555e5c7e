//! One list of tool names, served by handlers; the role rules that decide who gets which.

use super::*;
use crate::roles::{DEFAULT_ROLE, RoleSet, load_roles_from};
use crate::tools::coding_tools;
use std::collections::HashSet;

fn toolbox() -> ToolBox {
    let mut coding = ToolRegistry::new();
    for t in coding_tools() {
        coding.register(t);
    }
    ToolBox::new(&coding, Arc::new(crate::mcp::McpHub::empty()))
}

fn built_ins() -> RoleSet {
    let tmp = tempfile::tempdir().unwrap();
    load_roles_from(None, tmp.path()).unwrap()
}

fn offers(role: &Role, name: &str, is_worker: bool) -> bool {
    toolbox()
        .tools_for(role, is_worker, None)
        .iter()
        .any(|t| t == name)
}

#[test]
fn every_tool_has_one_handler_and_a_unique_name() {
    let tb = toolbox();
    let names = tb.names();
    let unique: HashSet<&String> = names.iter().collect();
    assert_eq!(unique.len(), names.len(), "{names:?}");
    for n in &names {
        assert!(tb.handler(n).is_some(), "{n} has no handler");
    }
    // The coding tools and the seven agent tools.
    assert_eq!(names.len(), coding_tools().len() + agent_tools::all().len());
}

#[test]
fn no_built_in_role_names_a_tool_no_handler_serves() {
    let names = toolbox().names();
    for role in built_ins().iter() {
        for t in role
            .tools
            .iter()
            .flatten()
            .chain(role.excluded_tools.iter())
        {
            assert!(
                names.contains(t),
                "role {} names unknown tool {t}",
                role.name
            );
        }
    }
}

#[test]
fn a_role_file_naming_an_unknown_tool_is_warned_about() {
    let mut set = built_ins();
    let mut role = set.require("tester").unwrap().clone();
    role.name = "x".into();
    role.tools = Some(vec!["read_file".into(), "apply_diff".into()]);
    role.source = crate::roles::RoleSource::File("/r/x.toml".into());
    set.insert(role);
    set.check_tools(&toolbox().names(), &[]);
    assert_eq!(set.warnings.len(), 1, "{:?}", set.warnings);
    assert!(
        set.warnings[0].starts_with("role file /r/x.toml: tools: unknown tool 'apply_diff'"),
        "{}",
        set.warnings[0]
    );
}

#[test]
fn built_ins_get_the_tools_of_their_briefs() {
    let set = built_ins();
    let copilot = set.require(DEFAULT_ROLE).unwrap();
    for t in [
        "read_file",
        "edit_file",
        "search_files",
        "run_command",
        "spawn_agent",
    ] {
        assert!(offers(copilot, t, false), "copilot lacks {t}");
    }
    let architect = set.require("architect").unwrap();
    assert!(!offers(architect, "run_command", false));
    assert!(offers(architect, "write_file", false));
    assert!(offers(architect, "handoff_to", false));

    let reviewer = set.require("code_reviewer").unwrap();
    for t in [
        "write_file",
        "edit_file",
        "run_command",
        "run_tests",
        "spawn_agent",
    ] {
        assert!(!offers(reviewer, t, true), "code_reviewer must not get {t}");
    }
    assert!(offers(reviewer, "return_results", true));
    assert!(offers(reviewer, "read_file", true));
    let tester = set.require("tester").unwrap();
    assert!(offers(tester, "run_tests", false));
}

#[test]
fn agent_tool_rules() {
    let set = built_ins();
    let copilot = set.require("copilot").unwrap();
    assert!(offers(copilot, "handoff_to", false));
    assert!(!offers(copilot, "handoff_to", true)); // a worker never hands off
    assert!(!offers(copilot, "return_results", false));
    // Only a worker has a supervisor to message; the persona's first request stays lean.
    assert!(!offers(copilot, "message_supervisor", false));
    assert!(offers(copilot, "message_supervisor", true));
    let mut reviewer = set.require("code_reviewer").unwrap().clone();
    assert!(!offers(&reviewer, "get_agents", true));
    reviewer.enabled_agents = vec!["tester".into()];
    assert!(offers(&reviewer, "get_agents", true)); // granted by the rule, not `tools`
    reviewer.excluded_tools = vec!["despawn_agent".into()];
    assert!(!offers(&reviewer, "despawn_agent", true));
}

#[test]
fn ask_user_follows_tools_and_excluded_tools_like_a_coding_tool() {
    let set = built_ins();
    // Every built-in offers it, to personas and workers alike.
    for role in set.iter() {
        for is_worker in [false, true] {
            assert!(
                offers(role, "ask_user", is_worker),
                "{} lacks ask_user",
                role.name
            );
        }
    }
    let mut role = set.require("code_reviewer").unwrap().clone();
    role.tools = Some(vec!["read_file".into()]);
    assert!(
        !offers(&role, "ask_user", true),
        "a `tools` list without it"
    );
    let mut copilot = set.require("copilot").unwrap().clone();
    copilot.excluded_tools = vec!["ask_user".into()];
    assert!(!offers(&copilot, "ask_user", false));
}

#[test]
fn a_worker_never_gets_coding_tools_its_parent_lacks() {
    let set = built_ins();
    let coder = set.require("agentic_coder").unwrap();
    let ceiling = vec!["read_file".to_string(), "spawn_agent".to_string()];
    let tools = toolbox().tools_for(coder, true, Some(&ceiling));
    assert!(tools.contains(&"read_file".to_string()));
    assert!(!tools.contains(&"write_file".to_string()));
    // Agent tools follow the worker's own role.
    assert!(tools.contains(&"return_results".to_string()));
    assert!(!tools.contains(&"apply_patch".to_string()));
}

/// Copilot leaves `apply_patch` out of its own tools (its first request stays under 8 KB)
/// but has `write_file` and `edit_file`, so the workers it spawns that edit still get it.
#[test]
fn apply_patch_reaches_copilots_editing_workers_through_write_and_edit() {
    let set = built_ins();
    let copilot = set.require(DEFAULT_ROLE).unwrap();
    let persona = toolbox().tools_for(copilot, false, None);
    assert!(!persona.contains(&"apply_patch".to_string()), "{persona:?}");
    for role in [
        "implementer",
        "tester",
        "test_writer",
        "documentation",
        "architect",
        "agentic_coder",
    ] {
        let tools = toolbox().tools_for(set.require(role).unwrap(), true, Some(&persona));
        assert!(
            tools.contains(&"apply_patch".to_string()),
            "{role}: {tools:?}"
        );
    }
    let reviewer = toolbox().tools_for(set.require("code_reviewer").unwrap(), true, Some(&persona));
    assert!(!reviewer.contains(&"apply_patch".to_string()));
    // Only with both: a parent that may only write whole files does not pass on patches.
    let ceiling = vec!["read_file".to_string(), "write_file".to_string()];
    let tools = toolbox().tools_for(set.require("implementer").unwrap(), true, Some(&ceiling));
    assert!(!tools.contains(&"apply_patch".to_string()), "{tools:?}");
}

/// A model trained on V4A patches gets `apply_patch` where its role has `write_file` and
/// `edit_file`, in their place; its workers with another model get those two back.
#[test]
fn a_codex_model_is_offered_apply_patch_instead_of_write_and_edit() {
    let set = built_ins();
    let copilot = set.require(DEFAULT_ROLE).unwrap();
    let tb = toolbox();
    let has = |tools: &[String], n: &str| tools.iter().any(|t| t == n);
    for model in [
        "gpt-5-codex",
        "openai/gpt-5.1-codex-mini",
        "gpt-5",
        "gpt-oss-20b",
    ] {
        let tools = tb.tools_for_model(copilot, false, None, model);
        assert!(has(&tools, "apply_patch"), "{model}: {tools:?}");
        assert!(
            !has(&tools, "write_file") && !has(&tools, "edit_file"),
            "{tools:?}"
        );
    }
    let plain = tb.tools_for_model(copilot, false, None, "gpt-4.1");
    assert!(
        !has(&plain, "apply_patch") && has(&plain, "edit_file"),
        "{plain:?}"
    );
    let persona = tb.tools_for_model(copilot, false, None, "gpt-5-codex");
    let implementer = set.require("implementer").unwrap();
    let worker = tb.tools_for_model(implementer, true, Some(&persona), "qwen2.5-coder");
    assert!(
        has(&worker, "write_file") && has(&worker, "edit_file"),
        "{worker:?}"
    );
    // A role without file edits gets no patches either.
    let reviewer = set.require("code_reviewer").unwrap();
    let tools = tb.tools_for_model(reviewer, true, Some(&persona), "gpt-5-codex");
    assert!(!has(&tools, "apply_patch"), "{tools:?}");
}

#[test]
fn tool_sets_share_one_spec_list() {
    let tb = toolbox();
    let names: Arc<[String]> = vec!["read_file".to_string(), "spawn_agent".to_string()].into();
    let a = tb.specs_and_tokens(&names).0;
    let b = tb.specs_and_tokens(&names).0;
    assert!(Arc::ptr_eq(&a, &b));
    assert_eq!(a.len(), 2);
}

#[test]
fn mcp_tools_follow_tools_excluded_tools_and_mcp_servers() {
    let mut role = built_ins().require("copilot").unwrap().clone();
    // No lists: every server's tools.
    assert!(role.offers_mcp("everything", "everything__echo"));
    role.excluded_tools = vec!["everything__*".into()];
    assert!(!role.offers_mcp("everything", "everything__echo"));
    assert!(role.offers_mcp("git", "git__git_status"));
    role.excluded_tools = vec!["git__git_commit".into()];
    assert!(!role.offers_mcp("git", "git__git_commit"));
    assert!(role.offers_mcp("git", "git__git_status"));
    // An allow-list names them exactly or by server.
    role.excluded_tools.clear();
    role.tools = Some(vec![
        "read_file".into(),
        "git__*".into(),
        "everything__echo".into(),
    ]);
    assert!(role.offers_mcp("git", "git__git_log"));
    assert!(role.offers_mcp("everything", "everything__echo"));
    assert!(!role.offers_mcp("everything", "everything__get-sum"));
    // `mcp_servers` picks servers, whatever `tools` says; `excluded_tools` still wins.
    role.mcp_servers = Some(vec!["everything".into()]);
    role.excluded_tools = vec!["everything__get-env".into()];
    assert!(role.offers_mcp("everything", "everything__get-sum"));
    assert!(!role.offers_mcp("everything", "everything__get-env"));
    assert!(!role.offers_mcp("git", "git__git_log"));
    // `NAME__*` is a server pattern, not a wildcard for built-in tools.
    role.tools = Some(vec!["read_*".into()]);
    assert!(!role.allows_tool("read_file"));
}

#[test]
fn role_files_may_name_tools_of_configured_servers_only() {
    let mut set = built_ins();
    let mut role = set.require("tester").unwrap().clone();
    role.name = "x".into();
    role.tools = Some(vec!["read_file".into(), "git__git_status".into()]);
    role.excluded_tools = vec!["everything__*".into()];
    role.source = crate::roles::RoleSource::File("/r/x.toml".into());
    set.insert(role.clone());
    let servers = ["git".to_string(), "everything".to_string()];
    set.check_tools(&toolbox().names(), &servers);
    assert!(set.warnings.is_empty(), "{:?}", set.warnings);

    role.mcp_servers = Some(vec!["github".into()]);
    role.tools = Some(vec!["gitx__a".into()]);
    set.insert(role);
    set.check_tools(&toolbox().names(), &servers);
    assert_eq!(set.warnings.len(), 2, "{:?}", set.warnings);
    assert!(set.warnings[0].contains("tools: unknown tool 'gitx__a'"));
    assert!(
        set.warnings[0].ends_with("git__*, everything__*)"),
        "{}",
        set.warnings[0]
    );
    assert!(set.warnings[1].contains("mcp_servers: unknown MCP server 'github'"));
}

/// Each built-in tool's facts, as its handler says them: kind, reach, what its output
/// reports and how its cut output says to read on.
#[test]
fn every_built_in_tool_tells_its_kind_reach_reports_and_clip() {
    use crate::context::ClipHint;
    use crate::tools::{Reports, ToolKind};
    let tb = toolbox();
    let none = serde_json::json!({});
    let read_args = serde_json::json!({"path": "src/a.rs", "start_line": 40});
    let expected: &[(&str, &Value, ToolKind, Reach, Reports)] = &[
        (
            "read_file",
            &read_args,
            ToolKind::Read,
            Reach::Reads,
            Reports::Nothing,
        ),
        (
            "list_files",
            &none,
            ToolKind::Search,
            Reach::Reads,
            Reports::Nothing,
        ),
        (
            "search_files",
            &none,
            ToolKind::Search,
            Reach::Reads,
            Reports::Nothing,
        ),
        (
            "write_file",
            &none,
            ToolKind::Edit,
            Reach::ChangesFiles,
            Reports::Change,
        ),
        (
            "edit_file",
            &none,
            ToolKind::Edit,
            Reach::ChangesFiles,
            Reports::Change,
        ),
        (
            "apply_patch",
            &none,
            ToolKind::Edit,
            Reach::ChangesFiles,
            Reports::Change,
        ),
        (
            "run_command",
            &none,
            ToolKind::Execute,
            Reach::ChangesFiles,
            Reports::Nothing,
        ),
        (
            "run_tests",
            &none,
            ToolKind::Execute,
            Reach::ChangesFiles,
            Reports::TestRun,
        ),
        (
            "spawn_agent",
            &none,
            ToolKind::Other,
            Reach::Team,
            Reports::Nothing,
        ),
        (
            "wait_for_agents",
            &none,
            ToolKind::Other,
            Reach::Team,
            Reports::Results,
        ),
        (
            "speak_to_agent",
            &none,
            ToolKind::Other,
            Reach::Team,
            Reports::Nothing,
        ),
        (
            "get_agents",
            &none,
            ToolKind::Other,
            Reach::Team,
            Reports::Nothing,
        ),
        (
            "despawn_agent",
            &none,
            ToolKind::Other,
            Reach::Team,
            Reports::Nothing,
        ),
        (
            "return_results",
            &none,
            ToolKind::Other,
            Reach::Team,
            Reports::Nothing,
        ),
        (
            "message_supervisor",
            &none,
            ToolKind::Other,
            Reach::Team,
            Reports::Nothing,
        ),
        (
            "message_agent",
            &none,
            ToolKind::Other,
            Reach::Team,
            Reports::Nothing,
        ),
        (
            "spawn_batch",
            &none,
            ToolKind::Other,
            Reach::Team,
            Reports::Nothing,
        ),
        (
            "claim_task",
            &none,
            ToolKind::Think,
            Reach::Team,
            Reports::Nothing,
        ),
        (
            "submit_plan",
            &none,
            ToolKind::Think,
            Reach::Team,
            Reports::Nothing,
        ),
        (
            "review_plan",
            &none,
            ToolKind::Other,
            Reach::Team,
            Reports::Nothing,
        ),
        (
            "handoff_to",
            &none,
            ToolKind::Other,
            Reach::Team,
            Reports::Nothing,
        ),
        (
            "plan_tasks",
            &none,
            ToolKind::Think,
            Reach::Team,
            Reports::Nothing,
        ),
        (
            "update_task",
            &none,
            ToolKind::Think,
            Reach::Team,
            Reports::Nothing,
        ),
        (
            "get_tasks",
            &none,
            ToolKind::Think,
            Reach::Team,
            Reports::Nothing,
        ),
        (
            "ask_user",
            &none,
            ToolKind::Think,
            Reach::Team,
            Reports::Nothing,
        ),
    ];
    assert_eq!(
        expected.len(),
        tb.names().len(),
        "every tool is listed here"
    );
    for (name, args, kind, reach, reports) in expected {
        let facts = tb.handler(name).unwrap().facts(args);
        assert_eq!(
            (facts.kind, facts.reach, facts.reports),
            (*kind, *reach, *reports),
            "{name}"
        );
        // What a front end without the session's toolbox sees is the same.
        assert_eq!(facts, facts_of(name, args), "{name}");
        let clip = match *name {
            "read_file" => ClipHint::ReadFile {
                path: "src/a.rs".into(),
                first_line: 40,
            },
            "run_command" | "run_tests" => ClipHint::Command,
            _ => ClipHint::Other,
        };
        assert_eq!(facts.clip, clip, "{name}");
    }
    let skill = facts_of(crate::tools::USE_SKILL, &none);
    assert_eq!((skill.kind, skill.reach), (ToolKind::Read, Reach::Reads));
    // A tool squad does not define (an MCP server's) is taken to change files.
    let other = facts_of("files__delete", &none);
    assert_eq!(
        (other.kind, other.reach),
        (ToolKind::Other, Reach::ChangesFiles)
    );
}

/// `run_command`'s reach is per call: a command known to only read reaches no file (so a
/// worker gets no worktree for it), anything else may change files.
#[test]
fn a_reading_command_reads_and_any_other_changes_files() {
    let tb = toolbox();
    let run = tb.handler("run_command").unwrap();
    let facts = |command: &str| run.facts(&serde_json::json!({"command": command}));
    use crate::runtime::points::CallKind;
    let reads = [
        "ls -la",
        "git status",
        "git diff HEAD",
        "grep -rn foo src",
        "rg x",
        "find . -name '*.rs'",
    ];
    let writes = [
        "rm a",
        "ls > out",
        "find . -delete",
        "cargo test",
        "git commit -m x",
        "sed -i s/a/b/ f",
    ];
    let expected = reads
        .map(|c| (c, Reach::Reads, CallKind::Read))
        .into_iter()
        .chain(writes.map(|c| (c, Reach::ChangesFiles, CallKind::Change)));
    for (command, reach, kind) in expected {
        let facts = facts(command);
        assert_eq!(
            (facts.reach, CallKind::of(&facts)),
            (reach, kind),
            "{command}"
        );
    }
    // No command at all is no known read.
    assert_eq!(run.facts(&serde_json::json!({})).reach, Reach::ChangesFiles);
    // The tool as a whole may change files: it is not run beside its neighbours.
    assert_eq!(run.reach(), Reach::ChangesFiles);
}

#[test]
fn an_mcp_tool_reads_only_on_its_servers_word() {
    use crate::tools::ToolKind;
    let tool = |read_only: bool| crate::mcp::McpTool {
        name: "files__stat".into(),
        server: "files".into(),
        tool: "stat".into(),
        spec: crate::model::ToolSpec {
            name: "files__stat".into(),
            description: String::new(),
            parameters: serde_json::json!({"type": "object"}),
            freeform: None,
        },
        read_only,
    };
    let hub = Arc::new(crate::mcp::McpHub::empty());
    let facts = |read_only| {
        handler::Mcp {
            tool: Arc::new(tool(read_only)),
            hub: hub.clone(),
        }
        .facts(&serde_json::json!({}))
    };
    assert_eq!(
        (facts(true).kind, facts(true).reach),
        (ToolKind::Read, Reach::Reads)
    );
    assert_eq!(
        (facts(false).kind, facts(false).reach),
        (ToolKind::Other, Reach::ChangesFiles)
    );
}

/// The spend fold (below the toolbox) names the tools that report or talk rather than
/// work; each must be a built-in tool that acts on the team, so a renamed or new one
/// cannot silently count as work in the waste report.
#[test]
fn the_spend_folds_reporting_tools_are_team_tools_of_the_toolbox() {
    let tb = toolbox();
    let none = serde_json::json!({});
    for name in crate::protocol::spend::NOT_WORK {
        let handler = tb.handler(name);
        assert!(handler.is_some(), "{name} is not a tool");
        let facts = handler.map(|h| h.facts(&none));
        assert!(
            facts.is_some_and(|f| f.reach == Reach::Team),
            "{name} does not act on the team"
        );
    }
}
