//! MCP servers as tools, against real servers nobody here wrote: the reference
//! `@modelcontextprotocol/server-everything` (npm) and `mcp-server-git` (PyPI), installed
//! by `.ci/mcp-servers`. The model is the scripted mock; the servers are real processes.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use ::squad::config::McpServerConfig;
use ::squad::mcp::{McpHub, ServerState, ServerStatus};
use common::agents::*;
use common::mcp::*;
use common::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

fn stdio(command: &str, args: &[&str]) -> McpServerConfig {
    McpServerConfig {
        command: Some(command.to_string()),
        args: args.iter().map(|a| a.to_string()).collect(),
        ..Default::default()
    }
}

/// The tool specs a request offered, by name.
fn offered(body: &Value) -> BTreeMap<String, Value> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| {
                    let f = &t["function"];
                    (f["name"].as_str().unwrap().to_string(), f.clone())
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The `tool_result` items of a run, as (call id, output, is_error).
fn results(run: &Run) -> Vec<(String, String, bool)> {
    items_of_kind(&run.events(), "tool_result")
        .iter()
        .map(|i| {
            (
                i["call_id"].as_str().unwrap().to_string(),
                i["output"].as_str().unwrap().to_string(),
                i["is_error"].as_bool().unwrap(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_everything_tools_are_listed_with_their_schemas() {
    let Some((node, index)) = everything("the_everything_tools_are_listed") else {
        return;
    };
    let ws = tempfile::tempdir().unwrap();
    let configs: BTreeMap<_, _> = [(
        "everything".to_string(),
        stdio(&node, &[index.to_str().unwrap(), "stdio"]),
    )]
    .into();
    let hub = McpHub::new(&configs, ws.path(), None);
    hub.start();
    hub.wait_started().await;
    let status = &hub.statuses()[0];
    assert_eq!(status.state, ServerState::Ready, "{status:?}");
    for name in [
        "everything__echo",
        "everything__get-sum",
        "everything__get-tiny-image",
    ] {
        assert!(
            status.tools.contains(&name.to_string()),
            "{name} missing: {status:?}"
        );
    }
    let echo = hub.tool("everything__echo").unwrap();
    assert!(
        echo.read_only,
        "the server annotates echo readOnlyHint: true"
    );
    assert_eq!(echo.spec.parameters["type"], "object");
    assert_eq!(
        echo.spec.parameters["properties"]["message"]["type"],
        "string"
    );
    assert!(echo.spec.parameters.get("$schema").is_none());
    assert!(!echo.spec.description.is_empty());
    let sum = hub.tool("everything__get-sum").unwrap();
    assert_eq!(sum.spec.parameters["required"], json!(["a", "b"]));
    assert!(
        !hub.tool("everything__toggle-simulated-logging")
            .unwrap()
            .read_only
    );

    // Results: text, an image described, structured content.
    let no_cancel = CancellationToken::new();
    let sum = hub
        .call(
            "everything__get-sum",
            json!({"a": 2, "b": 3}),
            1000,
            &no_cancel,
        )
        .await
        .unwrap();
    assert!(sum.contains('5'), "{sum}");
    let image = hub
        .call("everything__get-tiny-image", json!({}), 1000, &no_cancel)
        .await
        .unwrap();
    assert!(image.contains("[image: image/png"), "{image}");
    // Output is capped like any tool's.
    let long = hub
        .call(
            "everything__echo",
            json!({"message": "x".repeat(500)}),
            100,
            &no_cancel,
        )
        .await
        .unwrap();
    assert!(long.ends_with("(506 bytes in all)"), "{long}");
    hub.shutdown().await;
    assert_eq!(hub.statuses()[0].state, ServerState::Stopped);
}

#[tokio::test(flavor = "multi_thread")]
async fn echo_through_a_scripted_model_turn_returns_the_text_to_the_model() {
    let Some((_, index)) = everything("echo_through_a_scripted_model_turn") else {
        return;
    };
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config(&everything_toml(&index, ""));
    mock.push_all([
        MockResponse::tool_call(
            "c1",
            "everything__echo",
            r#"{"message":"hello from squad"}"#,
        ),
        MockResponse::text("It said hello."),
    ]);
    let run = sb.exec(&mock, &["--json", "ask the server to echo"]).await;
    run.assert_ok();
    let reqs = mock.requests();
    assert_eq!(
        tool_messages(&reqs[1].body),
        [("c1".to_string(), "Echo: hello from squad".to_string())]
    );
    assert!(!results(&run)[0].2);
    // By the second request the server is up: its tools are offered with their schemas.
    let tools = offered(&reqs[1].body);
    let echo = &tools["everything__echo"];
    assert_eq!(
        echo["parameters"]["properties"]["message"]["type"],
        "string"
    );
    assert!(tools.contains_key("read_file"), "built-in tools stay");
    let events = run.events();
    let ready: Vec<_> = of_type(&events, "mcp_server")
        .into_iter()
        .filter(|e| e["state"] == "ready")
        .collect();
    assert_eq!(ready[0]["server"], "everything");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_error_becomes_an_error_result_and_the_session_goes_on() {
    let Some(git) = git_server("a_tool_error_becomes_an_error_result") else {
        return;
    };
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config(&git_toml(&git, ""));
    let not_a_repo = tempfile::tempdir().unwrap();
    let repo = sb.ws().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let git_init = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&repo)
        .status()
        .unwrap();
    assert!(git_init.success());
    std::fs::write(repo.join("new.txt"), "x").unwrap();
    mock.push_all([
        MockResponse::tool_call(
            "bad",
            "git__git_status",
            &json!({"repo_path": not_a_repo.path()}).to_string(),
        ),
        MockResponse::tool_call(
            "good",
            "git__git_status",
            &json!({"repo_path": repo}).to_string(),
        ),
        MockResponse::text("The first path is not a repository; the second has new.txt."),
    ]);
    let run = sb.exec(&mock, &["--json", "git status of both"]).await;
    run.assert_ok();
    let results = results(&run);
    assert_eq!(results.len(), 2);
    let (_, bad, bad_is_error) = &results[0];
    assert!(bad_is_error, "an isError result is an error result: {bad}");
    assert!(!bad.is_empty());
    let (_, good, good_is_error) = &results[1];
    assert!(!good_is_error, "{good}");
    assert!(good.contains("new.txt"), "{good}");
    assert!(run.stdout.contains("second has new.txt"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_exits_is_reported_once_and_restarted_on_the_next_call() {
    let Some((node, index)) = everything("a_server_that_exits_is_restarted") else {
        return;
    };
    let ws = tempfile::tempdir().unwrap();
    let pidfile = ws.path().join("pid");
    // `exec` keeps the pid: the shell becomes the server.
    let script = format!(
        "echo $$ > {}; exec {node} {} stdio",
        pidfile.display(),
        index.display()
    );
    let configs: BTreeMap<_, _> =
        [("everything".to_string(), stdio("sh", &["-c", &script]))].into();
    let (tx, mut rx) = mpsc::unbounded_channel::<ServerStatus>();
    let hub = McpHub::new(&configs, ws.path(), Some(tx));
    hub.start();
    hub.wait_started().await;
    let no_cancel = CancellationToken::new();
    let echo = |m: &str| json!({"message": m});
    assert_eq!(
        hub.call("everything__echo", echo("one"), 1000, &no_cancel)
            .await,
        Ok("Echo: one".to_string())
    );
    let first_pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    unsafe {
        libc::kill(first_pid, libc::SIGKILL);
    }
    // The hub notices on its own and says so once.
    let mut reports = Vec::new();
    let failed = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(s) = rx.recv().await {
            reports.extend(s.report.clone());
            if matches!(s.state, ServerState::Failed(_)) {
                return s;
            }
        }
        panic!("status channel closed");
    })
    .await
    .expect("the exit is noticed");
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert!(
        reports[0].contains("MCP server `everything` stopped"),
        "{reports:?}"
    );
    assert!(
        failed.tools.contains(&"everything__echo".to_string()),
        "its tools stay offered"
    );

    assert_eq!(
        hub.call("everything__echo", echo("two"), 1000, &no_cancel)
            .await,
        Ok("Echo: two".to_string()),
        "the next call starts it again"
    );
    let second_pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_ne!(first_pid, second_pid);
    assert_eq!(hub.statuses()[0].state, ServerState::Ready);
    while let Ok(s) = rx.try_recv() {
        assert!(s.report.is_none(), "reported again: {s:?}");
    }
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_cannot_start_is_reported_once_and_its_tools_fail_clearly() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config("[mcp_servers.broken]\ncommand = \"squad-test-no-such-program\"\n");
    mock.push_all([
        MockResponse::tool_call("c1", "broken__anything", "{}"),
        MockResponse::tool_call("c2", "broken__anything", "{}"),
        MockResponse::text("The server is down."),
    ]);
    let run = sb.exec(&mock, &["--json", "use the broken server"]).await;
    run.assert_ok();
    let events = run.events();
    let errors: Vec<_> = of_type(&events, "error")
        .into_iter()
        .filter(|e| e["message"].as_str().unwrap().contains("broken"))
        .collect();
    assert_eq!(errors.len(), 1, "reported once: {errors:?}");
    assert!(
        errors[0]["message"]
            .as_str()
            .unwrap()
            .contains("cannot start `squad-test-no-such-program`")
    );
    for (_, output, is_error) in results(&run) {
        assert!(is_error);
        assert!(
            output.starts_with("MCP server `broken` is not running"),
            "{output}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_that_is_not_read_only_is_denied_under_read_only() {
    let Some((_, index)) = everything("a_tool_that_is_not_read_only_is_denied") else {
        return;
    };
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config(&everything_toml(&index, ""));
    mock.push_all([
        MockResponse::tool_calls(vec![
            call("w", "everything__toggle-simulated-logging", json!({})),
            call(
                "r",
                "everything__echo",
                json!({"message": "reading is fine"}),
            ),
        ]),
        MockResponse::text("Logging stays off."),
    ]);
    let run = sb
        .exec(
            &mock,
            &["--json", "--approval", "read-only", "toggle logging"],
        )
        .await;
    run.assert_ok();
    let results = results(&run);
    let (_, denied, is_error) = &results[0];
    assert!(is_error);
    assert!(
        denied.starts_with(
            "`everything__toggle-simulated-logging` was denied: the session is read-only"
        ),
        "{denied}"
    );
    assert_eq!(results[1].1, "Echo: reading is fine");
    assert!(!results[1].2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_role_that_excludes_a_server_is_not_offered_its_tools_nor_are_its_workers() {
    let Some((_, index)) = everything("a_role_that_excludes_a_server") else {
        return;
    };
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config(&everything_toml(&index, ""));
    sb.write(
        ".squad/roles/plain.toml",
        "name = \"plain\"\nexcluded_tools = [\"everything__*\"]\n\
         enabled_agents = [\"agentic_coder\"]\nsystem_prompt = \"You answer.\"\n",
    );
    mock.set_responder(|body| {
        if is_worker(body) {
            return match tool_count(body) {
                0 => MockResponse::tool_call("we", "everything__echo", r#"{"message":"w"}"#),
                _ => {
                    MockResponse::tool_call("r", "return_results", &good_result("done").to_string())
                }
            };
        }
        match tool_count(body) {
            0 => MockResponse::tool_call("pe", "everything__echo", r#"{"message":"p"}"#),
            1 => spawn("agentic_coder", "try the echo tool"),
            2 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            _ => MockResponse::text("No echo for us."),
        }
    });
    let run = sb
        .exec(&mock, &["--json", "--role", "plain", "echo something"])
        .await;
    run.assert_ok();
    let results = results(&run);
    let persona = results.iter().find(|r| r.0 == "pe").unwrap();
    assert!(persona.2);
    assert!(
        persona
            .1
            .starts_with("tool `everything__echo` is not available to the `plain` role"),
        "{}",
        persona.1
    );
    // The worker's own role would allow it; its supervisor's does not.
    let worker = results.iter().find(|r| r.0 == "we").unwrap();
    assert!(worker.2, "{}", worker.1);
    assert!(worker.1.contains("not available"), "{}", worker.1);
    for r in mock.requests() {
        let tools = offered(&r.body);
        assert!(
            !tools.keys().any(|t| t.starts_with("everything__")),
            "offered: {:?}",
            tools.keys()
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn no_server_process_remains_after_exec_ends() {
    let Some((_, index)) = everything("no_server_process_remains") else {
        return;
    };
    let Some(git) = git_server("no_server_process_remains") else {
        return;
    };
    let marker = format!("SQUAD_TEST_MARK={}", uuid::Uuid::new_v4());
    let env = format!(
        "env = {{ SQUAD_TEST_MARK = {:?} }}",
        &marker["SQUAD_TEST_MARK=".len()..]
    );
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config(&format!(
        "{}{}",
        everything_toml(&index, &env),
        git_toml(&git, &env)
    ));
    mock.push_all([
        MockResponse::tool_call("c1", "everything__echo", r#"{"message":"hi"}"#),
        MockResponse::tool_call(
            "c2",
            "git__git_status",
            &json!({"repo_path": "."}).to_string(),
        ),
        MockResponse::text("Both answered."),
    ]);
    let mut cmd = sb.command(Some(&mock));
    cmd.args(["exec", "--json", "use both servers"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().unwrap();
    // While it runs, the servers are there.
    assert!(
        mock.wait_for_requests(2, Duration::from_secs(30)).await,
        "the session got going"
    );
    let during = processes_marked(&marker);
    assert!(during.len() >= 2, "both servers run: {during:?}");
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let run = Run::from(out);
    run.assert_ok();
    assert_eq!(processes_marked(&marker), Vec::<u32>::new(), "left behind");
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_leaves_no_server_process_behind() {
    let Some((_, index)) = everything("ctrl_c_leaves_no_server_process_behind") else {
        return;
    };
    let Some(git) = git_server("ctrl_c_leaves_no_server_process_behind") else {
        return;
    };
    let marker = format!("SQUAD_TEST_MARK={}", uuid::Uuid::new_v4());
    let env = format!(
        "env = {{ SQUAD_TEST_MARK = {:?} }}",
        &marker["SQUAD_TEST_MARK=".len()..]
    );
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config(&format!(
        "{}{}",
        everything_toml(&index, &env),
        git_toml(&git, &env)
    ));
    // A model that takes its time: Ctrl+C comes while the session waits on it.
    mock.push(MockResponse::text("too late").with_delay(Duration::from_secs(30)));
    let mut cmd = sb.command(Some(&mock));
    cmd.args(["exec", "a slow question"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while processes_marked(&marker).len() < 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the servers never started"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let pid = child.id().unwrap() as i32;
    unsafe {
        libc::kill(pid, libc::SIGINT);
    }
    let out = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("squad ends after Ctrl+C")
        .unwrap();
    let run = Run::from(out);
    assert_ne!(run.code, 0, "an interrupted run fails: {}", run.stderr);
    // A server told to stop may take a moment to exit after squad has (on a loaded
    // machine it did): gone within seconds is not left behind.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !processes_marked(&marker).is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(processes_marked(&marker), Vec::<u32>::new(), "left behind");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_streamable_http_server_is_reached_by_url() {
    let Some((node, index)) = everything("a_streamable_http_server_is_reached_by_url") else {
        return;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let _server = tokio::process::Command::new(&node)
        .arg(&index)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the HTTP server never listened"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let url = format!("http://127.0.0.1:{port}/mcp");
    let ws = tempfile::tempdir().unwrap();
    let http = |token_env: Option<&str>| McpServerConfig {
        url: Some(url.clone()),
        bearer_token_env: token_env.map(str::to_string),
        ..Default::default()
    };
    let configs: BTreeMap<_, _> = [
        ("web".to_string(), http(None)),
        (
            "locked".to_string(),
            http(Some("SQUAD_TEST_SURELY_UNSET_TOKEN_7c1")),
        ),
    ]
    .into();
    let hub = McpHub::new(&configs, ws.path(), None);
    hub.start();
    hub.wait_started().await;
    let statuses = hub.statuses();
    let locked = statuses.iter().find(|s| s.name == "locked").unwrap();
    assert!(
        matches!(&locked.state, ServerState::Failed(why) if why.contains("SQUAD_TEST_SURELY_UNSET_TOKEN_7c1")),
        "{locked:?}"
    );
    let web = statuses.iter().find(|s| s.name == "web").unwrap();
    assert_eq!(web.state, ServerState::Ready, "{web:?}");
    let out = hub
        .call(
            "web__echo",
            json!({"message": "over http"}),
            1000,
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(out, Ok("Echo: over http".to_string()));
    hub.shutdown().await;
}

/// A persona's second request with the user's AGENTS.md and MCP server, if any, less its
/// tool-call round: the model's first reply calls `everything__echo` (which waits for the
/// server to list its tools; without the server it is an unknown tool), and the call and
/// its result are left out of the body measured, so every setup is measured alike.
async fn second_request(agents_md: Option<&str>, index: Option<&std::path::Path>) -> Value {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("a.txt", "a\n");
    if let Some(text) = agents_md {
        sb.write("AGENTS.md", text);
    }
    if let Some(index) = index {
        sb.workspace_config(&everything_toml(index, ""));
    }
    mock.push_all([
        MockResponse::tool_call("e", "everything__echo", r#"{"message":"hi"}"#),
        MockResponse::text("done"),
    ]);
    sb.exec(&mock, &["--json", "echo hi"]).await.assert_ok();
    let mut body = mock.requests()[1].body.clone();
    let messages = body["messages"].as_array_mut().unwrap();
    messages.retain(|m| m["role"] == "system" || m["role"] == "user");
    body
}

fn size(body: &Value) -> usize {
    serde_json::to_string(body).unwrap().len()
}

/// The user's own text grows a request by its size and not more: an AGENTS.md by its
/// bytes (as JSON) and a heading, an MCP server by its tools' specs. The figures are in
/// docs/benchmarks.md ("The first request and the user's text").
#[tokio::test(flavor = "multi_thread")]
async fn an_agents_md_and_mcp_tools_add_their_own_size_to_a_request_and_little_more() {
    let Some((_, index)) = everything("an_agents_md_and_mcp_tools_add_their_own_size") else {
        return;
    };
    // A typical project's AGENTS.md: how to build, test and what to keep to (2 KB).
    let md = "# Project notes\n\n## Build and test\n- `cargo build`, then `cargo test --all`.\n\
              - Run `cargo fmt` and `cargo clippy -- -D warnings` before a commit.\n\n\
              ## Style\n"
        .to_string()
        + &"- Keep functions short and name them for what they do; errors carry context.\n"
            .repeat(24);
    let plain = second_request(None, None).await;
    let with_md = second_request(Some(&md), None).await;
    let with_mcp = second_request(None, Some(&index)).await;
    let with_both = second_request(Some(&md), Some(&index)).await;
    let md_bytes = serde_json::to_string(md.trim_end()).unwrap().len() - 2;
    let mcp_bytes: usize = with_mcp["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| {
            t["function"]["name"]
                .as_str()
                .unwrap()
                .starts_with("everything__")
        })
        .map(|t| serde_json::to_string(t).unwrap().len() + 1)
        .sum();
    assert!(mcp_bytes > 0, "the server's tools were offered");
    println!(
        "second request less its tool-call round: plain {} B; AGENTS.md ({md_bytes} B as JSON) {} B; \
         MCP server-everything ({mcp_bytes} B of tool specs) {} B; both {} B",
        size(&plain),
        size(&with_md),
        size(&with_mcp),
        size(&with_both)
    );
    let md_more = size(&with_md) - size(&plain) - md_bytes;
    let mcp_more = size(&with_mcp) - size(&plain) - mcp_bytes;
    println!("squad's own text added: {md_more} B with AGENTS.md, {mcp_more} B with MCP");
    assert!(
        md_more <= 300,
        "{md_more} B of squad's own text came with AGENTS.md"
    );
    assert!(
        mcp_more <= 300,
        "{mcp_more} B of squad's own text came with MCP"
    );
    assert_eq!(
        size(&with_both),
        size(&with_md) + size(&with_mcp) - size(&plain),
        "the two add up"
    );
}
