//! `squad exec` end to end: the real binary against the mock model server over HTTP.

// Test harness code: a panic is how it reports a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::Value;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread")]
async fn streamed_answer_is_printed_and_events_are_flat_json() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.push(MockResponse::text_deltas(["Hello", ", ", "world", "!"]).with_usage(12, 4));
    let run = sb.exec(&mock, &["say hello"]).await;
    run.assert_ok();
    assert_eq!(run.stdout.trim(), "Hello, world!");

    mock.push(MockResponse::text_deltas(["Second", " answer"]));
    let run = sb.exec(&mock, &["--json", "again"]).await;
    run.assert_ok();
    let events = run.events();
    assert_eq!(events[0]["type"], "session_started");
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "seq not increasing: {seqs:?}"
    );
    assert!(events.iter().all(|e| e["agent_id"].is_string()));
    let deltas: String = of_type(&events, "text_delta")
        .iter()
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, "Second answer");
    assert_eq!(events.last().unwrap()["type"], "summary");
    // What the server got: system prompt first, then the user's message.
    let body = &mock.requests()[1].body;
    let t = transcript(body);
    assert_eq!(t[0].0, "system");
    assert_eq!(
        t.last().unwrap(),
        &("user".to_string(), "again".to_string())
    );
    assert_eq!(body["stream"], true);
}

#[tokio::test(flavor = "multi_thread")]
async fn read_edit_and_test_on_a_real_repo() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("greet.sh", "echo \"Helo, $1\"\n");
    sb.write(
        "test.sh",
        "out=$(sh greet.sh squad)\n[ \"$out\" = \"Hello, squad\" ] || { echo \"got: $out\"; exit 1; }\necho ok\n",
    );
    sb.workspace_config("[tools]\ntest_command = \"sh test.sh\"\n");
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(sb.ws())
        .status()
        .unwrap();
    assert!(git.success());

    mock.push_all([
        MockResponse::tool_call("c1", "read_file", r#"{"path":"greet.sh"}"#),
        MockResponse::tool_call(
            "c2",
            "edit_file",
            r#"{"path":"greet.sh","old_text":"Helo","new_text":"Hello"}"#,
        ),
        MockResponse::tool_call("c3", "run_tests", "{}"),
        MockResponse::text("Fixed the typo; tests pass."),
    ]);
    let run = sb
        .exec(
            &mock,
            &["--approval", "auto", "fix the greeting and run the tests"],
        )
        .await;
    run.assert_ok();
    assert_eq!(run.stdout.trim(), "Fixed the typo; tests pass.");
    assert_eq!(sb.read("greet.sh"), "echo \"Hello, $1\"\n");

    let reqs = mock.requests();
    assert_eq!(reqs.len(), 4);
    let read = tool_messages(&reqs[1].body);
    assert!(
        read[0].1.contains("Helo"),
        "read_file result: {:?}",
        read[0]
    );
    let tests = tool_messages(&reqs[3].body);
    assert_eq!(tests.len(), 3);
    assert_eq!(tests[2].0, "c3");
    assert!(
        tests[2].1.contains("passed"),
        "run_tests result: {}",
        tests[2].1
    );
    assert!(
        tests[2].1.contains("ok"),
        "test output missing: {}",
        tests[2].1
    );
}

/// A 1.5B model told "no test command is configured" ran `cargo test` in a Python
/// project. With none configured, `run_tests` runs the runner the project's files name
/// (here a Makefile's `test` target) and says so.
#[tokio::test(flavor = "multi_thread")]
async fn run_tests_without_a_test_command_runs_the_one_the_project_names() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write(
        "Makefile",
        "test:\n\t@echo checking-the-makefile-target; exit 3\n",
    );
    mock.push_all([
        MockResponse::tool_call("t", "run_tests", "{}"),
        MockResponse::text("The tests fail."),
    ]);
    let run = sb
        .exec(&mock, &["--approval", "auto", "run the tests"])
        .await;
    run.assert_ok();
    let result = &tool_messages(&mock.requests()[1].body)[0].1;
    assert!(
        result.starts_with("tests FAILED")
            && result
                .contains("$ make test (from the project's files; no test_command is configured)")
            && result.contains("checking-the-makefile-target"),
        "{result}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn two_tool_calls_in_one_turn_each_get_a_result() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    sb.write("b.txt", "beta\n");
    mock.push_all([
        MockResponse::tool_calls(vec![
            MockToolCall::new("r1", "read_file", r#"{"path":"a.txt"}"#),
            MockToolCall::new("r2", "read_file", r#"{"path":"b.txt"}"#),
        ])
        .with_arg_fragment(3),
        MockResponse::text("both read"),
    ]);
    sb.exec(&mock, &["read both"]).await.assert_ok();
    let results = tool_messages(&mock.requests()[1].body);
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].0, "r1");
    assert!(results[0].1.contains("alpha"));
    assert_eq!(results[1].0, "r2");
    assert!(results[1].1.contains("beta"));
}

