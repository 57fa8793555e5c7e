//! Agent workers with real foreign agents (issue 53), installed from npm by
//! `.ci/acp-agents` (which `.ci/run` calls): Codex through Zed's adapter
//! (`@zed-industries/codex-acp`) and OpenCode (`opencode-ai`, `opencode acp`), each pointed
//! at the mock model on loopback. A supervisor (squad on its own mock) spawns one as a
//! worker; what the agent did is asserted from squad's events. Each test skips with one
//! line where its agent is not installed.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::agents::*;
use common::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// The installed agent `bin` (`codex-acp`, `opencode`), or `None` with the skip line.
fn installed(test: &str, bin: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("SQUAD_ACP_AGENTS_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target/acp-agents"),
        PathBuf::from,
    );
    let path = dir.join("node/node_modules/.bin").join(bin);
    if path.exists() {
        Some(path)
    } else {
        eprintln!(
            "skipped {test}: {bin} is not installed in {} (bash .ci/acp-agents installs it)",
            dir.display()
        );
        None
    }
}

/// A git repository with `b.txt`, the persona `lead` that may spawn `helper`, and `helper`
/// the agent `agent` (a TOML inline table's inside).
fn team(agent: &str) -> Sandbox {
    let sb = Sandbox::new();
    git(sb.ws(), &["init", "-q"]);
    sb.write("b.txt", "old\n");
    git(sb.ws(), &["add", "-A"]);
    git(sb.ws(), &["commit", "-qm", "start"]);
    sb.write(
        ".squad/roles/lead.toml",
        "name = \"lead\"\nsystem_prompt = \"You lead.\"\nenabled_agents = [\"helper\"]\n",
    );
    sb.write(
        ".squad/roles/helper.toml",
        &format!("name = \"helper\"\ndescription = \"a real agent\"\nagent = {{ {agent} }}\n"),
    );
    sb
}

fn supervise(mock: &MockServer, task: &'static str) {
    mock.set_responder(move |body| match tool_count(body) {
        0 => spawn("helper", task),
        1 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
        _ => MockResponse::text("all done"),
    });
}

fn worker_events(events: &[Value]) -> Vec<Value> {
    let worker = events
        .iter()
        .find(|e| e["type"] == "agent_spawned" && e["parent_id"].is_string())
        .unwrap_or_else(|| panic!("no worker: {events:#?}"))["agent_id"]
        .clone();
    events
        .iter()
        .filter(|e| e["agent_id"] == worker)
        .cloned()
        .collect()
}

