//! A newcomer's first minutes with the real binary: a missing key or a dead server said at
//! once with the fix, `squad doctor`, shell completions, profiles, no terminal.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::Value;
use std::net::TcpListener;
use std::time::{Duration, Instant};

/// Generous against a loaded machine, and still well under the retry budget (8+ s) that
/// these failures used to spend.
const PROMPTLY: Duration = Duration::from_secs(5);

/// A port nothing listens on.
fn dead_url() -> String {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("http://127.0.0.1:{port}/v1")
}

async fn timed(mut cmd: tokio::process::Command) -> (Run, Duration) {
    cmd.stdin(std::process::Stdio::null());
    let started = Instant::now();
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("squad finishes")
        .unwrap();
    (Run::from(out), started.elapsed())
}

#[tokio::test(flavor = "multi_thread")]
async fn no_key_for_openai_stops_at_once_with_the_fix_and_sends_nothing() {
    let sb = Sandbox::new();
    // Every HTTP(S) request would go through this proxy: it must see no connection at all,
    // which also keeps this test from ever reaching the real API.
    let tripwire = TcpListener::bind("127.0.0.1:0").unwrap();
    tripwire.set_nonblocking(true).unwrap();
    let proxy = format!("http://{}", tripwire.local_addr().unwrap());
    let mut cmd = sb.command(None);
    for var in [
        "HTTPS_PROXY",
        "HTTP_PROXY",
        "ALL_PROXY",
        "https_proxy",
        "http_proxy",
    ] {
        cmd.env(var, &proxy);
    }
    cmd.args(["exec", "fix the typo in README.md"]);
    let (run, took) = timed(cmd).await;
    assert_eq!(run.code, 2, "stderr: {}", run.stderr);
    assert!(took < PROMPTLY, "took {took:?}");
    for needle in ["OPENAI_API_KEY", "--base-url", "OPENAI_BASE_URL", "--demo"] {
        assert!(run.stderr.contains(needle), "{needle}: {}", run.stderr);
    }
    assert_eq!(run.stderr.trim().lines().count(), 1, "{}", run.stderr);
    assert!(
        matches!(tripwire.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "squad made a request"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_local_server_needs_no_key() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.push(MockResponse::text("no key needed"));
    let run = sb.exec(&mock, &["hi"]).await;
    run.assert_ok();
    assert_eq!(run.stdout.trim(), "no key needed");
    assert_eq!(mock.requests()[0].header("authorization"), None);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dead_local_server_is_one_line_naming_the_url_without_retries() {
    let sb = Sandbox::new();
    let url = dead_url();
    let mut cmd = sb.command(None);
    cmd.env("OPENAI_BASE_URL", &url).args(["exec", "hi"]);
    let (run, took) = timed(cmd).await;
    assert_eq!(run.code, 1, "stderr: {}", run.stderr);
    assert!(took < PROMPTLY, "took {took:?}: {}", run.stderr);
    let lines: Vec<&str> = run.stderr.trim().lines().collect();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(lines[0].starts_with("squad: cannot reach"), "{}", lines[0]);
    assert!(lines[0].contains(&url), "{}", lines[0]);
    assert!(lines[0].contains("--base-url"), "{}", lines[0]);
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_terminal_the_tui_says_so_and_points_to_exec() {
    let sb = Sandbox::new();
    for args in [&[][..], &["hello"][..]] {
        let run = sb.run(None, args).await;
        assert_eq!(run.code, 2, "{}", run.stderr);
        assert!(run.stderr.contains("needs a terminal"), "{}", run.stderr);
        assert!(run.stderr.contains("squad exec"), "{}", run.stderr);
        assert!(!run.stderr.contains("os error"), "{}", run.stderr);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn doctor_against_the_mock_passes_and_lists_server_and_models() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    let run = sb.run(Some(&mock), &["doctor"]).await;
    run.assert_ok();
    let out = &run.stdout;
    assert!(
        out.contains(&format!("✓ server {}", mock.base_url())),
        "{out}"
    );
    assert!(out.contains("✓ model level fast = gpt-4.1-mini"), "{out}");
    assert!(out.contains("✓ model level base = gpt-4.1"), "{out}");
    assert!(out.contains("roles loaded"), "{out}");
    assert!(out.contains("writable"), "{out}");
    assert!(out.contains("profile: none active"), "{out}");
    assert!(!out.contains('✗'), "{out}");
    assert!(out.trim_end().ends_with("all checks passed"), "{out}");
    assert!(mock.requests().is_empty(), "doctor sends no chat request");

    let run = sb.run(Some(&mock), &["doctor", "--json"]).await;
    run.assert_ok();
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["ok"], true);
    assert_eq!(report["base_url"], mock.base_url());
    let checks = report["checks"].as_array().unwrap();
    let server = checks.iter().find(|c| c["check"] == "server").unwrap();
    assert_eq!(server["status"], "pass");
    assert!(checks.iter().all(|c| c["status"] != "fail"), "{report}");
}

#[tokio::test(flavor = "multi_thread")]
async fn doctor_against_a_dead_port_fails_naming_it() {
    let sb = Sandbox::new();
    let url = dead_url();
    let run = sb.run(None, &["doctor", "--base-url", &url]).await;
    assert_eq!(run.code, 1, "{}", run.stdout);
    let line = run
        .stdout
        .lines()
        .find(|l| l.starts_with('✗'))
        .unwrap_or_else(|| panic!("no failed check: {}", run.stdout));
    assert!(line.contains(&url), "{line}");
    assert!(line.contains("start the server"), "{line}");

    let run = sb
        .run(None, &["doctor", "--json", "--base-url", &url])
        .await;
    assert_eq!(run.code, 1);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["ok"], false);
}

/// The Markdown files `text` names that an installed binary does not have (its docs):
/// every `*.md` but the project files squad reads (AGENTS.md, SKILL.md, CLAUDE.md).
fn docs_named(text: &str) -> Vec<String> {
    text.split(|c: char| c.is_whitespace() || "()[]`'\",;:".contains(c))
        .filter(|w| w.ends_with(".md") || w.contains("docs/"))
        .filter(|w| !["AGENTS.md", "SKILL.md", "CLAUDE.md"].contains(w))
        .map(str::to_string)
        .collect()
}

/// An installed binary has no repository beside it: the empty states of its listings and
/// the help of every command point to a config table, a command or a flag, never to a
/// docs/*.md file.
#[tokio::test(flavor = "multi_thread")]
async fn empty_states_and_help_point_to_nothing_an_installed_binary_lacks() {
    let sb = Sandbox::new();
    let mut said = Vec::new();
    for (args, hint) in [
        (&["hooks", "list"][..], "[[hooks]] table"),
        (&["mcp", "list"][..], "[mcp_servers.NAME] table"),
        (&["skills"][..], "SKILL.md"),
    ] {
        let run = sb.run(None, args).await;
        run.assert_ok();
        assert!(run.stdout.contains(hint), "{args:?}: {}", run.stdout);
        said.push((args.join(" "), format!("{}{}", run.stdout, run.stderr)));
    }
    let help = sb.run(None, &["--help"]).await;
    help.assert_ok();
    let commands: Vec<String> = help
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect();
    assert!(commands.len() > 10, "{}", help.stdout);
    said.push(("--help".into(), help.stdout.clone()));
    for c in &commands {
        let run = sb.run(None, &[c, "--help"]).await;
        run.assert_ok();
        said.push((format!("{c} --help"), run.stdout));
    }
    for (what, text) in said {
        let named = docs_named(&text);
        assert!(named.is_empty(), "`squad {what}` names {named:?}:\n{text}");
    }
}

/// `squad doctor --demo` checks the session `squad --demo` would run: the demo model, in
/// the process; no key is wanted and no server asked, not even one OPENAI_BASE_URL names.
#[tokio::test(flavor = "multi_thread")]
async fn doctor_demo_reports_the_demo_model_and_asks_no_server() {
    let sb = Sandbox::new();
    // No key, no base URL: a session would want OpenAI's key, the demo does not.
    let run = sb.run(None, &["doctor", "--demo"]).await;
    run.assert_ok();
    let out = &run.stdout;
    assert!(
        out.contains("✓ model squad-demo: squad's built-in demo model"),
        "{out}"
    );
    assert!(
        !out.contains("API key") && !out.contains("api.openai.com"),
        "{out}"
    );
    assert!(out.trim_end().ends_with("all checks passed"), "{out}");

    // A dead server in the environment is not asked: nothing leaves the machine.
    let url = dead_url();
    let mut cmd = sb.command(None);
    cmd.env("OPENAI_BASE_URL", &url)
        .args(["doctor", "--demo", "--json"]);
    let run = Run::from(cmd.output().await.unwrap());
    run.assert_ok();
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["base_url"], Value::Null, "{report}");
    assert!(!run.stdout.contains(&url), "{report}");
    let checks = report["checks"].as_array().unwrap();
    assert!(
        !checks
            .iter()
            .any(|c| c["check"] == "server" || c["check"] == "key"),
        "{report}"
    );
    let models: Vec<&Value> = checks.iter().filter(|c| c["check"] == "model").collect();
    assert_eq!(models.len(), 1, "{report}");
    assert!(
        models[0]["message"]
            .as_str()
            .unwrap()
            .contains("squad-demo")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn doctor_names_a_broken_role_file_and_a_model_the_server_lacks() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write(
        ".squad/roles/broken.toml",
        "name = \"reviewer\"\ndescription = \"x\"\nsystem_prompt = 3\n",
    );
    let run = sb.run(Some(&mock), &["doctor"]).await;
    assert_eq!(run.code, 1, "{}", run.stdout);
    let path = sb.ws().join(".squad/roles/broken.toml");
    let line = run
        .stdout
        .lines()
        .find(|l| l.starts_with('✗'))
        .unwrap_or_else(|| panic!("no failed check: {}", run.stdout));
    assert!(line.contains(&path.display().to_string()), "{line}");
    assert!(line.contains("system_prompt"), "{line}");

    std::fs::remove_file(&path).unwrap();
    mock.set_models(["qwen2.5-coder:7b", "llama3.2"]);
    let run = sb.run(Some(&mock), &["doctor"]).await;
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains(
            "✗ model level base = gpt-4.1: the server does not list it — use one it lists: qwen2.5-coder:7b, llama3.2"
        ),
        "{}",
        run.stdout
    );
    let run = sb
        .run(Some(&mock), &["doctor", "--model", "qwen2.5-coder:7b"])
        .await;
    run.assert_ok();
}

#[tokio::test(flavor = "multi_thread")]
async fn doctor_shows_the_active_profile_and_a_broken_config_file() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config("[profiles.local.models]\nbase = \"gpt-4.1-mini\"\n");
    let run = sb.run(Some(&mock), &["doctor", "--profile", "local"]).await;
    run.assert_ok();
    assert!(
        run.stdout.contains("✓ profile local (from --profile)"),
        "{}",
        run.stdout
    );
    let mut cmd = sb.command(Some(&mock));
    cmd.env("SQUAD_PROFILE", "local").args(["doctor", "--json"]);
    let (run, _) = timed(cmd).await;
    run.assert_ok();
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["profile"], "local");

    let run = sb
        .run(Some(&mock), &["doctor", "--profile", "remote"])
        .await;
    assert_eq!(run.code, 1);
    assert!(
        run.stdout.contains("unknown profile 'remote'"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("known profiles: local"),
        "{}",
        run.stdout
    );

    sb.workspace_config("[limits]\nmax_depth = \"three\"\n");
    let run = sb.run(Some(&mock), &["doctor"]).await;
    assert_eq!(run.code, 1);
    let config = sb.ws().join(".squad/config.toml");
    assert!(
        run.stdout
            .contains(&format!("✗ config error in {}", config.display())),
        "{}",
        run.stdout
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn completions_are_printed_for_each_shell() {
    let sb = Sandbox::new();
    let run = sb.run(None, &["completions", "bash"]).await;
    run.assert_ok();
    assert!(run.stdout.contains("complete -F _squad"), "{}", run.stdout);
    // `squad <TAB>` offers the subcommands, exec among them.
    let top = run
        .stdout
        .lines()
        .find(|l| l.contains("opts=") && l.contains("doctor"))
        .unwrap_or_else(|| panic!("no top-level options line: {}", run.stdout));
    assert!(top.contains("exec"), "{top}");
    assert!(top.contains("completions"), "{top}");
    for shell in ["zsh", "fish", "powershell"] {
        let run = sb.run(None, &["completions", shell]).await;
        run.assert_ok();
        assert!(run.stdout.contains("exec"), "{shell}: {}", run.stdout);
    }
    let run = sb.run(None, &["completions", "tcsh"]).await;
    assert_eq!(run.code, 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_profile_changes_the_model_and_a_flag_still_wins() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config("[profiles.cheap.models]\nbase = \"cheap-model\"\n");
    mock.set_responder(|_| MockResponse::text("ok"));
    let model_sent = |i: usize| mock.requests()[i].body["model"].clone();

    sb.exec(&mock, &["hi"]).await.assert_ok();
    assert_eq!(model_sent(0), "gpt-4.1");
    sb.exec(&mock, &["--profile", "cheap", "hi"])
        .await
        .assert_ok();
    assert_eq!(model_sent(1), "cheap-model");
    let mut cmd = sb.command(Some(&mock));
    cmd.env("SQUAD_PROFILE", "cheap").args(["exec", "hi"]);
    timed(cmd).await.0.assert_ok();
    assert_eq!(model_sent(2), "cheap-model");
    sb.exec(
        &mock,
        &["--profile", "cheap", "--model", "flag-model", "hi"],
    )
    .await
    .assert_ok();
    assert_eq!(model_sent(3), "flag-model");

    let run = sb.exec(&mock, &["--profile", "nope", "hi"]).await;
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("known profiles: cheap"),
        "{}",
        run.stderr
    );
    assert_eq!(mock.requests().len(), 4);
}

/// Servers that answer any model name (llama.cpp, known by its `/props`; or one that lists
/// a single model) make an unlisted name a warning that says what happens, not a failure.
#[tokio::test(flavor = "multi_thread")]
async fn doctor_warns_instead_of_failing_where_the_server_answers_any_model_name() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.set_models(["qwen2.5-coder-1.5b-instruct"]);
    let run = sb.run(Some(&mock), &["doctor"]).await;
    run.assert_ok();
    assert!(
        run.stdout.contains(
            "! model level base = gpt-4.1: not listed, but this server answers any model name \
             with the one it serves (qwen2.5-coder-1.5b-instruct): requests for gpt-4.1 get that"
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.trim_end().ends_with("all checks passed"),
        "{}",
        run.stdout
    );

    mock.set_models(["a-model", "b-model"]);
    let run = sb.run(Some(&mock), &["doctor"]).await;
    assert_eq!(run.code, 1, "two models and no /props: {}", run.stdout);
    mock.set_props(8192);
    let run = sb.run(Some(&mock), &["doctor", "--json"]).await;
    run.assert_ok();
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    let model = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "model")
        .unwrap();
    assert_eq!(model["status"], "warn", "{model}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_demo_model_runs_a_team_and_a_write_with_nothing_installed() {
    // No server, no key, no base URL: the built-in demo model.
    let sb = Sandbox::new();
    sb.write("README.md", "a project\n");
    let team = sb
        .run(
            None,
            &[
                "exec",
                "--demo",
                "--json",
                "--approval",
                "auto",
                "show me a team",
            ],
        )
        .await;
    team.assert_ok();
    let events = team.events();
    let spawned: Vec<&Value> = of_type(&events, "agent_spawned")
        .into_iter()
        .filter(|e| e["parent_id"].is_string())
        .collect();
    assert_eq!(spawned.len(), 2, "two workers");
    assert!(spawned.iter().all(|e| e["model"] == "squad-demo"));
    assert!(
        team.stdout.contains("Both workers are done"),
        "{}",
        team.stdout
    );

    let write = sb
        .run(
            None,
            &["exec", "--demo", "--approval", "auto", "write something"],
        )
        .await;
    write.assert_ok();
    assert_eq!(sb.read("demo.txt"), "written by squad's demo model\n");
    // Anything else says what it is and what to try.
    let hello = sb.run(None, &["exec", "--demo", "hello"]).await;
    hello.assert_ok();
    assert!(hello.stdout.contains("demo model"), "{}", hello.stdout);
    // It is no server: --demo with --base-url is refused by the command line.
    let both = sb
        .run(
            None,
            &[
                "exec",
                "--demo",
                "--base-url",
                "http://127.0.0.1:1/v1",
                "hi",
            ],
        )
        .await;
    assert_eq!(both.code, 2, "{}", both.stderr);
}