#[tokio::test(flavor = "multi_thread")]
async fn server_error_then_success_is_retried() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config("[provider]\nretry_base_ms = 10\n");
    mock.push_all([
        MockResponse::error(500, "upstream exploded"),
        MockResponse::text("recovered"),
    ]);
    let run = sb.exec(&mock, &["--json", "hi"]).await;
    run.assert_ok();
    let events = run.events();
    assert_eq!(of_type(&events, "retrying").len(), 1);
    assert_eq!(mock.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn rate_limit_honours_retry_after() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config("[provider]\nretry_base_ms = 10\n");
    mock.push_all([
        MockResponse::error(429, "slow down").with_retry_after(1),
        MockResponse::text("after the wait"),
    ]);
    let run = sb.exec(&mock, &["hi"]).await;
    run.assert_ok();
    assert_eq!(run.stdout.trim(), "after the wait");
    let reqs = mock.requests();
    let gap = reqs[1].received_at.duration_since(reqs[0].received_at);
    assert!(
        gap >= Duration::from_millis(950),
        "retried after only {gap:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn stream_cut_midway_is_retried_without_duplicate_text() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.workspace_config("[provider]\nretry_base_ms = 10\n");
    mock.push_all([
        MockResponse::text_deltas(["Par", "tial ", "answer"]).cut_after(2),
        MockResponse::text_deltas(["Full ", "answer"]),
    ]);
    let run = sb.exec(&mock, &["--json", "hi"]).await;
    run.assert_ok();
    let events = run.events();
    let assistant: Vec<&Value> = of_type(&events, "item_added")
        .into_iter()
        .filter(|e| e["item"]["kind"] == "assistant")
        .collect();
    assert_eq!(assistant.len(), 1);
    assert_eq!(assistant[0]["item"]["text"], "Full answer");
    // Beyond the retry budget it is a clear error and a non-zero exit.
    let sb = Sandbox::new();
    sb.workspace_config("[provider]\nretry_base_ms = 10\nmax_retries = 1\n");
    mock.push_all([
        MockResponse::text_deltas(["a", "b", "c"]).cut_after(1),
        MockResponse::text_deltas(["a", "b", "c"]).cut_after(1),
    ]);
    let run = sb.exec(&mock, &["hi"]).await;
    assert_eq!(run.code, 1, "stderr: {}", run.stderr);
    let last = run.stderr.lines().last().unwrap();
    assert!(
        last.starts_with("squad: ") && last.contains("broke"),
        "{last}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_arguments_and_unknown_tools_go_back_to_the_model() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.push_all([
        MockResponse::tool_call("bad", "read_file", r#"{"path": "a.txt""#),
        MockResponse::tool_call("nope", "launch_rockets", r#"{}"#),
        MockResponse::text("I will stop."),
    ]);
    let run = sb.exec(&mock, &["go"]).await;
    run.assert_ok();
    assert_eq!(run.stdout.trim(), "I will stop.");
    let reqs = mock.requests();
    let first = tool_messages(&reqs[1].body);
    assert_eq!(first[0].0, "bad");
    assert!(first[0].1.contains("not valid JSON"), "{}", first[0].1);
    assert!(
        first[0].1.contains(r#"{"path": "a.txt""#),
        "quotes what was sent: {}",
        first[0].1
    );
    let second = tool_messages(&reqs[2].body);
    assert!(
        second[1].1.contains("unknown tool `launch_rockets`"),
        "{}",
        second[1].1
    );
    assert!(
        second[1].1.contains("read_file"),
        "lists available tools: {}",
        second[1].1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn paths_outside_the_workspace_are_refused() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "top secret").unwrap();
    std::os::unix::fs::symlink(outside.path(), sb.ws().join("escape")).unwrap();
    mock.push_all([
        MockResponse::tool_call("p1", "read_file", r#"{"path":"../../etc/passwd"}"#),
        MockResponse::tool_call("p2", "read_file", r#"{"path":"escape/secret.txt"}"#),
        MockResponse::tool_call(
            "p3",
            "write_file",
            r#"{"path":"escape/new.txt","content":"x"}"#,
        ),
        MockResponse::text("done"),
    ]);
    let run = sb.exec(&mock, &["--approval", "auto", "look around"]).await;
    run.assert_ok();
    let reqs = mock.requests();
    let r1 = &tool_messages(&reqs[1].body)[0].1;
    assert!(r1.contains("outside the workspace"), "{r1}");
    assert!(!r1.contains("root:"), "leaked /etc/passwd: {r1}");
    let r2 = &tool_messages(&reqs[2].body)[1].1;
    assert!(!r2.contains("top secret"), "followed the symlink out: {r2}");
    assert!(r2.contains("outside the workspace"), "{r2}");
    let r3 = &tool_messages(&reqs[3].body)[2].1;
    assert!(r3.contains("outside the workspace"), "{r3}");
    assert!(!outside.path().join("new.txt").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn read_only_denies_writes_and_the_session_goes_on() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.push_all([
        MockResponse::tool_call(
            "w1",
            "write_file",
            r#"{"path":"new.txt","content":"hello"}"#,
        ),
        MockResponse::text("I could not write it."),
    ]);
    let run = sb
        .exec(
            &mock,
            &["--approval", "read-only", "--json", "write a file"],
        )
        .await;
    run.assert_ok();
    assert!(!sb.ws().join("new.txt").exists());
    let result = &tool_messages(&mock.requests()[1].body)[0].1;
    assert!(
        result.contains("denied") && result.contains("read-only"),
        "{result}"
    );
    let events = run.events();
    let ends = items_of_kind(&events, "tool_result");
    assert_eq!(ends[0]["is_error"], true);

    // `ask` cannot ask in exec: it denies too, and says how to allow it (a command outside
    // the sandbox; inside it, `ask` needs no prompt: tests/sandbox.rs).
    mock.push_all([
        MockResponse::tool_call("w2", "run_command", r#"{"command":"touch made.txt"}"#),
        MockResponse::text("ok"),
    ]);
    let run = sb
        .exec(
            &mock,
            &["--approval", "ask", "--sandbox", "off", "touch it"],
        )
        .await;
    // Nothing could change: the run says so (tests below).
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(!sb.ws().join("made.txt").exists());
    let result = &tool_messages(&mock.requests()[3].body)[0].1;
    assert!(result.contains("--approval auto"), "{result}");
}

#[tokio::test(flavor = "multi_thread")]
async fn resume_sends_the_whole_history_back() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("notes.txt", "remember me\n");
    mock.push_all([
        MockResponse::tool_call("n1", "read_file", r#"{"path":"notes.txt"}"#),
        MockResponse::text("The notes say: remember me"),
    ]);
    sb.exec(&mock, &["read my notes"]).await.assert_ok();

    let sessions = sb.run(None, &["sessions"]).await;
    sessions.assert_ok();
    assert!(
        sessions.stdout.contains("read my notes"),
        "{}",
        sessions.stdout
    );

    mock.push(MockResponse::text("Updated."));
    sb.exec(&mock, &["--resume", "last", "and now update the README"])
        .await
        .assert_ok();
    let body = &mock.requests()[2].body;
    let t = transcript(body);
    let roles: Vec<&str> = t.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "assistant", "user"]
    );
    assert_eq!(t[1].1, "read my notes");
    assert!(t[3].1.contains("remember me"));
    assert_eq!(t[4].1, "The notes say: remember me");
    assert_eq!(t[5].1, "and now update the README");
    assert_eq!(body["messages"][2]["tool_calls"][0]["id"], "n1");
}

#[tokio::test(flavor = "multi_thread")]
async fn clear_errors_for_bad_setup() {
    let sb = Sandbox::new();
    // Nothing listens on this port.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut cmd = sb.command(None);
    cmd.env("OPENAI_BASE_URL", format!("http://127.0.0.1:{port}/v1"))
        .args(["exec", "hi"]);
    sb.workspace_config("[provider]\nretry_base_ms = 10\nmax_retries = 1\n");
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot reach the model server"), "{err}");

    let run = sb
        .run(None, &["exec", "--approval", "sometimes", "hi"])
        .await;
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("ask, auto or read-only"),
        "{}",
        run.stderr
    );

    let run = sb.run(None, &["exec", "--role", "wizard", "hi"]).await;
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("copilot"),
        "lists known roles: {}",
        run.stderr
    );

    sb.workspace_config("[limits]\nmax_depth = \"three\"\n");
    let run = sb.run(None, &["exec", "hi"]).await;
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("max_depth") && run.stderr.contains("config.toml"),
        "{}",
        run.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn roles_lists_builtins_and_workspace_overrides() {
    let sb = Sandbox::new();
    sb.write(
        ".squad/roles/tester.toml",
        "name = \"tester\"\ndescription = \"our own tester\"\nsystem_prompt = \"test things\"\n",
    );
    let run = sb.run(None, &["roles"]).await;
    run.assert_ok();
    for name in [
        "copilot",
        "architect",
        "implementer",
        "documentation",
        "code_reviewer",
    ] {
        assert!(run.stdout.contains(name), "{name} missing:\n{}", run.stdout);
    }
    let tester = run
        .stdout
        .lines()
        .find(|l| l.starts_with("tester"))
        .unwrap();
    assert!(
        tester.contains("our own tester") && tester.contains(".squad/roles/tester.toml"),
        "{tester}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn roles_warns_about_a_role_file_naming_an_unknown_tool() {
    let sb = Sandbox::new();
    sb.write(
        ".squad/roles/rocketeer.toml",
        "name = \"rocketeer\"\nsystem_prompt = \"launch\"\ntools = [\"read_file\", \"launch_rockets\"]\n",
    );
    let run = sb.run(None, &["roles"]).await;
    run.assert_ok();
    assert!(
        run.stderr.contains("warning: role file")
            && run
                .stderr
                .contains("rocketeer.toml: tools: unknown tool 'launch_rockets'"),
        "{}",
        run.stderr
    );
    assert!(
        run.stdout.lines().any(|l| l.starts_with("rocketeer")),
        "{}",
        run.stdout
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_mid_call_loses_nothing_and_the_session_resumes() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.push_all([
        MockResponse::text_and_tool_calls(
            "Running the slow step.",
            vec![MockToolCall::new(
                "slow",
                "run_command",
                r#"{"command":"sleep 30"}"#,
            )],
        ),
        MockResponse::text("Picked up where we left off."),
    ]);
    let mut cmd = sb.command(Some(&mock));
    cmd.args(["exec", "--approval", "auto", "do the slow thing"]);
    let mut child = cmd.spawn().unwrap();
    // Wait until the call is in the session log (the assistant item naming it), then kill
    // squad hard: the call is running or about to.
    let sessions = sb.data_dir().join("sessions");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let running = std::fs::read_dir(&sessions)
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| e.ok())
            .and_then(|e| std::fs::read_to_string(e.path()).ok())
            .is_some_and(|log| log.contains(r#""id":"slow""#));
        if running {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the tool call never started"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    child.start_kill().unwrap();
    child.wait().await.unwrap();

    sb.exec(&mock, &["--resume", "last", "continue"])
        .await
        .assert_ok();
    let body = &mock.requests()[1].body;
    let t = transcript(body);
    assert_eq!(t[1].1, "do the slow thing");
    assert_eq!(t[2].1, "Running the slow step.");
    let results = tool_messages(body);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].0, "slow");
    assert!(
        results[0].1.contains("killed (a crash)"),
        "{}",
        results[0].1
    );
    assert_eq!(t.last().unwrap().1, "continue");
}

/// The exit codes docs/usage.md documents: 0 done, 1 the model or a tool failed the run,
/// 2 usage or config error, 130 / 143 interrupted by SIGINT / SIGTERM (3, nothing could
/// change, and 4, a refused rewind: their own tests, below and in tests/rewind.rs).
#[tokio::test(flavor = "multi_thread")]
async fn exit_codes_are_as_documented() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();

    mock.push(MockResponse::text("done"));
    assert_eq!(sb.exec(&mock, &["hi"]).await.code, 0);

    mock.push(MockResponse::error(400, "bad request"));
    let run = sb.exec(&mock, &["hi"]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("bad request"), "{}", run.stderr);

    assert_eq!(sb.exec(&mock, &["--no-such-flag", "hi"]).await.code, 2);
    assert_eq!(sb.run(Some(&mock), &["exec"]).await.code, 2);
    sb.workspace_config("approval = \"sometimes\"\n");
    assert_eq!(sb.exec(&mock, &["hi"]).await.code, 2);
    sb.workspace_config("");
    assert_eq!(mock.requests().len(), 2, "usage errors send nothing");

    for (signal, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        mock.push(MockResponse::text("too late").with_delay(Duration::from_secs(30)));
        let before = mock.requests().len();
        let mut cmd = sb.command(Some(&mock));
        cmd.args(["exec", "take your time"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let child = cmd.spawn().unwrap();
        assert!(
            mock.wait_for_requests(before + 1, Duration::from_secs(20))
                .await
        );
        let pid = child.id().unwrap() as libc::pid_t;
        // SAFETY: sends a signal to the child this test started and still owns.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
        let out = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
            .await
            .expect("squad stops after the signal")
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(code),
            "signal {signal}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Text mode shows the task board on stderr: one compact block per burst of changes (a
/// plan of two tasks is one block), with the counts and each changed task.
#[tokio::test(flavor = "multi_thread")]
async fn the_task_board_is_printed_once_per_change() {
    use common::agents::{good_result, is_worker, tool_count};
    use serde_json::json;
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    let spawn_for = |task: &str| {
        MockResponse::tool_call(
            "s",
            "spawn_agent",
            &json!({"role_name": "agentic_coder", "task_prompt": format!("do {task}"), "task_id": task})
                .to_string(),
        )
    };
    mock.set_responder(move |body| {
        if is_worker(body) {
            return MockResponse::tool_call(
                "r",
                "return_results",
                &good_result("parsed").to_string(),
            );
        }
        match tool_count(body) {
            0 => MockResponse::tool_call(
                "p",
                "plan_tasks",
                &json!({"tasks": [
                    {"id": "T1", "title": "write the parser"},
                    {"id": "T2", "title": "test the parser", "depends_on": ["T1"]}
                ]})
                .to_string(),
            ),
            1 => spawn_for("T1"),
            3 => spawn_for("T2"),
            2 | 4 => MockResponse::tool_call("w", "wait_for_agents", "{}"),
            _ => MockResponse::text("both done"),
        }
    });
    let run = sb
        .exec(&mock, &["--approval", "auto", "plan and run"])
        .await;
    run.assert_ok();
    assert_eq!(run.stdout.trim(), "both done");
    let lines: Vec<&str> = run.stderr.lines().collect();
    // Each block: the counts, then the tasks that changed, in order.
    let block = |summary: &str| -> Vec<&str> {
        let at = lines
            .iter()
            .position(|l| *l == summary)
            .unwrap_or_else(|| panic!("no {summary:?} in:\n{}", run.stderr));
        lines[at + 1..]
            .iter()
            .take_while(|l| l.starts_with("  "))
            .copied()
            .collect()
    };
    assert_eq!(
        block("▤ tasks: 1 ready · 1 pending"),
        [
            "  ▷ T1 ready: write the parser",
            "  ○ T2 pending: test the parser · needs T1 ▷"
        ]
    );
    let running = block("▤ tasks: 1 running · 1 pending");
    assert_eq!(running.len(), 1, "{running:?}");
    assert!(
        running[0].starts_with("  ● T1 running: write the parser (agentic_coder "),
        "{running:?}"
    );
    let t1_done = block("▤ tasks: 1 ready · 1 done");
    assert!(t1_done[0].starts_with("  ✓ T1 done: write the parser (agentic_coder "));
    assert_eq!(t1_done[1], "  ▷ T2 ready: test the parser");
    assert_eq!(block("▤ tasks: 1 running · 1 done").len(), 1);
    let all_done = block("▤ tasks: 2 done");
    assert!(all_done[0].starts_with("  ✓ T2 done: test the parser"));
    // Five changes of the board, five blocks: never one per event.
    let blocks = lines.iter().filter(|l| l.starts_with("▤ ")).count();
    assert_eq!(blocks, 5, "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn ask_user_in_exec_says_nobody_can_answer_and_shows_the_question() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    let ask = serde_json::json!({
        "question": "Which database should the cache use?",
        "options": ["Postgres", "SQLite"]
    })
    .to_string();
    mock.push_all([
        MockResponse::tool_call("q1", "ask_user", &ask),
        MockResponse::text("Assuming SQLite: it needs no server."),
    ]);
    let run = sb.exec(&mock, &["--json", "add a cache"]).await;
    run.assert_ok();
    let events = run.events();
    let asked = of_type(&events, "question_asked");
    assert_eq!(asked.len(), 1, "{}", run.stdout);
    assert_eq!(asked[0]["question"], "Which database should the cache use?");
    assert_eq!(
        asked[0]["options"],
        serde_json::json!(["Postgres", "SQLite"])
    );
    assert_eq!(asked[0]["role"], "copilot");
    assert!(asked[0]["agent_id"].is_string());
    let answered = of_type(&events, "question_answered");
    assert_eq!(answered.len(), 1);
    assert_eq!(answered[0]["request_id"], asked[0]["request_id"]);
    assert_eq!(answered[0]["declined"], "no_user");
    assert!(answered[0].get("answer").is_none());
    // The model's next request carries the no-user result.
    let results = tool_messages(&mock.requests()[1].body);
    assert_eq!(results[0].0, "q1");
    assert!(
        results[0].1.contains("Nobody can answer")
            && results[0].1.contains("best judgment")
            && results[0].1.contains("assumption"),
        "{}",
        results[0].1
    );

    // Text mode: a progress line with the question and its options.
    mock.push_all([
        MockResponse::tool_call("q2", "ask_user", &ask),
        MockResponse::text("Assuming SQLite."),
    ]);
    let run = sb.exec(&mock, &["add a cache"]).await;
    run.assert_ok();
    assert_eq!(run.stdout.trim(), "Assuming SQLite.");
    assert!(
        run.stderr.contains(
            "? [copilot] asks the user: Which database should the cache use? [1 Postgres · 2 SQLite]"
        ),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("nobody can answer here"),
        "{}",
        run.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_error_names_its_cause_once() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    let run = sb.exec(&mock, &["--resume", "nope", "hi"]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    let line = run.stderr.lines().last().unwrap();
    assert!(line.starts_with("squad: no session 'nope' in "), "{line}");
    assert_eq!(line.matches("no session 'nope'").count(), 1, "{line}");

    // An error that says its source in its own words and also chains it.
    let mut cmd = sb.command(Some(&mock));
    cmd.env("SQUAD_DATA_DIR", "/proc/squad-test-nowhere")
        .args(["exec", "hi"]);
    let run = Run::from(cmd.output().await.unwrap());
    let line = run.stderr.lines().last().unwrap();
    assert!(line.contains("cannot open the session log"), "{line}");
    assert_eq!(line.matches("os error").count(), 1, "{line}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_start_warning_is_squads_and_names_the_misplaced_agent_file() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write(
        ".squad/roles/reviewer.md",
        "---\nname: reviewer\ndescription: reviews\n---\nReview the code.\n",
    );
    mock.push(MockResponse::text("hi"));
    let run = sb.exec(&mock, &["hello"]).await;
    run.assert_ok();
    let line = run
        .stderr
        .lines()
        .find(|l| l.contains("reviewer.md"))
        .unwrap_or_else(|| panic!("no warning: {}", run.stderr));
    assert!(
        line.starts_with("! [squad] ")
            && line.contains("looks like an agent file")
            && line.contains(".claude/agents/"),
        "{line}"
    );
}

/// `exec` cannot ask: under `ask` (the default) every write is refused. A run whose every
/// change was refused ends with how many and how to allow them, and exits 3, not 0; its
/// answer is still printed. The same with `--json`, whose events carry each refusal.
#[tokio::test(flavor = "multi_thread")]
async fn a_run_whose_every_change_was_refused_says_so_and_exits_3() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    sb.write("README.md", "Helo\n");
    mock.push_all([
        MockResponse::tool_call(
            "e1",
            "edit_file",
            r#"{"path":"README.md","old_text":"Helo","new_text":"Hello"}"#,
        ),
        MockResponse::tool_call(
            "e2",
            "write_file",
            r#"{"path":"README.md","content":"Hello\n"}"#,
        ),
        MockResponse::text("I could not edit README.md: the edit was denied."),
    ]);
    let run = sb.exec(&mock, &["fix the typo in README.md"]).await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert_eq!(sb.read("README.md"), "Helo\n");
    assert_eq!(
        run.stdout.trim(),
        "I could not edit README.md: the edit was denied."
    );
    let lines: Vec<&str> = run.stderr.lines().collect();
    let n = lines.len();
    assert!(n >= 2, "{}", run.stderr);
    assert!(
        lines[n - 2].starts_with("! 2 calls were refused (edit_file, write_file)")
            && lines[n - 2].contains("exec cannot ask")
            && lines[n - 2].contains("--approval auto"),
        "{}",
        run.stderr
    );
    assert!(
        lines[n - 1].starts_with("squad: nothing changed"),
        "{}",
        run.stderr
    );
    // The per-agent table came before them: the refusals are the run's last word.
    let table = lines.iter().position(|l| l.starts_with("agent ")).unwrap();
    assert!(table < n - 2, "{}", run.stderr);

    mock.push_all([
        MockResponse::tool_call(
            "e3",
            "write_file",
            r#"{"path":"README.md","content":"Hello\n"}"#,
        ),
        MockResponse::text("Denied."),
    ]);
    let run = sb.exec(&mock, &["--json", "fix it"]).await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    let events = run.events();
    let refused = of_type(&events, "approval_unanswered");
    assert_eq!(refused.len(), 1, "{}", run.stdout);
    assert_eq!(refused[0]["tool"], "write_file");
    assert_eq!(refused[0]["why"], "policy");
    assert!(
        run.stderr.contains("! 1 call was refused (write_file)"),
        "{}",
        run.stderr
    );

    // With --approval auto the same run changes the file and exits 0, with no such line.
    mock.push_all([
        MockResponse::tool_call(
            "e4",
            "write_file",
            r#"{"path":"README.md","content":"Hello\n"}"#,
        ),
        MockResponse::text("Fixed."),
    ]);
    let run = sb.exec(&mock, &["--approval", "auto", "fix it"]).await;
    run.assert_ok();
    assert_eq!(sb.read("README.md"), "Hello\n");
    assert!(!run.stderr.contains("refused"), "{}", run.stderr);
}

/// Some changes went through (a command in the sandbox, which `ask` lets run), one was
/// refused: exit 0, and the last line still says what was refused and how to allow it.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread")]
async fn a_run_with_some_changes_refused_exits_0_and_names_them_last() {
    let mock = MockServer::start().await;
    let sb = Sandbox::new();
    mock.push_all([
        MockResponse::tool_call("w1", "write_file", r#"{"path":"a.txt","content":"a\n"}"#),
        MockResponse::tool_call("c1", "run_command", r#"{"command":"echo b > b.txt"}"#),
        MockResponse::text("Wrote b.txt; a.txt was denied."),
    ]);
    let run = sb.exec(&mock, &["write two files"]).await;
    run.assert_ok();
    assert!(!sb.ws().join("a.txt").exists());
    assert_eq!(sb.read("b.txt"), "b\n");
    let last = run.stderr.lines().last().unwrap();
    assert!(
        last.starts_with("! 1 call was refused (write_file)") && last.contains("--approval auto"),
        "{}",
        run.stderr
    );
}