fn of<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_through_its_acp_adapter_runs_a_command_as_a_worker() {
    let Some(codex) = installed(
        "codex_through_its_acp_adapter_runs_a_command_as_a_worker",
        "codex-acp",
    ) else {
        return;
    };
    let (lead, model) = (MockServer::start().await, MockServer::start().await);
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "model = \"gpt-5.1-codex\"\nmodel_provider = \"mock\"\nsandbox_mode = \"danger-full-access\"\napproval_policy = \"untrusted\"\n\n[model_providers.mock]\n\
             name = \"mock\"\nbase_url = \"{}\"\nwire_api = \"responses\"\nenv_key = \"MOCK_API_KEY\"\n",
            model.base_url()
        ),
    )
    .unwrap();
    let sb = team(&format!(
        "command = {:?}, env = {{ CODEX_HOME = {:?}, MOCK_API_KEY = \"test\" }}",
        codex.display().to_string(),
        home.path().display().to_string()
    ));
    supervise(&lead, "make b.txt say new");
    model.push_all([
        MockResponse::tool_call(
            "c1",
            "exec_command",
            &json!({"cmd": "echo new > b.txt", "login": false}).to_string(),
        )
        .with_usage(1200, 30),
        MockResponse::text("b.txt says new now.").with_usage(1300, 8),
    ]);
    let run = sb
        .exec(
            &lead,
            &["--json", "--role", "lead", "--approval", "auto", "go"],
        )
        .await;
    run.assert_ok();
    let events = run.events();
    let mine = worker_events(&events);
    // Codex ran the command in the worker's worktree: the call is the worker's.
    let call = mine
        .iter()
        .filter(|e| e["type"] == "item_added")
        .flat_map(|e| {
            e["item"]["tool_calls"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .find(|c| c["id"] == "c1")
        .unwrap_or_else(|| panic!("{mine:#?}"));
    assert_eq!(call["name"], "execute");
    assert!(
        call["arguments"]
            .as_str()
            .unwrap()
            .contains("echo new > b.txt")
    );
    assert_eq!(of(&mine, "tool_call_end").len(), 1, "{mine:#?}");
    // It reports its usage, which counts on the worker.
    let used: u64 = of(&mine, "usage")
        .iter()
        .map(|u| u["prompt_tokens"].as_u64().unwrap())
        .sum();
    assert!(used > 0, "{mine:#?}");
    let result = &of(&mine, "result_returned")[0]["result"];
    assert_eq!(result["summary"], "b.txt says new now.");
    assert_eq!(of(&mine, "merge_report")[0]["state"], "merged");
    assert_eq!(sb.read("b.txt"), "new\n");
    assert_eq!(model.remaining(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn opencode_writes_a_file_as_a_worker() {
    let Some(opencode) = installed("opencode_writes_a_file_as_a_worker", "opencode") else {
        return;
    };
    let (lead, model) = (MockServer::start().await, MockServer::start().await);
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("opencode.json");
    std::fs::write(
        &config,
        json!({
            "$schema": "https://opencode.ai/config.json",
            "autoupdate": false,
            "share": "disabled",
            "provider": {"mock": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "mock",
                "options": {"baseURL": model.base_url(), "apiKey": "test"},
                "models": {"mock-model": {"name": "mock-model"}}
            }},
            "model": "mock/mock-model",
            "permission": {"edit": "ask", "bash": "ask"}
        })
        .to_string(),
    )
    .unwrap();
    // OpenCode's plugin package, installed by `.ci/acp-agents`, where OpenCode looks for
    // it: without it OpenCode fetches it from npm at start.
    let plugin = opencode.parent().unwrap().join("../../../opencode-config");
    if !plugin.join("node_modules").exists() {
        eprintln!(
            "skipped opencode_writes_a_file_as_a_worker: OpenCode's plugin package is not in {} \
             (bash .ci/acp-agents installs it; without it OpenCode fetches it from npm)",
            plugin.display()
        );
        return;
    }
    let config_dir = home.path().join("config/opencode");
    std::fs::create_dir_all(home.path().join("config")).unwrap();
    let copied = std::process::Command::new("cp")
        .arg("-a")
        .arg(plugin.join("."))
        .arg(&config_dir)
        .status()
        .unwrap();
    assert!(
        copied.success(),
        "{} not installed: run bash .ci/acp-agents",
        plugin.display()
    );
    let h = home.path().display().to_string();
    let sb = team(&format!(
        "command = {:?}, args = [\"acp\"], env = {{ OPENCODE_CONFIG = {:?}, HOME = {h:?}, XDG_CONFIG_HOME = \"{h}/config\", XDG_DATA_HOME = \"{h}/data\", XDG_CACHE_HOME = \"{h}/cache\", XDG_STATE_HOME = \"{h}/state\", OPENCODE_DISABLE_AUTOUPDATE = \"1\", OPENCODE_DISABLE_MODELS_FETCH = \"1\", OPENCODE_DISABLE_LSP_DOWNLOAD = \"1\", OPENCODE_PURE = \"1\", OPENCODE_DISABLE_DEFAULT_PLUGINS = \"1\", OPENCODE_DISABLE_SHARE = \"1\", OPENCODE_DISABLE_EXTERNAL_SKILLS = \"1\", OPENCODE_DISABLE_CLAUDE_CODE = \"1\" }}",
        opencode.display().to_string(),
        config.display().to_string(),
    ));
    supervise(&lead, "make b.txt say new");
    // OpenCode asks for a title for its session on the side; the agent's own requests
    // are scripted by how many tool results they carry.
    model.set_responder(|body| {
        if system(body).contains("title generator") {
            return MockResponse::text("Make b.txt say new");
        }
        match tool_count(body) {
            0 => MockResponse::tool_call(
                "o1",
                "write",
                &json!({"filePath": "b.txt", "content": "new\n"}).to_string(),
            ),
            _ => MockResponse::text("b.txt says new now."),
        }
    });
    let run = sb
        .exec(
            &lead,
            &["--json", "--role", "lead", "--approval", "auto", "go"],
        )
        .await;
    run.assert_ok();
    let events = run.events();
    let mine = worker_events(&events);
    // OpenCode's write, in the worker's worktree, as the worker's call and result.
    let results: Vec<&Value> = of(&mine, "item_added")
        .into_iter()
        .map(|e| &e["item"])
        .filter(|i| i["kind"] == "tool_result" && i["call_id"] == "o1")
        .collect();
    assert_eq!(results.len(), 1, "{mine:#?}");
    assert_eq!(results[0]["is_error"], false);
    let result = &of(&mine, "result_returned")[0]["result"];
    assert_eq!(result["summary"], "b.txt says new now.");
    assert_eq!(of(&mine, "merge_report")[0]["state"], "merged");
    assert_eq!(sb.read("b.txt"), "new\n");
}
